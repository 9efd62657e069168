//! `snap show REF`: one snapshot and its changed files.

use super::{Ctx, Result, emit, json, open_reading, print_changes, snapshot_line, text_shown};

pub(crate) fn cmd_show(ctx: &Ctx, reference: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let first_kept = ws.parent_pruned(&snap)?;
    let changes = match first_kept {
        true => Vec::new(),
        false => ws.changes_of(&snap)?,
    };
    let value = json::value(&json::ShowDoc {
        snapshot: json::SnapshotDoc::from(&snap),
        changes: json::changes(&changes),
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
        for (k, v) in &snap.record.meta {
            println!("meta    {}={}", text_shown(k), text_shown(v));
        }
        print_changes(&changes);
    });
    Ok(())
}
