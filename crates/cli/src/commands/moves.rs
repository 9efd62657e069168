//! `snap undo`, `snap rewind` and `snap redo`: move along the undo chain.

use super::*;

pub(crate) fn cmd_move(ctx: &Ctx, args: MoveArgs, redo: bool) -> Result<()> {
    let ws = open(ctx)?;
    let out = if redo {
        ws.redo(args.n, Run::dry_run_if(args.dry_run))?
    } else {
        ws.undo(args.n, Run::dry_run_if(args.dry_run))?
    };
    emit(
        ctx,
        json_only(ctx, || json::value(&json::MoveDoc::from(&out))),
        || print_move(&out, ctx.quiet),
    );
    Ok(())
}
