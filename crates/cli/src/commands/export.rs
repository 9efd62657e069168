//! `snap export REF DIR [-- PATHS]`: a snapshot written into another directory.

use super::workspace_paths;
use crate::ctx::{Ctx, emit_done};
use crate::json;
use crate::open::open_reading;
use anyhow::Result;
use std::path::{Path, PathBuf};

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

/// `snap export`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ExportArgs {
    /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix.
    pub(crate) reference: String,
    /// An empty or absent directory outside the workspace. (Not named `dir`: that is the
    /// global `-C`'s id, and clap would give this value to it.)
    #[arg(value_name = "DIR")]
    pub(crate) into: PathBuf,
    /// Only these paths.
    #[arg(last = true)]
    pub(crate) paths: Vec<PathBuf>,
}

/// Runs `snap export`.
pub(crate) fn run(ctx: &Ctx, args: ExportArgs) -> Result<()> {
    cmd_export(ctx, &args.reference, &args.into, &args.paths)
}
