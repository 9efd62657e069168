//! What history is made of, as the workspace hands it out: a snapshot with its id, the
//! changes a command reports, a log row, an interrupted operation finished.

use snap_store::{ObjectId, SnapshotRecord};

use crate::flat::Change;
use crate::marker::Op;

/// A snapshot's id with its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot object's id.
    pub id: ObjectId,
    /// The record the catalog holds for it.
    pub record: SnapshotRecord,
}

/// One changed path.
pub type PathChange = (Vec<u8>, Change);

/// An interrupted operation finished when the workspace was opened.
#[derive(Clone, Debug)]
pub struct Recovered {
    /// The operation that was interrupted.
    pub op: Op,
    /// The snapshot now HEAD, which the working tree was made to match.
    pub head: Snapshot,
    /// Paths written or removed, leftover temporary files included.
    pub paths_touched: usize,
    /// Planned paths left exactly as they were (see [`MoveOutcome::kept`]).
    pub kept: Vec<Vec<u8>>,
    /// Planned paths that held something else (changed since the interruption, or torn by
    /// a power cut): saved in an `auto-before-*` snapshot, then written as planned.
    pub saved_first: Vec<Vec<u8>>,
}

/// One row of the log.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// The snapshot this row shows.
    pub snapshot: Snapshot,
    /// True for the snapshot HEAD names.
    pub is_head: bool,
    /// On the redo stack.
    pub redoable: bool,
    /// Neither HEAD's ancestor nor redoable: abandoned by a save after an undo.
    pub abandoned: bool,
}
