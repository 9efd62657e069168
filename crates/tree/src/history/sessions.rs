//! What the agents' sessions recorded, read for the commands above: the turn a hook event
//! belongs to, the tree last told to a session, the history model (which `undo --turn` and
//! `redo --turn` ask), and the newest snapshot matching a test. The CLI asks the workspace;
//! it never reads the store itself.

use std::path::PathBuf;

use crate::error::TreeError;
use crate::flat::{Change, diff_files, unfold_pair};
use crate::history::History;
use crate::history::query::Reader;
use crate::snapshot::Snapshot;
use snap_store::{ObjectId, SnapshotRecord};

/// A snapshot a session was told about, with the tree it then had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Told {
    /// The session's newest snapshot when it was told.
    pub snapshot: ObjectId,
    /// The working tree's root it was told about.
    pub tree: ObjectId,
}

impl Reader<'_> {
    pub(crate) fn turn(&self, session: &str) -> Result<u64, TreeError> {
        Ok(self.parts.store.turn(session)?)
    }

    pub(crate) fn start_turn(&self, session: &str) -> Result<u64, TreeError> {
        Ok(self.parts.store.start_turn(session)?)
    }

    pub(crate) fn told(&self, session: &str) -> Result<Option<Told>, TreeError> {
        let told = self.parts.store.told(session)?;
        Ok(told.map(|(snapshot, tree)| Told { snapshot, tree }))
    }

    pub(crate) fn set_told(&self, session: &str, told: Told) -> Result<(), TreeError> {
        Ok(self
            .parts
            .store
            .set_told(session, &told.snapshot, &told.tree)?)
    }

    pub(crate) fn files_changed(
        &self,
        from: &ObjectId,
        to: &ObjectId,
    ) -> Result<Vec<(Vec<u8>, Change)>, TreeError> {
        let (old, new) = unfold_pair(&self.parts.store, from, to)?;
        Ok(diff_files(&old, &new))
    }

    pub(crate) fn newest_where(
        &self,
        test: impl Fn(&SnapshotRecord) -> bool,
    ) -> Result<Option<Snapshot>, TreeError> {
        let all = self.parts.store.snapshots()?;
        let newest = all.into_iter().rev().find(|(_, r)| test(r));
        newest.map(|(id, _)| self.snapshot(id)).transpose()
    }

    pub(crate) fn history_outside_catalog(&self) -> Result<Vec<PathBuf>, TreeError> {
        Ok(self.parts.store.history_outside_catalog()?)
    }

    pub(crate) fn history(&self) -> Result<History, TreeError> {
        let state = self.parts.store.history()?;
        Ok(History::new(
            state.head,
            state.redo,
            self.parts.store.snapshots()?,
        ))
    }

    pub(crate) fn redo_stack(&self) -> Result<Vec<ObjectId>, TreeError> {
        let history = self.history()?;
        Ok(history.redo().map(|i| i.snapshot.id).collect())
    }

    pub(crate) fn turn_start(&self, n: u64) -> Result<ObjectId, TreeError> {
        self.history()?.turn_start(n)
    }

    pub(crate) fn turn_redo_count(&self, n: u64) -> Result<u64, TreeError> {
        self.history()?.turn_redo_count(n)
    }
}
