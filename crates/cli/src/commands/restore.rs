//! `snap restore REF [-- PATHS]`: match a snapshot, recorded as a new snapshot.

use super::workspace_paths;
use crate::ctx::{Ctx, emit, json_only};
use crate::json;
use crate::open::open;
use crate::render::print_move;
use anyhow::Result;
use snap_tree::Run;
use std::path::PathBuf;

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

/// `snap restore`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RestoreArgs {
    /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix.
    pub(crate) reference: String,
    /// Only these paths.
    #[arg(last = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Runs `snap restore`.
pub(crate) fn run(ctx: &Ctx, args: RestoreArgs) -> Result<()> {
    cmd_restore(ctx, &args.reference, &args.paths, args.dry_run)
}
