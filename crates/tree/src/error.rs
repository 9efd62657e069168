//! The tree crate's error type. Variants carry the path or reference involved.

use std::path::PathBuf;

use snap_store::StoreError;

/// Errors of working-tree operations.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The store failed; its error says where.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A filesystem operation on the working tree or store directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// The underlying OS error.
        source: std::io::Error,
    },
    /// No ancestor of the starting directory holds a store; carries the starting directory.
    #[error("no snap store found in {0} or any parent")]
    NoWorkspace(PathBuf),
    /// A store named at the workspace root or above it, which would hold the workspace (and
    /// leave nothing to save, the walk skipping the store); carries the store and the root.
    #[error(
        "the store {store} would hold the workspace {root}: name a directory outside the workspace, or inside it"
    )]
    StoreHoldsWorkspace {
        /// The store directory named.
        store: PathBuf,
        /// The workspace root.
        root: PathBuf,
    },
    /// `init` refused `/` or `$HOME` without `force`; carries that root.
    #[error("refusing to create a store in {0} (use --force to do it anyway)")]
    RefusedRoot(PathBuf),
    /// An external store recorded for another workspace root; carries the store, that root,
    /// and the directory the command ran in.
    #[error(
        "the store {store} belongs to the workspace at {root}, and {here} is not inside it: give this directory a store of its own, or run `snap init --force` here if the workspace moved"
    )]
    ForeignStore {
        /// The store directory.
        store: PathBuf,
        /// The root the store recorded.
        root: PathBuf,
        /// Where the command ran.
        here: PathBuf,
    },
    /// A move stopped between two files because the process was asked to stop; its marker
    /// stays, and the next writing command (or `recover`) finishes it.
    #[error(
        "stopped by a signal between two files; the working tree is part-way, and `snap recover` (or any writing command) finishes the move"
    )]
    Interrupted,
    /// A file's stat kept changing across every re-read, so no consistent content was captured.
    #[error("{path}: kept changing while it was read; try again when it is quiet")]
    Unstable {
        /// The file.
        path: PathBuf,
    },
    /// A streamed (large) file changed under every read: a save leaves it out and names it.
    #[error("{path}: kept changing while it was read (is a job writing it?)")]
    StillWriting {
        /// The file.
        path: PathBuf,
    },
    /// Another process changed a path that an undo, redo or restore was about to replace or
    /// remove, after the scan that saved it; nothing was changed.
    #[error(
        "{path} changed while snap was working (is another process writing the workspace?); \
         nothing was changed, run the command again"
    )]
    ChangedDuringMove {
        /// The path that changed.
        path: PathBuf,
    },
    /// The directory walk failed.
    #[error("scanning {path}: {why}")]
    Scan {
        /// Where the walk failed.
        path: PathBuf,
        /// What the walker reported.
        why: String,
    },
    /// `config.toml` is unreadable or invalid.
    #[error("config {path}: {why}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// The parse or validation error.
        why: String,
    },
    /// The directory of the watchers' sockets is not this user's alone.
    #[error(
        "{0} is not a directory of this user's alone (mode 0700): refusing to use it for the watcher's socket"
    )]
    SharedSocketDir(PathBuf),

    /// Undo cannot take the steps asked for (zero, or past the history); carries why.
    #[error("nothing to undo: {0}")]
    NothingToUndo(String),
    /// The redo stack holds fewer snapshots than asked for (or zero were); carries why.
    #[error("nothing to redo: {0}")]
    NothingToRedo(String),
    /// A session (or session prefix) no snapshot was saved with; carries it as given.
    #[error("no snapshot was saved with session {0:?}")]
    UnknownSession(String),
    /// A session prefix that begins several sessions.
    #[error("session {given:?} is ambiguous: {}", candidates.join(", "))]
    AmbiguousSession {
        /// The prefix as given.
        given: String,
        /// Every session it begins.
        candidates: Vec<String>,
    },
    /// An operation that needs a snapshot ran before the first save.
    #[error("there are no snapshots yet")]
    NoSnapshots,
    /// A path asked for is absent; carries the path (lossy UTF-8) and the snapshot (`#SEQ`).
    #[error("path {0} is not in snapshot {1}")]
    PathNotInSnapshot(String, String),
    /// A file too large to hold in memory whole, asked for where only that would do.
    #[error(
        "{path} is {size} bytes, too large to read whole (over {limit}); `snap cat` streams it"
    )]
    TooLargeToRead {
        /// The path (lossy UTF-8).
        path: String,
        /// Its size.
        size: u64,
        /// The limit it passed.
        limit: u64,
    },
    /// `blame` of a file that is not text.
    #[error("{0} is a binary file: blame reads text")]
    BinaryFile(String),
    /// `revert` of a snapshot whose parent is gone from the store (pruned), or of a first
    /// snapshot: there is no earlier state to go back to; carries the snapshot (`#N`).
    #[error(
        "cannot revert {0}: the snapshot before it is not in the store (pruned, or it is a first snapshot); `snap restore` can go back to any snapshot there is"
    )]
    ParentPruned(String),
    /// `revert` of a snapshot (or turn) that changed nothing, or of a turn where there is
    /// none; carries why.
    #[error("nothing to revert: {0}")]
    NothingToRevert(String),
    /// `expunge` refused before it changed anything; carries why.
    #[error("expunge refused: {0}")]
    ExpungeRefused(String),
    /// A path given on the command line resolves outside the workspace root.
    #[error("{path} is outside the workspace {root}")]
    OutsideWorkspace {
        /// The path as given.
        path: PathBuf,
        /// The workspace root.
        root: PathBuf,
    },
    /// Changing one path of the working tree failed.
    #[error("cannot {action} {path}: {why}")]
    Restore {
        /// The step that failed, e.g. `remove` or `create directory`.
        action: &'static str,
        /// The absolute path of the entry.
        path: PathBuf,
        /// The OS error, or the conflict (a symlinked parent, an ignored file in the way).
        why: String,
    },
    /// An interrupted-operation marker cannot be decoded, or names the wrong operation.
    #[error("interrupted-operation marker {path} is unreadable: {why}")]
    BadMarker {
        /// The marker file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
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
            TreeError::NothingToUndo(_)
                | TreeError::NothingToRedo(_)
                | TreeError::NothingToRevert(_)
        )
    }
}
