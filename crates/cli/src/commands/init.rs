//! `snap init`: create the store, or claim one (`--force`).

use super::{Ctx, Result, Workspace, emit_done, json};

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
