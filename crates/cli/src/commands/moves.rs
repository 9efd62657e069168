//! `snap undo`, `snap rewind` and `snap redo`: move along the undo chain.

use crate::ctx::{Ctx, emit, json_only};
use crate::json;
use crate::open::open;
use crate::render::print_move;
use anyhow::{Result, bail};
use snap_tree::Run;

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

#[derive(Debug, clap::Args)]
pub struct MoveArgs {
    /// How many snapshots (with --turn: agent turns) to move.
    #[arg(default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub n: u64,
    /// Whole agent turns, as `snap hook` recorded them: undo goes back to the start of the
    /// Nth last turn of HEAD's session (hand edits made before it kept); redo brings back
    /// the N turns an undo passed.
    #[arg(long, conflicts_with = "to")]
    pub turn: bool,
    /// Undo back to this snapshot, one of HEAD's ancestors, as an undo of that many steps
    /// (redo brings them back): @~N, #SEQ, step:N or an id prefix.
    #[arg(long, value_name = "REF")]
    pub to: Option<String>,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}
