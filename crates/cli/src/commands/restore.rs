//! `snap restore REF [-- PATHS]`: match a snapshot, recorded as a new snapshot.

use super::{Ctx, PathBuf, Result, Run, emit, json, json_only, open, print_move, workspace_paths};

pub(crate) fn cmd_restore(
    ctx: &Ctx,
    reference: &str,
    paths: &[PathBuf],
    dry_run: bool,
) -> Result<()> {
    let ws = open(ctx)?;
    let rel = workspace_paths(&ws, &ctx.start, paths)?;
    let out = ws.restore(reference, &rel, Run::dry_run_if(dry_run))?;
    emit(
        ctx,
        json_only(ctx, || json::value(&json::MoveDoc::from(&out))),
        || print_move(&out, ctx.quiet),
    );
    Ok(())
}
