//! `snap init`: create the store, or claim one (`--force`).

use crate::ctx::{Ctx, emit_done};
use crate::json;
use anyhow::Result;
use snap_tree::Workspace;

pub(crate) fn cmd_init(ctx: &Ctx, force: bool) -> Result<()> {
    let wanted = ctx.store.clone().unwrap_or_else(|| ctx.start.join(".snap"));
    let existed = wanted.join("packs").is_dir();
    let ws = Workspace::init(&ctx.start, ctx.store.as_deref(), force)?;
    let store = ws.store_dir().display().to_string();
    emit_done(
        ctx,
        json::value(&json::InitDoc {
            root: ws.root().display().to_string(),
            store: store.clone(),
            workspace_id: ws.workspace_id()?,
            created: !existed,
        }),
        || {
            if existed {
                println!("a snap store already exists in {store}; nothing to do");
            } else {
                println!("initialized snap store in {store}");
            }
        },
    );
    Ok(())
}

/// `snap init`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// Allow a store in `/` or your home directory, and claim an external store recorded
    /// for another root (a workspace that moved).
    #[arg(long)]
    pub(crate) force: bool,
}

/// Runs `snap init`.
pub(crate) fn run(ctx: &Ctx, args: InitArgs) -> Result<()> {
    cmd_init(ctx, args.force)
}
