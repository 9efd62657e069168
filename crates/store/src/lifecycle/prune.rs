//! Retention: which snapshots prune keeps (HEAD, its undo chain, the redo stack, the newest
//! and the recent), and the check that a prune has anything to drop.

use std::collections::{HashMap, HashSet};

use super::{PruneReport, Retention};
use crate::catalog::{Commit, HistoryState};
use crate::{ObjectId, SnapshotRecord, Store, StoreError};

impl Store {
    /// Drops snapshots outside `policy` from the catalog (their objects go at the next gc).
    pub fn prune(
        &self,
        policy: &Retention,
        now_ns: i64,
        dry_run: bool,
    ) -> Result<PruneReport, StoreError> {
        let all = self.snapshots()?;
        let keep = kept_snapshots(&all, &self.history()?, policy, now_ns);
        let removed: Vec<_> = all
            .iter()
            .filter(|(id, _)| !keep.contains(id))
            .cloned()
            .collect();
        if !dry_run && !removed.is_empty() {
            let remove_snapshots = removed.iter().map(|(id, _)| *id).collect();
            self.commit(&Commit {
                remove_snapshots,
                ..Commit::default()
            })?;
        }
        Ok(PruneReport {
            kept: all.len() - removed.len(),
            removed,
        })
    }

    /// False when [`Store::prune`] with `policy` would drop nothing now, answered from a count
    /// and the oldest snapshot instead of every record: a save asks this after each commit
    /// once the store is past its threshold, and an agent's week of saves is all inside
    /// `keep_within`. True means prune may drop something (HEAD or the redo stack may still
    /// hold it). Assumes times grow with sequence numbers; a clock set back only delays
    /// automatic pruning until the oldest snapshot leaves the window (never drops more).
    pub fn prune_due(&self, policy: &Retention, now_ns: i64) -> Result<bool, StoreError> {
        if self.snapshot_count()? <= policy.keep_last {
            return Ok(false);
        }
        let Some(within) = policy.keep_within_ns else {
            return Ok(true);
        };
        let cutoff = now_ns.saturating_sub(within);
        Ok(self
            .catalog
            .oldest_snapshot()?
            .is_some_and(|oldest| oldest.time_ns < cutoff))
    }
}

/// HEAD and its newest `keep_last - 1` ancestors (`keep_last` counts HEAD's line, what undo
/// walks), the redo stack, those within `keep_within`, and HEAD's ancestors back to the
/// oldest of those, so undo never runs into a hole. A snapshot of an abandoned line (left
/// by a save after an undo) stays when it is newer than the oldest snapshot kept, so the
/// span `log --all` shows is whole; older ones go.
pub(super) fn kept_snapshots(
    all: &[(ObjectId, SnapshotRecord)],
    history: &HistoryState,
    policy: &Retention,
    now_ns: i64,
) -> HashSet<ObjectId> {
    let by_id: HashMap<ObjectId, &SnapshotRecord> = all.iter().map(|(id, r)| (*id, r)).collect();
    let line = head_line(&by_id, history.head);
    let mut keep: HashSet<ObjectId> = line
        .iter()
        .take(policy.keep_last as usize)
        .copied()
        .collect();
    if let Some(within) = policy.keep_within_ns {
        keep.extend(
            all.iter()
                .filter(|(_, r)| r.time_ns >= now_ns.saturating_sub(within))
                .map(|(id, _)| *id),
        );
    }
    keep.extend(history.head);
    keep.extend(history.redo.iter().copied());
    let oldest = all
        .iter()
        .filter(|(id, _)| keep.contains(id))
        .map(|(_, r)| r.seq)
        .min()
        .unwrap_or(0);
    // HEAD's line back to the oldest kept, then every other line within that span.
    keep.extend(line.iter().filter(|id| by_id[*id].seq >= oldest));
    keep.extend(
        all.iter()
            .filter(|(_, r)| r.seq > oldest)
            .map(|(id, _)| *id),
    );
    keep
}

/// HEAD and its ancestors, newest first, as far as their records reach.
fn head_line(by_id: &HashMap<ObjectId, &SnapshotRecord>, head: Option<ObjectId>) -> Vec<ObjectId> {
    let mut line = Vec::new();
    let mut next = head;
    while let Some(id) = next.filter(|id| by_id.contains_key(id)) {
        line.push(id);
        next = by_id[&id].parent;
        if line.len() > by_id.len() {
            break; // a cycle no store writes; never loop on one
        }
    }
    line
}
