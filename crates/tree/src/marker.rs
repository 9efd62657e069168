//! Markers of a working-tree change in progress: `.snap/.undoing`, `.redoing`, `.restoring`.
//!
//! A marker is written (atomically, fsynced) before the first file of an undo, redo or restore
//! is touched, and removed after HEAD is committed. It names the HEAD and redo stack the
//! operation commits, so any later command can finish it: the restore is diff-based, and
//! repeating it is safe.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use snap_store::{ObjectId, decode_record, encode_record, fs};

use crate::error::TreeError;
use crate::restore::{LiftedDir, OpId};

/// The operation a marker belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `undo`, marked by `.undoing`.
    Undo,
    /// `redo`, marked by `.redoing`.
    Redo,
    /// `restore`, marked by `.restoring`.
    Restore,
}

impl Op {
    /// The marker file name in the store directory.
    pub fn marker_name(self) -> &'static str {
        match self {
            Op::Undo => ".undoing",
            Op::Redo => ".redoing",
            Op::Restore => ".restoring",
        }
    }

    /// `undo`, `redo` or `restore`.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Undo => "undo",
            Op::Redo => "redo",
            Op::Restore => "restore",
        }
    }

    /// Every operation that writes a marker.
    pub const ALL: [Op; 3] = [Op::Undo, Op::Redo, Op::Restore];
}

/// What an interrupted operation was going to commit, and the plan it was carrying out: the
/// tree it started from (`from`) and the target's (`head`'s), whose difference is exactly the
/// set of paths it may touch, less those it `kept` from the start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The operation interrupted; it also names the marker file.
    pub op: Op,
    /// The snapshot the working tree is being made to match; HEAD once committed.
    pub head: ObjectId,
    /// The redo stack to commit with `head`.
    pub redo: Vec<ObjectId>,
    /// The root tree of the working tree as the move found it (always in the store: HEAD's,
    /// or the unsaved changes' saved first). `None` in a marker from before format 2.
    pub from: Option<ObjectId>,
    /// Planned paths the move left alone from the start because the ignore rules, as they
    /// were before it, leave them out; a roll-forward leaves them alone too.
    pub kept: Vec<Vec<u8>>,
    /// The operation's id, which its temporary names carry (`.snap-tmp-<op>-<pid>-<n>`): a
    /// roll-forward removes only those. `None` in a marker from before format 3, whose
    /// temporary names it never removes.
    pub op_id: Option<OpId>,
    /// Read-only directories the plan writes in, with the modes they had: lifted for the
    /// move's time and given back after, by the move or by its roll-forward (format 3).
    pub lifted: Vec<LiftedDir>,
}

impl Marker {
    /// The id the operation's steps name their temporary files with; a marker from before
    /// format 3 had none, so its roll-forward takes a fresh one.
    pub fn op_id(&self) -> OpId {
        self.op_id.unwrap_or_default()
    }
}

/// The marker of format 2, before it carried the operation's id.
#[derive(Deserialize)]
struct MarkerV2 {
    op: Op,
    head: ObjectId,
    redo: Vec<ObjectId>,
    from: Option<ObjectId>,
    kept: Vec<Vec<u8>>,
}

/// The marker as written before it recorded its plan (`from`, `kept`): still read, so that
/// an operation interrupted under an older snap can be finished.
#[derive(Deserialize)]
struct MarkerV1 {
    op: Op,
    head: ObjectId,
    redo: Vec<ObjectId>,
}

impl Marker {
    fn path(store_dir: &Path, op: Op) -> PathBuf {
        store_dir.join(op.marker_name())
    }

    /// Writes and fsyncs the marker.
    pub fn write(&self, store_dir: &Path) -> Result<(), TreeError> {
        Ok(fs::write_atomic(
            &Self::path(store_dir, self.op),
            &encode_record(self),
        )?)
    }

    /// Removes the marker and fsyncs the store directory.
    pub fn remove(&self, store_dir: &Path) -> Result<(), TreeError> {
        let path = Self::path(store_dir, self.op);
        std::fs::remove_file(&path).map_err(|e| TreeError::io(&path, e))?;
        Ok(fs::sync_dir(store_dir)?)
    }

    /// Every marker present.
    pub fn find(store_dir: &Path) -> Result<Vec<Marker>, TreeError> {
        let mut found = Vec::new();
        for op in Op::ALL {
            let path = Self::path(store_dir, op);
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(TreeError::io(path, e)),
            };
            let marker = decode_marker(&bytes).map_err(|e| TreeError::BadMarker {
                path: path.clone(),
                why: e.to_string(),
            })?;
            if marker.op != op {
                return Err(TreeError::BadMarker {
                    path,
                    why: format!("holds a {} marker", marker.op.as_str()),
                });
            }
            found.push(marker);
        }
        Ok(found)
    }
}

/// Decodes a marker of any layout, newest first (postcard is not self-describing, and each
/// older marker is a strict prefix of the next layout's fields, so it fails the newer decode).
fn decode_marker(bytes: &[u8]) -> Result<Marker, snap_store::StoreError> {
    let id = ObjectId([0; 32]);
    decode_record::<Marker>(id, bytes).or_else(|e| {
        if let Ok(v2) = decode_record::<MarkerV2>(id, bytes) {
            return Ok(Marker {
                op: v2.op,
                head: v2.head,
                redo: v2.redo,
                from: v2.from,
                kept: v2.kept,
                op_id: None,
                lifted: Vec::new(),
            });
        }
        let old: MarkerV1 = decode_record(id, bytes).map_err(|_| e)?;
        Ok(Marker {
            op: old.op,
            head: old.head,
            redo: old.redo,
            from: None,
            kept: Vec::new(),
            op_id: None,
            lifted: Vec::new(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct MarkerV2Out {
        op: Op,
        head: ObjectId,
        redo: Vec<ObjectId>,
        from: Option<ObjectId>,
        kept: Vec<Vec<u8>>,
    }

    #[derive(Serialize)]
    struct OldMarker {
        op: Op,
        head: ObjectId,
        redo: Vec<ObjectId>,
    }

    #[test]
    fn a_marker_of_either_layout_decodes() {
        let marker = Marker {
            op: Op::Redo,
            head: ObjectId([7; 32]),
            redo: vec![ObjectId([8; 32])],
            from: Some(ObjectId([9; 32])),
            kept: vec![b"out.log".to_vec()],
            op_id: Some(OpId(77)),
            lifted: vec![LiftedDir {
                path: b"ro".to_vec(),
                mode: 0o555,
            }],
        };
        assert_eq!(decode_marker(&encode_record(&marker)).unwrap(), marker);
        let v2 = MarkerV2Out {
            op: Op::Redo,
            head: marker.head,
            redo: marker.redo.clone(),
            from: marker.from,
            kept: marker.kept.clone(),
        };
        let decoded = decode_marker(&encode_record(&v2)).unwrap();
        assert_eq!((decoded.from, decoded.op_id), (marker.from, None));
        assert_eq!(decoded.kept, marker.kept);
        let old = OldMarker {
            op: Op::Undo,
            head: ObjectId([1; 32]),
            redo: Vec::new(),
        };
        let decoded = decode_marker(&encode_record(&old)).unwrap();
        assert_eq!(
            (decoded.op, decoded.head, decoded.from),
            (Op::Undo, old.head, None)
        );
    }
}
