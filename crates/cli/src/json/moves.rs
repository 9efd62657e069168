//! The documents of the moves: undo, redo, restore (and a pending one), revert, expunge.

use serde::Serialize;
use snap_tree::{Marker, MoveOutcome, RevertOutcome};

use super::{ChangeDoc, SnapshotDoc, changes};
use crate::render::path_str;

/// An interrupted move waiting for `snap recover`.
#[derive(Serialize)]
pub struct PendingDoc {
    pub op: &'static str,
    pub target: String,
}

impl From<&Marker> for PendingDoc {
    fn from(m: &Marker) -> PendingDoc {
        PendingDoc {
            op: m.op.as_str(),
            target: m.head.to_hex(),
        }
    }
}

/// `snap undo`, `redo`, `restore` and their `--dry-run`.
#[derive(Serialize)]
pub struct MoveDoc {
    pub op: &'static str,
    pub dry_run: bool,
    pub head: Option<SnapshotDoc>,
    pub target: SnapshotDoc,
    pub created: Option<SnapshotDoc>,
    pub auto_saved: Option<SnapshotDoc>,
    pub had_unsaved_changes: bool,
    pub passed: Vec<SnapshotDoc>,
    pub passed_count: usize,
    pub changes: Vec<ChangeDoc>,
    pub kept: Vec<String>,
}

impl From<&MoveOutcome> for MoveDoc {
    fn from(o: &MoveOutcome) -> MoveDoc {
        MoveDoc {
            op: o.op.as_str(),
            dry_run: o.dry_run,
            head: (!o.dry_run).then(|| SnapshotDoc::from(&o.target)),
            target: SnapshotDoc::from(&o.target),
            created: o.created.as_ref().map(SnapshotDoc::from),
            auto_saved: o.auto_saved.as_ref().map(SnapshotDoc::from),
            had_unsaved_changes: o.was_dirty,
            passed: o.passed.iter().map(SnapshotDoc::from).collect(),
            passed_count: o.passed.len(),
            changes: changes(&o.changes),
            kept: o.kept.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap revert`: the restore that took the change back (`op` is `revert`), the snapshot
/// whose change it was and the state before it, and the files left alone as changed since.
#[derive(Serialize)]
pub struct RevertDoc {
    #[serde(flatten)]
    pub moved: MoveDoc,
    pub reverted: SnapshotDoc,
    pub before: SnapshotDoc,
    pub conflicts: Vec<String>,
}

impl From<&RevertOutcome> for RevertDoc {
    fn from(o: &RevertOutcome) -> RevertDoc {
        let mut moved = MoveDoc::from(&o.moved);
        moved.op = "revert";
        RevertDoc {
            moved,
            reverted: SnapshotDoc::from(&o.reverted),
            before: SnapshotDoc::from(&o.before),
            conflicts: o.conflicts.iter().map(|p| path_str(p)).collect(),
        }
    }
}
