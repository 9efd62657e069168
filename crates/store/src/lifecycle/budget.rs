//! Retention by size: dropping the oldest snapshots until the store fits a byte budget.
//!
//! What a snapshot costs is only known once gc has run (its objects are shared with its
//! neighbours), so the budget is met by rounds: drop a share of the oldest droppable
//! snapshots sized to the overshoot, collect the garbage compacting every pack, measure
//! again. HEAD, the redo stack and HEAD's nearest ancestors are never dropped; the undo chain
//! loses its oldest end first, as with `keep_last`.

use std::collections::HashSet;

use crate::catalog::Commit;
use crate::lifecycle::{GcReport, PruneReport};
use crate::{ObjectId, Store, StoreError};

/// Retention by size never drops the nearest this many ancestors of HEAD: undo keeps working
/// that far back whatever the budget.
pub const BUDGET_KEEPS_UNDO: usize = 10;
/// At most this many rounds of dropping and gc run in one call.
pub const BUDGET_ROUNDS: usize = 8;

/// What meeting a budget did.
#[derive(Clone, Debug, Default)]
pub struct BudgetReport {
    /// Snapshots dropped, oldest first.
    pub pruned: PruneReport,
    /// What the rounds of gc gave back, added up.
    pub gc: GcReport,
    /// The store's size when done.
    pub bytes: u64,
    /// Whether the store fits the budget now (it may not, when what must stay is larger).
    pub fits: bool,
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

    /// Drops the oldest snapshots until the store takes at most `max` bytes; `None` when it
    /// already fits. HEAD, the redo stack and HEAD's nearest [`BUDGET_KEEPS_UNDO`] ancestors
    /// always stay, so a budget too small for them cannot take undo away, and at most
    /// [`BUDGET_ROUNDS`] rounds run: the report says whether the store fits.
    pub fn prune_to_size(&self, max: u64) -> Result<Option<BudgetReport>, StoreError> {
        let mut bytes = self.disk_bytes()?;
        if bytes <= max {
            return Ok(None);
        }
        let mut report = BudgetReport::default();
        if self.gc_would_hold_back()? {
            // gc would free nothing: every round would only take snapshots out of reach.
            report.gc.held_back = true;
            report.bytes = bytes;
            return Ok(Some(report));
        }
        // Old snapshots mostly share their objects: the first round drops the overshoot's
        // share of the droppable snapshots, and each round that frees too little doubles it.
        let mut share = (bytes - max) as f64 / bytes as f64;
        for _ in 0..BUDGET_ROUNDS {
            let droppable = self.droppable_oldest_first()?;
            if droppable.is_empty() || bytes <= max {
                break;
            }
            let n = ((droppable.len() as f64 * share).ceil() as usize).clamp(1, droppable.len());
            let dropped: Vec<ObjectId> = droppable.iter().take(n).map(|(id, _)| *id).collect();
            self.commit(&Commit {
                remove_snapshots: dropped,
                ..Commit::default()
            })?;
            report.pruned.removed.extend(droppable.into_iter().take(n));
            add(&mut report.gc, &self.gc_compacting()?);
            let now = self.disk_bytes()?;
            if now > max && bytes - now.min(bytes) < (bytes - max) / 2 {
                share = (share * 2.0).min(1.0);
            }
            bytes = now;
        }
        report.pruned.kept = self.snapshot_count()? as usize;
        report.bytes = bytes;
        report.fits = bytes <= max;
        Ok(Some(report))
    }

    /// The snapshots retention by size may drop, oldest first: all but HEAD, the redo stack
    /// and HEAD's nearest [`BUDGET_KEEPS_UNDO`] ancestors.
    fn droppable_oldest_first(&self) -> Result<Vec<(ObjectId, crate::SnapshotRecord)>, StoreError> {
        let history = self.history()?;
        let mut all = self.snapshots()?;
        let mut kept: HashSet<ObjectId> = history.redo.into_iter().collect();
        let by_id: std::collections::HashMap<ObjectId, Option<ObjectId>> =
            all.iter().map(|(id, r)| (*id, r.parent)).collect();
        let mut next = history.head;
        for _ in 0..=BUDGET_KEEPS_UNDO {
            let Some(id) = next else { break };
            kept.insert(id);
            next = by_id.get(&id).copied().flatten();
        }
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
    total.orphan_packs_kept.clone_from(&more.orphan_packs_kept);
    total.tmp_files_removed += more.tmp_files_removed;
}
