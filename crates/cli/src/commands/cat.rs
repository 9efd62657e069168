//! `snap cat REF PATH`: one file's bytes from a snapshot.

use std::io::Write;

use super::{
    Context, Ctx, Path, Result, bail, json, open_reading, path_shown, path_str, workspace_paths,
};

pub(crate) fn cmd_cat(ctx: &Ctx, reference: &str, path: &Path) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let rel = workspace_paths(&ws, &ctx.start, &[path.to_path_buf()])?.remove(0);
    let content = match ws.read_file(&snap, &rel) {
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
