//! Store upkeep through the workspace: prune, gc (also automatic after saves), verify, stats
//! and delete.

use crate::error::TreeError;
use crate::observer::{Event, Phase};
use crate::parts::{Run, now_ns};
use crate::upkeep::Upkeep;
use snap_store::{GcReport, PruneReport, Retention, StoreStats, VerifyReport};

impl Upkeep<'_> {
    /// Applies the retention rules after a save, when `auto` is on: by count and age, then
    /// by size (`max_store_bytes`), which may drop more.
    pub(crate) fn auto_retention(&self) -> Result<Option<(PruneReport, GcReport)>, TreeError> {
        let retention = &self.parts.config.retention;
        if !retention.auto {
            return Ok(None);
        }
        let by_count = self.prune_by_count()?;
        let by_size = match retention.max_store_bytes {
            0 => None,
            max => self.parts.store.prune_to_size(max)?,
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
        let retention = &self.parts.config.retention;
        if self.parts.store.snapshot_count()? <= retention.auto_threshold() {
            return Ok(None);
        }
        let policy = retention.policy().map_err(|why| TreeError::Config {
            path: self.parts.store.dir().join("config.toml"),
            why,
        })?;
        let now = now_ns();
        if !self.parts.store.prune_due(&policy, now)? {
            return Ok(None);
        }
        let pruned = self.parts.store.prune(&policy, now, false)?;
        let gc = if pruned.removed.is_empty() {
            GcReport::default()
        } else {
            self.parts.store.gc()?
        };
        Ok(Some((pruned, gc)))
    }

    pub(crate) fn prune(&self, policy: &Retention, run: Run) -> Result<PruneReport, TreeError> {
        Ok(self
            .parts
            .store
            .prune(policy, now_ns(), run == Run::DryRun)?)
    }

    pub(crate) fn gc(&self) -> Result<GcReport, TreeError> {
        let progress = |done, total| {
            self.parts.emit(Event::Progress {
                phase: Phase::Gc,
                done,
                total,
            })
        };
        self.parts.observed(
            self.parts
                .store
                .gc_with_progress(&progress)
                .map_err(TreeError::from),
        )
    }

    pub(crate) fn verify(&self, read_data: bool) -> Result<VerifyReport, TreeError> {
        let progress = |done, total| {
            self.parts.emit(Event::Progress {
                phase: Phase::Verify,
                done,
                total,
            })
        };
        self.parts.observed(
            self.parts
                .store
                .verify_with_progress(read_data, &progress)
                .map_err(TreeError::from),
        )
    }

    pub(crate) fn stats(&self) -> Result<StoreStats, TreeError> {
        Ok(self.parts.store.stats()?)
    }

    pub(crate) fn delete_all(&self) -> Result<(usize, GcReport), TreeError> {
        Ok(self.parts.store.delete_all()?)
    }
}
