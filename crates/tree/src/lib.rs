//! snap-tree: the working-tree side of snap.
//!
//! It owns what is tracked (the four ignore layers of DESIGN §5), the parallel scanner, saving a
//! tree into the store, diffs between trees, the crash-safe restore engine (§7), and
//! [`Workspace`], which carries out save, undo, redo and restore (§6). It knows nothing of
//! argument parsing or terminals.
//!
//! ```no_run
//! use snap_tree::{SaveOptions, Workspace};
//! # fn main() -> Result<(), snap_tree::TreeError> {
//! let ws = Workspace::init(std::path::Path::new("."), None, false)?;
//! let saved = ws.save(&SaveOptions { message: "after tool call".into(), ..SaveOptions::default() })?;
//! if saved.snapshot.is_some() {
//!     ws.undo(1, false)?;
//! }
//! # Ok(())
//! # }
//! ```

mod config;
pub mod diff;
mod error;
pub mod flat;
mod marker;
mod observer;
pub mod restore;
pub mod scan;
mod workspace;

pub use config::{Config, DEFAULT_MAX_FILE_SIZE, RetentionConfig, parse_duration};
pub use diff::{DiffEntry, FileDiff, Side, TreeDiff};
pub use error::TreeError;
pub use flat::{Change, FlatTree, Node};
pub use marker::{Marker, Op};
pub use observer::{Event, Observer, Phase};
pub use scan::ScanReport;
pub use snap_store::{self, EntryKind, ObjectId, SnapshotKind, SnapshotRecord};
pub use workspace::{
    LogEntry, MoveOutcome, PathChange, Recovered, SaveOptions, SaveOutcome, Snapshot, Status,
    Workspace, find_root, repair,
};
