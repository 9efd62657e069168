//! `snap recover`: finish an interrupted undo, redo or restore.

use super::*;

pub(crate) fn cmd_recover(ctx: &Ctx) -> Result<()> {
    let ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    let done: Vec<Value> = ws
        .recovered()
        .iter()
        .map(|r| {
            let kept: Vec<String> = r.kept.iter().map(|p| path_str(p)).collect();
            json!({"op": r.op.as_str(), "head": r.head.id.to_hex(), "paths_touched": r.paths_touched, "kept": kept})
        })
        .collect();
    emit(ctx, json!({"recovered": done}), || {
        if ws.recovered().is_empty() {
            println!("nothing to recover");
        }
        for r in ws.recovered() {
            println!(
                "finished an interrupted {}: HEAD is #{} ({} paths touched)",
                r.op.as_str(),
                r.head.record.seq,
                r.paths_touched
            );
            print_kept(r.op.as_str(), &r.kept);
        }
    });
    if done.len() > 1 {
        bail!("more than one interrupted operation was found; check `snap status`");
    }
    Ok(())
}
