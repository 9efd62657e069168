//! `snap show REF`: one snapshot and its changed files.

use super::{Ctx, Result, emit, json, open_reading, print_changes, snapshot_line, text_shown};

pub(crate) fn cmd_show(ctx: &Ctx, reference: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let changes = ws.changes_of(&snap)?;
    let value = json::value(&json::ShowDoc {
        snapshot: json::SnapshotDoc::from(&snap),
        changes: json::changes(&changes),
    });
    emit(ctx, value, || {
        println!("{}", snapshot_line(&snap));
        println!("id      {}", snap.id);
        if let Some(p) = snap.record.parent {
            println!("parent  {p}");
        }
        for (k, v) in &snap.record.meta {
            println!("meta    {}={}", text_shown(k), text_shown(v));
        }
        print_changes(&changes);
    });
    Ok(())
}
