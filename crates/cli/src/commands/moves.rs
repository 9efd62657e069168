//! `snap undo`, `snap rewind` and `snap redo`: move along the undo chain.

use super::{Ctx, MoveArgs, Result, Run, bail, emit, json, json_only, open, print_move};

/// Which way a move goes along the undo chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Back: `snap undo`, `snap rewind`.
    Undo,
    /// Forward again: `snap redo`.
    Redo,
}

pub(crate) fn cmd_move(ctx: &Ctx, args: MoveArgs, way: Way) -> Result<()> {
    let ws = open(ctx)?;
    let redo = way == Way::Redo;
    let run = Run::dry_run_if(args.dry_run);
    if redo && args.to.is_some() {
        bail!("redo has no --to: `snap redo N` or `snap redo --turn`");
    }
    let out = if let Some(reference) = &args.to {
        ws.undo_to(&ws.resolve(reference)?.id, run)?
    } else if redo && args.turn {
        ws.redo(ws.turn_redo_count(args.n)?, run)?
    } else if redo {
        ws.redo(args.n, run)?
    } else if args.turn {
        ws.undo_to(&ws.turn_start(args.n)?, run)?
    } else {
        ws.undo(args.n, run)?
    };
    emit(
        ctx,
        json_only(ctx, || json::value(&json::MoveDoc::from(&out))),
        || print_move(&out, ctx.quiet),
    );
    Ok(())
}
