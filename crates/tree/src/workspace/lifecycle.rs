//! Store upkeep through the workspace: prune, gc (also automatic after saves), verify, stats
//! and delete.

use super::{
    Event, GcReport, Phase, PruneReport, Retention, Run, StoreStats, TreeError, VerifyReport,
    Workspace, now_ns,
};

impl Workspace {
    /// Applies the retention rules after a save, when `auto` is on: by count and age, then
    /// by size (`max_store_bytes`), which may drop more.
    pub(super) fn auto_retention(&self) -> Result<Option<(PruneReport, GcReport)>, TreeError> {
        let retention = &self.config.retention;
        if !retention.auto {
            return Ok(None);
        }
        let by_count = self.prune_by_count()?;
        let by_size = match retention.max_store_bytes {
            0 => None,
            max => self.store.prune_to_size(max)?,
        };
        let Some(mut by_size) = by_size else {
            return Ok(by_count);
        };
        let (mut pruned, gc) = by_count.unwrap_or_default();
        pruned.removed.append(&mut by_size.pruned.removed);
        pruned.kept = by_size.pruned.kept;
        let gc = GcReport {
            bytes_before: gc.bytes_before.max(by_size.gc.bytes_before),
            ..by_size.gc
        };
        Ok(Some((pruned, gc)))
    }

    /// Prunes and collects garbage once the store holds clearly more than `keep_last`
    /// snapshots and one of them could go, so that a store left alone stays bounded. Cheap
    /// when nothing is due: a count of a catalog table, and past the threshold the oldest
    /// snapshot's time (a week of agent saves is all inside `keep_within`).
    fn prune_by_count(&self) -> Result<Option<(PruneReport, GcReport)>, TreeError> {
        let retention = &self.config.retention;
        if self.store.snapshot_count()? <= retention.auto_threshold() {
            return Ok(None);
        }
        let policy = retention.policy().map_err(|why| TreeError::Config {
            path: self.store.dir().join("config.toml"),
            why,
        })?;
        let now = now_ns();
        if !self.store.prune_due(&policy, now)? {
            return Ok(None);
        }
        let pruned = self.store.prune(&policy, now, false)?;
        let gc = if pruned.removed.is_empty() {
            GcReport::default()
        } else {
            self.store.gc()?
        };
        Ok(Some((pruned, gc)))
    }

    /// Drops snapshots outside `policy` (HEAD, the undo chain and the redo stack stay).
    pub fn prune(&self, policy: &Retention, run: Run) -> Result<PruneReport, TreeError> {
        Ok(self.store.prune(policy, now_ns(), run == Run::DryRun)?)
    }

    /// Reclaims the space of objects no snapshot references.
    pub fn gc(&self) -> Result<GcReport, TreeError> {
        let progress = |done, total| {
            self.emit(Event::Progress {
                phase: Phase::Gc,
                done,
                total,
            })
        };
        self.observed(
            self.store
                .gc_with_progress(&progress)
                .map_err(TreeError::from),
        )
    }

    /// Checks the store; with `read_data`, every object's bytes.
    pub fn verify(&self, read_data: bool) -> Result<VerifyReport, TreeError> {
        let progress = |done, total| {
            self.emit(Event::Progress {
                phase: Phase::Verify,
                done,
                total,
            })
        };
        self.observed(
            self.store
                .verify_with_progress(read_data, &progress)
                .map_err(TreeError::from),
        )
    }

    /// Store size and what gc would reclaim.
    pub fn stats(&self) -> Result<StoreStats, TreeError> {
        Ok(self.store.stats()?)
    }

    /// Removes every snapshot and reclaims their space; the working tree is not touched.
    pub fn delete_all(&self) -> Result<(usize, GcReport), TreeError> {
        Ok(self.store.delete_all()?)
    }
}
