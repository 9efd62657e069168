//! `snap log`: the history, newest first, with filters (`-- PATHS` among them), `--oneline`
//! and `--stats`.

use super::{Ctx, LogArgs, Result, emit, json, lifecycle, log_line, oneline, open_reading};

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
    let entries: Vec<_> = log
        .into_iter()
        .filter(|e| since_ns.is_none_or(|d| e.snapshot.record.time_ns >= now_ns - d))
        .filter(|e| f.step.is_none_or(|s| e.snapshot.record.step == Some(s)))
        .filter(|e| {
            f.session
                .as_ref()
                .is_none_or(|s| e.snapshot.record.session.as_ref() == Some(s))
        })
        .take(f.max_count.unwrap_or(usize::MAX))
        .collect();
    let head = ws.head()?.map(|h| h.id.to_hex());
    // Filters that select nothing are not an empty history.
    let filtered = f.since.is_some()
        || f.step.is_some()
        || f.session.is_some()
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
        head,
        snapshots: entries.iter().map(json::LogEntryDoc::from).collect(),
        stats: view.as_ref().map(lifecycle::stats_json),
        pulled: pulled.iter().map(json::PulledDoc::new).collect(),
    });
    emit(ctx, value, || {
        if let Some(v) = &view {
            lifecycle::print_stats(v);
        }
        match (entries.is_empty(), none_match) {
            (true, true) => println!("no snapshot matches"),
            (true, false) => println!("no snapshots yet"),
            _ => {}
        }
        for e in &entries {
            match f.oneline {
                true => println!("{}", oneline(e)),
                false => println!("{}", log_line(e)),
            }
        }
        print_pulled(&pulled);
    });
    Ok(())
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
