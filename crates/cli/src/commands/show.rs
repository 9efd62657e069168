//! `snap show REF`: one snapshot and its changed files.

use super::{Ctx, Result, emit, json, open_reading, snapshot_line, text_shown};
use crate::render::print_changes_renamed;

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
        for (k, v) in &snap.record.meta {
            println!("meta    {}={}", text_shown(k), text_shown(v));
        }
        print_changes_renamed(&changes, &renames);
    });
    Ok(())
}
