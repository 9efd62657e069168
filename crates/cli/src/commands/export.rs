//! `snap export REF DIR [-- PATHS]`: a snapshot written into another directory.

use super::{Ctx, Path, PathBuf, Result, emit_done, json, open_reading, workspace_paths};

pub(crate) fn cmd_export(ctx: &Ctx, reference: &str, dir: &Path, paths: &[PathBuf]) -> Result<()> {
    let ws = open_reading(ctx)?;
    let rel = workspace_paths(&ws, &ctx.start, paths)?;
    let out = ws.export(reference, &rel, &ctx.start.join(dir))?;
    let doc = json::ExportDoc {
        snapshot: out.snapshot.id.to_hex(),
        seq: out.snapshot.record.seq,
        dir: out.dir.display().to_string(),
        files: out.files,
    };
    emit_done(ctx, json::value(&doc), || {
        println!(
            "exported #{} ({} files) into {}",
            out.snapshot.record.seq,
            out.files,
            out.dir.display()
        );
    });
    Ok(())
}
