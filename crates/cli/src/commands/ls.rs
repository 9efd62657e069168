//! `snap ls REF [-- PATHS]`: the paths in a snapshot.

use super::{
    Ctx, PathBuf, Result, emit, json, kind_str, open_reading, path_shown, path_str, workspace_paths,
};

pub(crate) fn cmd_ls(ctx: &Ctx, reference: &str, paths: &[PathBuf]) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let filter = workspace_paths(&ws, &ctx.start, paths)?;
    let files: Vec<_> = ws.files_under(&snap, &filter)?.into_iter().collect();
    let entries = files.iter().map(|(p, n)| json::LsEntryDoc {
        path: path_str(p),
        kind: kind_str(n.kind),
        size: n.size,
        id: n.id.to_hex(),
    });
    let doc = json::LsDoc {
        snapshot: snap.id.to_hex(),
        seq: snap.record.seq,
        entries: entries.collect(),
    };
    emit(ctx, json::value(&doc), || {
        for (p, n) in &files {
            println!(
                "{:<7} {:>10}  {}  {}",
                kind_str(n.kind),
                n.size,
                n.id.short(),
                path_shown(p)
            );
        }
    });
    Ok(())
}
