//! Moves: undo, redo, restore and revert, each planned from the working tree and written by
//! one protocol (`move_to`: marker, guarded apply, HEAD, marker removed; docs/SAFETY.md).
//!
//! [`undo`] holds undo and redo and what every move shares before and after writing (the
//! capture, saving unsaved changes first, finishing); [`restoring`] plans a restore of a
//! snapshot or of some paths, [`revert`] a restore taking back one snapshot's or turn's
//! change; [`apply`] writes a plan, saving what it displaces first, and rolls it back;
//! [`kept`] decides what a move leaves alone. This file holds the types they share.

mod apply;
mod kept;
mod recover;
mod restoring;
mod revert;
pub(crate) mod steps;
mod undo;

pub use revert::{RevertOf, RevertOutcome};

use crate::marker::Op;
use crate::parts::Parts;
use crate::parts::Run;
use crate::snapshot::{PathChange, Snapshot};

/// Moves the working tree between snapshots: undo, redo, restore, revert, and the roll-forward of an interrupted move.
#[derive(Clone, Copy)]
pub(crate) struct Mover<'a> {
    pub(crate) parts: &'a Parts,
}

impl<'a> Mover<'a> {
    pub(crate) fn new(parts: &'a Parts) -> Mover<'a> {
        Mover { parts }
    }
}

/// The result of an undo, redo or restore (or of its preview).
#[derive(Clone, Debug)]
pub struct MoveOutcome {
    /// Undo, redo or restore.
    pub op: Op,
    /// True for a preview: nothing was written.
    pub dry_run: bool,
    /// The unsaved changes saved before moving (not in a preview).
    pub auto_saved: Option<Snapshot>,
    /// True when the working tree had unsaved changes.
    pub was_dirty: bool,
    /// The snapshot the working tree now matches (HEAD), or would match.
    pub target: Snapshot,
    /// For restore: the new snapshot recording it.
    pub created: Option<Snapshot>,
    /// Snapshots stepped over, nearest to where we started first.
    pub passed: Vec<Snapshot>,
    /// Paths that differ between the working tree and the target, in path order.
    pub changes: Vec<PathChange>,
    /// Planned paths left exactly as they were (docs/SAFETY.md): ignored, excluded, oversize or
    /// special files, directories still holding such files, and files that changed again
    /// after being saved. In path order. A preview names those the ignore rules keep.
    pub kept: Vec<Vec<u8>>,
}

impl MoveOutcome {
    /// The outcome as planned, before anything is saved or written.
    pub(super) fn planned(
        op: Op,
        run: Run,
        was_dirty: bool,
        target: Snapshot,
        passed: Vec<Snapshot>,
        changes: Vec<PathChange>,
    ) -> MoveOutcome {
        MoveOutcome {
            op,
            dry_run: run == Run::DryRun,
            auto_saved: None,
            was_dirty,
            target,
            created: None,
            passed,
            changes,
            kept: Vec::new(),
        }
    }
}
