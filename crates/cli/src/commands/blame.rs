//! `snap blame FILE [REF]`: each line of a file with the snapshot that brought it, and that
//! snapshot's session, step, tool and agent.

use super::{Ctx, Path, Result, emit, json, open_reading, path_str, text_shown, workspace_paths};

pub(crate) fn cmd_blame(ctx: &Ctx, path: &Path, reference: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let at = ws.resolve(reference)?;
    let rel = workspace_paths(&ws, &ctx.start, &[path.to_path_buf()])?.remove(0);
    let lines = ws.blame(&at, &rel)?;
    let doc = json::BlameDoc {
        path: path_str(&rel),
        snapshot: at.id.to_hex(),
        lines: (lines.iter().enumerate())
            .map(|(i, l)| json::BlameLineDoc::of(i + 1, l))
            .collect(),
    };
    emit(ctx, json::value(&doc), || {
        for line in &doc.lines {
            println!(
                "{} #{:<4} {:<8} {:<10} {:>5}| {}",
                &line.id[..8],
                line.seq,
                text_shown(
                    &line
                        .session
                        .as_deref()
                        .map_or("-".into(), crate::render::session_short)
                ),
                text_shown(line.tool.as_deref().unwrap_or("-")),
                line.line,
                text_shown(&line.text),
            );
        }
    });
    Ok(())
}
