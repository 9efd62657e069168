//! `snap blame FILE [REF]`: each line of a file with the snapshot that brought it, and that
//! snapshot's session, step, tool and agent.

use super::workspace_paths;
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;
use crate::render::{path_str, text_shown};
use anyhow::Result;
use std::path::Path;
use std::path::PathBuf;

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
                text_shown(&by_whom(line)),
                line.line,
                text_shown(&line.text),
            );
        }
    });
    Ok(())
}

/// `snap blame`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct BlameArgs {
    /// The file.
    pub(crate) path: PathBuf,
    /// The snapshot whose version is blamed: @, @~N, last, #SEQ, step:N or an id prefix.
    #[arg(default_value = "@")]
    pub(crate) reference: String,
}

/// The tool that brought a line, and the subagent that ran it when a subagent did
/// (`Edit/a1b2`).
fn by_whom(line: &json::BlameLineDoc) -> String {
    let tool = line.tool.as_deref().unwrap_or("-");
    match &line.agent_id {
        Some(agent) => format!("{tool}/{agent}"),
        None => tool.to_string(),
    }
}

/// Runs `snap blame`.
pub(crate) fn run(ctx: &Ctx, args: BlameArgs) -> Result<()> {
    cmd_blame(ctx, &args.path, &args.reference)
}
