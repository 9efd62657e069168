//! `snap show REF`: one snapshot and its changed files.

use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;
use crate::render::print_changes_renamed;
use crate::render::{path_shown, path_str, snapshot_line, text_shown};
use anyhow::Result;
use snap_tree::PathChange;

pub(crate) fn cmd_show(ctx: &Ctx, reference: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let first_kept = ws.parent_pruned(&snap)?;
    let (changes, renames) = match first_kept {
        true => (Vec::new(), Vec::new()),
        false => ws.change_list_of(&snap)?,
    };
    let value = json::value(&json::ShowDoc {
        snapshot: json::SnapshotDoc::from(&snap),
        changes: json::changes_renamed(&changes, &renames),
        first_kept,
        attribution: snap.agent().map(|_| attribution(&snap, &changes)),
    });
    emit(ctx, value, || {
        println!("{}", snapshot_line(&snap));
        println!("id      {}", snap.id);
        match (snap.record.parent, first_kept) {
            (Some(p), true) => println!(
                "parent  {p} (pruned: this is the first snapshot kept, so what it changed is \
                 not known; snap ls lists its files)"
            ),
            (Some(p), false) => println!("parent  {p}"),
            (None, _) => {}
        }
        if let Some(session) = &snap.record.session {
            println!("session {}", text_shown(session));
        }
        if let Some(agent) = snap.agent() {
            match snap.agent_type() {
                Some(kind) => println!("agent   {} ({})", text_shown(agent), text_shown(kind)),
                None => println!("agent   {}", text_shown(agent)),
            }
        }
        if snap.agent().is_some() {
            for (path, change) in &changes {
                let by = snap.attribution(path);
                println!(
                    "by      {} {} ({})",
                    by.as_str(),
                    path_shown(path),
                    change.as_str()
                );
            }
        }
        for (k, v) in &snap.record.meta {
            println!("meta    {}={}", text_shown(k), text_shown(v));
        }
        print_changes_renamed(&changes, &renames);
    });
    Ok(())
}

/// `snap show`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// Snapshot reference.
    pub(crate) reference: String,
}

/// Runs `snap show`.
pub(crate) fn run(ctx: &Ctx, args: ShowArgs) -> Result<()> {
    cmd_show(ctx, &args.reference)
}

/// Who changed each of `changes` (see [`snap_tree::Snapshot::attribution`]).
fn attribution(snap: &snap_tree::Snapshot, changes: &[PathChange]) -> Vec<json::AttributionDoc> {
    (changes.iter())
        .map(|(path, _)| json::AttributionDoc {
            path: path_str(path),
            by: snap.attribution(path).as_str().to_string(),
        })
        .collect()
}
