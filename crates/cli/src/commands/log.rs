//! `snap log`: the history, newest first, with filters (`-- PATHS` among them), `--oneline`
//! and `--stats`; a turn's autosaves are folded into the line above them unless `-v` or
//! `--all` asks for each (`--json` lists every snapshot).

use super::lifecycle;
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;
use crate::render::Colour;
use crate::render::{log_line, oneline};
use anyhow::Result;

pub(crate) fn cmd_log(ctx: &Ctx, f: LogArgs) -> Result<()> {
    let ws = open_reading(ctx)?;
    let since_ns = f.since.and_then(|s| s.0);
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let log = match f.paths.is_empty() {
        true => ws.log(f.all)?,
        false => ws.log_touching(f.all, &super::workspace_paths(&ws, &ctx.start, &f.paths)?)?,
    };
    // A short id (`--oneline`, `blame`, the UI) names the session it begins.
    let session = match &f.session {
        Some(given) => Some(ws.history()?.resolve_session(given)?),
        None => None,
    };
    let entries: Vec<_> = log
        .into_iter()
        .filter(|e| since_ns.is_none_or(|d| e.snapshot.record.time_ns >= now_ns - d))
        .filter(|e| f.step.is_none_or(|s| e.snapshot.record.step == Some(s)))
        .filter(|e| {
            session
                .as_ref()
                .is_none_or(|s| e.snapshot.record.session.as_ref() == Some(s))
        })
        .filter(|e| (f.agent.as_deref()).is_none_or(|a| e.snapshot.agent() == Some(a)))
        .take(f.max_count.unwrap_or(usize::MAX))
        .collect();
    let head = ws.head()?;
    // Filters that select nothing are not an empty history.
    let filtered = f.since.is_some()
        || f.step.is_some()
        || f.session.is_some()
        || f.agent.is_some()
        || f.max_count.is_some()
        || !f.paths.is_empty();
    let none_match =
        entries.is_empty() && filtered && (head.is_some() || !ws.log(true)?.is_empty());
    let stats = if f.stats { Some(ws.stats()?) } else { None };
    // Paths only, each distinct tree once: no file is read.
    let secrets = match f.stats {
        true => ws.secrets(snap_tree::secrets::SecretScan::Paths)?,
        false => Vec::new(),
    };
    let large = match f.stats {
        true => ws.large_cost()?,
        false => snap_tree::LargeCost::default(),
    };
    let view = stats.as_ref().map(|store| lifecycle::StatsView {
        store,
        large,
        large_threshold: ws.config().large_file_size,
        secrets: &secrets,
    });
    let pulled = match f.all && f.paths.is_empty() {
        true => ws.pulled()?,
        false => Vec::new(),
    };
    let value = json::value(&json::LogDoc {
        head: head.as_ref().map(json::SnapshotDoc::from),
        snapshots: entries.iter().map(json::LogEntryDoc::from).collect(),
        stats: view.as_ref().map(lifecycle::stats_json),
        pulled: pulled.iter().map(json::PulledDoc::new).collect(),
    });
    let renamed = match ctx.json || f.oneline {
        true => Default::default(),
        false => renamed_counts(&ws, &entries)?,
    };
    emit(ctx, value, || {
        if let Some(v) = &view {
            lifecycle::print_stats(v);
        }
        match (entries.is_empty(), none_match) {
            (true, true) => println!("no snapshot matches"),
            (true, false) => println!("no snapshots yet"),
            _ => {}
        }
        let colour = Colour::of_stdout();
        let autosaves = match f.all || f.verbose {
            true => snap_tree::Autosaves::Shown,
            false => snap_tree::Autosaves::Folded,
        };
        for row in snap_tree::fold_autosaves(&entries, autosaves) {
            let e = &entries[row.at];
            let line = match f.oneline {
                true => oneline(e, colour),
                false => log_line(e, colour, renamed.get(&e.snapshot.id).copied()),
            };
            match row.autosaves {
                0 => println!("{line}"),
                1 => println!("{line} (+1 autosave)"),
                n => println!("{line} (+{n} autosaves)"),
            }
        }
        print_pulled(&pulled);
    });
    Ok(())
}

/// How many files each entry moved (exact renames), for those that both added and deleted
/// files: only they can have moved one, and only their trees are read.
fn renamed_counts(
    ws: &snap_tree::ReadOnlyWorkspace,
    entries: &[snap_tree::LogEntry],
) -> Result<std::collections::HashMap<snap_tree::ObjectId, u64>> {
    let mut counts = std::collections::HashMap::new();
    for e in entries {
        let stats = &e.snapshot.record.stats;
        if stats.added == 0 || stats.deleted == 0 {
            continue;
        }
        let renames = ws.exact_renames_of(&e.snapshot)?;
        counts.insert(e.snapshot.id, renames.len() as u64);
    }
    Ok(counts)
}

/// The pulled snapshots, by remote (`log --all`): `REMOTE#N` and the snapshot's line.
fn print_pulled(pulled: &[snap_tree::Pulled]) {
    for p in pulled {
        let name = format!("{}#{}", p.remote, p.record.seq);
        let snapshot = snap_tree::Snapshot {
            id: p.id,
            record: p.record.clone(),
        };
        println!(
            "pulled {name:<12} {}",
            crate::render::snapshot_line(&snapshot)
        );
    }
}

/// `--since DUR`: nanoseconds back from now, `None` for "0" (no limit).
#[derive(Clone, Copy, Debug)]
pub struct Since(pub Option<i64>);

/// Parsed by clap, so a bad duration is a usage error (exit 2), as a bad number is.
fn parse_since(value: &str) -> Result<Since, String> {
    snap_tree::parse_duration(value).map(Since)
}

/// `snap log`'s filters.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// At most N rows.
    #[arg(short = 'n', long = "max-count")]
    pub max_count: Option<usize>,
    /// Include snapshots abandoned by a save after an undo.
    #[arg(long)]
    pub all: bool,
    /// Only snapshots saved with this step.
    #[arg(long)]
    pub step: Option<u64>,
    /// Only snapshots saved with this session, or with the one session it begins (the 8
    /// characters --oneline prints).
    #[arg(long)]
    pub session: Option<String>,
    /// Only snapshots an agent hook saved for this agent: a subagent's id (its payload's
    /// `agent_id`), or `main` for the session's root agent.
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Only snapshots younger than this (30m, 12h, 7d, 2w).
    #[arg(long, value_name = "DUR", value_parser = parse_since)]
    pub since: Option<Since>,
    /// Also show the store's size and what gc would reclaim.
    #[arg(long)]
    pub stats: bool,
    /// One short line a snapshot: short id, sequence, short session, message, tool.
    #[arg(long)]
    pub oneline: bool,
    /// Every autosave on a line of its own (else a turn's autosaves are folded into the
    /// line above them: "(+3 autosaves)").
    #[arg(short, long)]
    pub verbose: bool,
    /// Only snapshots that changed these paths (files or directories: anything under them).
    #[arg(last = true, value_name = "PATHS")]
    pub paths: Vec<std::path::PathBuf>,
}

/// Runs `snap log`.
pub(crate) fn run(ctx: &Ctx, args: LogArgs) -> Result<()> {
    cmd_log(ctx, args)
}
