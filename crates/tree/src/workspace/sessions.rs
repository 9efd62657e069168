//! What the agents' sessions recorded, read for the commands above: the turn a hook event
//! belongs to, the tree last told to a session, the history model (which `undo --turn` and
//! `redo --turn` ask), and the newest snapshot matching a test. The CLI asks the workspace;
//! it never reads the store itself.

use std::path::{Path, PathBuf};

use crate::flat::{Change, diff_files, unfold_pair};
use crate::history::History;
use crate::workspace::{ObjectId, Snapshot, SnapshotRecord, TreeError, Workspace};

/// A snapshot a session was told about, with the tree it then had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Told {
    /// The session's newest snapshot when it was told.
    pub snapshot: ObjectId,
    /// The working tree's root it was told about.
    pub tree: ObjectId,
}

impl Workspace {
    /// The store directory (`.snap/`, or the external store).
    pub fn store_dir(&self) -> &Path {
        self.store.dir()
    }

    /// The turn `session` is in (0 before its first prompt).
    pub fn turn(&self, session: &str) -> Result<u64, TreeError> {
        Ok(self.store.turn(session)?)
    }

    /// Starts the next turn of `session` and returns its number.
    pub fn start_turn(&self, session: &str) -> Result<u64, TreeError> {
        Ok(self.store.start_turn(session)?)
    }

    /// What `session` was last told about, if anything.
    pub fn told(&self, session: &str) -> Result<Option<Told>, TreeError> {
        let told = self.store.told(session)?;
        Ok(told.map(|(snapshot, tree)| Told { snapshot, tree }))
    }

    /// Records that `session` was told about `told`.
    pub fn set_told(&self, session: &str, told: Told) -> Result<(), TreeError> {
        Ok(self.store.set_told(session, &told.snapshot, &told.tree)?)
    }

    /// The files that differ between two stored trees, reading only the directories whose
    /// trees differ.
    pub fn files_changed(
        &self,
        from: &ObjectId,
        to: &ObjectId,
    ) -> Result<Vec<(Vec<u8>, Change)>, TreeError> {
        let (old, new) = unfold_pair(&self.store, from, to)?;
        Ok(diff_files(&old, &new))
    }

    /// The newest snapshot whose record passes `test`.
    pub fn newest_where(
        &self,
        test: impl Fn(&SnapshotRecord) -> bool,
    ) -> Result<Option<Snapshot>, TreeError> {
        let all = self.store.snapshots()?;
        let newest = all.into_iter().rev().find(|(_, r)| test(r));
        newest.map(|(id, _)| self.snapshot(id)).transpose()
    }

    /// Pack files that may hold history the catalog does not name (see `repair`).
    pub fn history_outside_catalog(&self) -> Result<Vec<PathBuf>, TreeError> {
        Ok(self.store.history_outside_catalog()?)
    }

    /// Store directories this open found missing and made again.
    pub fn mended(&self) -> &[PathBuf] {
        self.store.mended()
    }

    /// The history model: every snapshot record, read once, placed against HEAD and grouped
    /// by session, turn and tool call. Owned: the store is free again once it returns.
    pub fn history(&self) -> Result<History, TreeError> {
        let state = self.store.history()?;
        Ok(History::new(
            state.head,
            state.redo,
            self.store.snapshots()?,
        ))
    }

    /// The redo stack, the next redo's snapshot last.
    pub fn redo_stack(&self) -> Result<Vec<ObjectId>, TreeError> {
        let history = self.history()?;
        Ok(history.redo().map(|i| i.snapshot.id).collect())
    }

    /// Where the `n`th last turn of HEAD's session began (see [`History::turn_start`]).
    pub fn turn_start(&self, n: u64) -> Result<ObjectId, TreeError> {
        self.history()?.turn_start(n)
    }

    /// How many snapshots of the redo stack the next `n` turns hold (see
    /// [`History::turn_redo_count`]).
    pub fn turn_redo_count(&self, n: u64) -> Result<u64, TreeError> {
        self.history()?.turn_redo_count(n)
    }
}
