//! Markers of a working-tree change in progress: `.snap/.undoing`, `.redoing`, `.restoring`.
//!
//! A marker is written (atomically, fsynced) before the first file of an undo, redo or restore
//! is touched, and removed after HEAD is committed. It names the HEAD and redo stack the
//! operation commits, so any later command can finish it: the restore is diff-based, and
//! repeating it is safe.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use snap_store::{ObjectId, decode_record, encode_record, fsio};

use crate::TreeError;

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

/// What an interrupted operation was going to commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The operation interrupted; it also names the marker file.
    pub op: Op,
    /// The snapshot the working tree is being made to match; HEAD once committed.
    pub head: ObjectId,
    /// The redo stack to commit with `head`.
    pub redo: Vec<ObjectId>,
}

impl Marker {
    fn path(store_dir: &Path, op: Op) -> PathBuf {
        store_dir.join(op.marker_name())
    }

    /// Writes and fsyncs the marker.
    pub fn write(&self, store_dir: &Path) -> Result<(), TreeError> {
        Ok(fsio::write_atomic(
            &Self::path(store_dir, self.op),
            &encode_record(self),
        )?)
    }

    /// Removes the marker and fsyncs the store directory.
    pub fn remove(&self, store_dir: &Path) -> Result<(), TreeError> {
        let path = Self::path(store_dir, self.op);
        std::fs::remove_file(&path).map_err(|e| TreeError::io(&path, e))?;
        Ok(fsio::sync_dir(store_dir)?)
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
            let marker: Marker =
                decode_record(ObjectId([0; 32]), &bytes).map_err(|e| TreeError::BadMarker {
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
