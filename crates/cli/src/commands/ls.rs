//! `snap ls REF [-- PATHS]`: the paths in a snapshot.

use super::workspace_paths;
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;
use crate::render::{kind_str, path_shown, path_str};
use anyhow::Result;
use std::path::PathBuf;

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

/// `snap ls`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// Snapshot reference (default @).
    pub(crate) reference: Option<String>,
    /// Only these paths.
    #[arg(last = true)]
    pub(crate) paths: Vec<PathBuf>,
}

/// Runs `snap ls`.
pub(crate) fn run(ctx: &Ctx, args: LsArgs) -> Result<()> {
    cmd_ls(ctx, args.reference.as_deref().unwrap_or("@"), &args.paths)
}
