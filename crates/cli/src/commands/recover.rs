//! `snap recover`: finish an interrupted undo, redo or restore.

use crate::ctx::{Ctx, emit};
use crate::json;
use crate::render::{print_kept, recovered_line};
use anyhow::{Result, bail};
use snap_tree::Workspace;

pub(crate) fn cmd_recover(ctx: &Ctx) -> Result<()> {
    let ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    let done: Vec<json::RecoveredDoc> = ws.recovered().iter().map(Into::into).collect();
    let count = done.len();
    emit(
        ctx,
        json::value(&json::RecoverDoc { recovered: done }),
        || {
            if ws.recovered().is_empty() && !ctx.quiet {
                println!("nothing to recover");
            }
            for r in ws.recovered() {
                if !ctx.quiet {
                    println!("{}", recovered_line(r));
                }
                // Kept paths are never silent.
                print_kept(r.op.as_str(), &r.kept);
                crate::render::print_saved_first(r);
            }
        },
    );
    if count > 1 {
        bail!("more than one interrupted operation was found; check `snap status`");
    }
    Ok(())
}

/// `snap recover` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct RecoverArgs {}

/// Runs `snap recover`.
pub(crate) fn run(ctx: &Ctx, _args: RecoverArgs) -> Result<()> {
    cmd_recover(ctx)
}
