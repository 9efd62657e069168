//! `snap cat REF PATH`: one file's bytes from a snapshot.

use std::io::Write;
use std::path::PathBuf;

use super::workspace_paths;
use crate::ctx::Ctx;
use crate::json;
use crate::open::open_reading;
use crate::render::{path_shown, path_str};
use anyhow::{Context, Result, bail};
use std::path::Path;

pub(crate) fn cmd_cat(ctx: &Ctx, reference: &str, path: &Path) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let rel = workspace_paths(&ws, &ctx.start, &[path.to_path_buf()])?.remove(0);
    // Plain output streams the file chunk by chunk; only `--json` holds it whole.
    let read = match ctx.json {
        true => ws.read_file(&snap, &rel).map(Content::Whole),
        false => ws.file_chunks(&snap, &rel).map(|(_, c)| Content::Chunks(c)),
    };
    let content = match read {
        Ok(content) => content,
        Err(e) => {
            // The root is no entry of its tree, and is a directory in every snapshot.
            let is_dir = rel.is_empty()
                || ws
                    .entry_of(&snap, &rel)?
                    .is_some_and(|n| n.kind == snap_tree::EntryKind::Dir);
            if is_dir {
                let shown = if rel.is_empty() {
                    ".".into()
                } else {
                    path_shown(&rel)
                };
                bail!(
                    "{shown} is a directory in #{}: `snap ls {reference} -- {shown}` lists it",
                    snap.record.seq,
                );
            }
            return Err(e.into());
        }
    };
    let content = match content {
        Content::Chunks(chunks) => return write_chunks(chunks),
        Content::Whole(content) => content,
    };
    if ctx.json {
        let text = String::from_utf8(content.clone()).ok();
        let doc = json::CatDoc {
            path: path_str(&rel),
            size: content.len(),
            binary: text.is_none(),
            content: text,
        };
        println!("{}", json::value(&doc));
        return Ok(());
    }
    std::io::stdout()
        .write_all(&content)
        .context("writing to stdout")?;
    Ok(())
}

/// What `cat` reads: the whole file (for `--json`), or its chunks one at a time.
enum Content<'s> {
    Whole(Vec<u8>),
    Chunks(snap_tree::FileChunks<'s>),
}

fn write_chunks(chunks: snap_tree::FileChunks<'_>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for chunk in chunks {
        out.write_all(&chunk?).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(())
}

/// `snap cat`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CatArgs {
    /// Snapshot reference.
    pub(crate) reference: String,
    /// Path in the snapshot.
    pub(crate) path: PathBuf,
}

/// Runs `snap cat`.
pub(crate) fn run(ctx: &Ctx, args: CatArgs) -> Result<()> {
    cmd_cat(ctx, &args.reference, &args.path)
}
