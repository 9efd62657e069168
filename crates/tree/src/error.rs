//! The tree crate's error type. Variants carry the path or reference involved.

use std::path::PathBuf;

use snap_store::StoreError;

/// Errors of working-tree operations.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no snap store found in {0} or any parent (run `snap init` or `snap save` there)")]
    NoWorkspace(PathBuf),
    #[error("refusing to create a store in {0} (use --force to do it anyway)")]
    RefusedRoot(PathBuf),
    #[error("{path}: kept changing while it was read; try again when it is quiet")]
    Unstable { path: PathBuf },
    #[error("scanning {path}: {why}")]
    Scan { path: PathBuf, why: String },
    #[error("config {path}: {why}")]
    Config { path: PathBuf, why: String },
    #[error("nothing to undo: {0}")]
    NothingToUndo(String),
    #[error("nothing to redo: {0}")]
    NothingToRedo(String),
    #[error("there are no snapshots yet (run `snap save` first)")]
    NoSnapshots,
    #[error("path {0} is not in snapshot {1}")]
    PathNotInSnapshot(String, String),
    #[error("{path} is outside the workspace {root}")]
    OutsideWorkspace { path: PathBuf, root: PathBuf },
    #[error("cannot {action} {path}: {why}")]
    Restore {
        action: &'static str,
        path: PathBuf,
        why: String,
    },
    #[error("interrupted-operation marker {path} is unreadable: {why}")]
    BadMarker { path: PathBuf, why: String },
}

impl TreeError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> TreeError {
        TreeError::Io {
            path: path.into(),
            source,
        }
    }

    /// True for the errors the CLI reports with exit code 3.
    pub fn is_nothing_to_do(&self) -> bool {
        matches!(
            self,
            TreeError::NothingToUndo(_) | TreeError::NothingToRedo(_)
        )
    }
}
