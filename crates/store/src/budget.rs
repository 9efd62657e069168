//! Retention by size: dropping the oldest snapshots until the store fits a byte budget.
//!
//! What a snapshot costs is only known once gc has run (its objects are shared with its
//! neighbours), so the budget is met by rounds: drop a share of the oldest droppable
//! snapshots sized to the overshoot, collect the garbage compacting every pack, measure
//! again. HEAD and the redo stack are never dropped; the undo chain loses its oldest end
//! first, as with `keep_last`.

use std::collections::HashSet;

use crate::catalog::Commit;
use crate::lifecycle::{GcReport, PruneReport};
use crate::{ObjectId, Store, StoreError};

/// What meeting a budget did.
#[derive(Clone, Debug, Default)]
pub struct BudgetReport {
    /// Snapshots dropped, oldest first.
    pub pruned: PruneReport,
    /// What the rounds of gc gave back, added up.
    pub gc: GcReport,
    /// The store's size when done.
    pub bytes: u64,
}

impl Store {
    /// Bytes the store takes: the pack files the catalog names, and the catalog.
    pub fn disk_bytes(&self) -> Result<u64, StoreError> {
        let mut total = file_len(&self.dir().join("catalog.redb"))?;
        for (pack, _) in self.catalog.packs()? {
            total += file_len(&self.pack_path(&pack))?;
        }
        Ok(total)
    }

    /// Drops the oldest snapshots (never HEAD or the redo stack) until the store takes at
    /// most `max` bytes or nothing more may go; `None` when it already fits.
    pub fn prune_to_size(&self, max: u64) -> Result<Option<BudgetReport>, StoreError> {
        let mut bytes = self.disk_bytes()?;
        if bytes <= max {
            return Ok(None);
        }
        let mut report = BudgetReport::default();
        while bytes > max {
            let droppable = self.droppable_oldest_first()?;
            if droppable.is_empty() {
                break;
            }
            // The share of the store over budget, of the droppable snapshots (at least one):
            // old snapshots mostly share their objects, so this rarely overshoots.
            let over = (bytes - max) as f64 / bytes as f64;
            let n = ((droppable.len() as f64 * over).ceil() as usize).clamp(1, droppable.len());
            let dropped: Vec<ObjectId> = droppable.iter().take(n).map(|(id, _)| *id).collect();
            self.commit(&Commit {
                remove_snapshots: dropped,
                ..Commit::default()
            })?;
            report.pruned.removed.extend(droppable.into_iter().take(n));
            add(&mut report.gc, &self.gc_compacting()?);
            bytes = self.disk_bytes()?;
        }
        report.pruned.kept = self.snapshot_count()? as usize;
        report.bytes = bytes;
        Ok(Some(report))
    }

    /// Every snapshot but HEAD and the redo stack, oldest first.
    fn droppable_oldest_first(&self) -> Result<Vec<(ObjectId, crate::SnapshotRecord)>, StoreError> {
        let history = self.history()?;
        let kept: HashSet<ObjectId> = history.head.into_iter().chain(history.redo).collect();
        let mut all = self.snapshots()?;
        all.retain(|(id, _)| !kept.contains(id));
        all.sort_by_key(|(_, r)| r.seq);
        Ok(all)
    }
}

fn file_len(path: &std::path::Path) -> Result<u64, StoreError> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Adds the counts of `more` to `total`, keeping the first `bytes_before`.
fn add(total: &mut GcReport, more: &GcReport) {
    if total == &GcReport::default() {
        total.bytes_before = more.bytes_before;
    }
    total.bytes_after = more.bytes_after;
    total.packs_deleted += more.packs_deleted;
    total.packs_repacked += more.packs_repacked;
    total.objects_removed += more.objects_removed;
    total.orphan_packs_deleted += more.orphan_packs_deleted;
    total.tmp_files_removed += more.tmp_files_removed;
}
