//! What the agents' sessions recorded, read for the commands above: the turn a hook event
//! belongs to, the tree last told to a session, where a turn began and how many snapshots
//! of the redo stack the next turns hold (`undo --turn`, `redo --turn`), and the newest
//! snapshot matching a test. The CLI asks the workspace; it never reads the store itself.

use std::path::{Path, PathBuf};

use crate::flat::{Change, diff_files, unfold_pair};
use crate::workspace::{ObjectId, Snapshot, SnapshotRecord, TreeError, Workspace};

/// The value of a snapshot's `hook` meta when a user prompt's event saved it: a turn's first
/// snapshot.
pub const PROMPT_EVENT: &str = "prompt";

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

    /// The redo stack, the next redo's snapshot last.
    pub fn redo_stack(&self) -> Result<Vec<ObjectId>, TreeError> {
        Ok(self.store.history()?.redo)
    }

    /// Where the `n`th last turn of HEAD's session began: its prompt's snapshot, or else the
    /// last snapshot before the turn. A turn in which nothing happened yet (HEAD is its
    /// prompt's snapshot) does not count.
    pub fn turn_start(&self, n: u64) -> Result<ObjectId, TreeError> {
        let head = self
            .head()?
            .ok_or_else(|| nothing("there are no snapshots yet"))?;
        let Some(session) = head.record.session.clone() else {
            return Err(nothing(
                "HEAD was not saved by an agent hook (it has no session)",
            ));
        };
        let turn = head.record.step.unwrap_or(0);
        // An empty current turn (HEAD is its prompt's snapshot) is not one of the n.
        let empty = self.turn_start_at(&head, &session, turn)? == head.id;
        let skip = if empty { n } else { n - 1 };
        let first = turn
            .checked_sub(skip)
            .ok_or_else(|| nothing("this session has fewer turns"))?;
        self.turn_start_at(&head, &session, first)
    }

    /// Walks back from `head` to the start of turn `first` of `session`.
    fn turn_start_at(
        &self,
        head: &Snapshot,
        session: &str,
        first: u64,
    ) -> Result<ObjectId, TreeError> {
        let mut current = head.clone();
        loop {
            let r = &current.record;
            let in_turn =
                r.session.as_deref() == Some(session) && r.step.is_some_and(|s| s >= first);
            let prompt = (r.meta.iter()).any(|(k, v)| k == "hook" && v == PROMPT_EVENT);
            if !in_turn || (prompt && r.step == Some(first)) {
                return Ok(current.id);
            }
            current = self.parent_of(&current)?.ok_or_else(|| {
                nothing(&format!("no snapshot before turn {first} of this session"))
            })?;
        }
    }

    /// How many snapshots of the redo stack the next `n` turns hold: the snapshots an
    /// `undo --turn` passed, one turn (session and step) after another.
    pub fn turn_redo_count(&self, n: u64) -> Result<u64, TreeError> {
        let redo = self.redo_stack()?;
        let mut count = 0;
        let mut turns = 0;
        let mut current = None;
        for id in redo.iter().rev() {
            let record = self.snapshot(*id)?.record;
            let turn = (record.session, record.step);
            if current.as_ref() != Some(&turn) {
                turns += 1;
                if turns > n {
                    break;
                }
                current = Some(turn);
            }
            count += 1;
        }
        if count == 0 {
            return Err(TreeError::NothingToRedo("the redo stack is empty".into()));
        }
        Ok(count)
    }
}

fn nothing(why: &str) -> TreeError {
    TreeError::NothingToUndo(why.to_string())
}
