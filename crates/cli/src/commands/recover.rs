//! `snap recover`: finish an interrupted undo, redo or restore.

use super::{Ctx, Result, Workspace, bail, emit, json, print_kept, recovered_line};

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
