//! snap-tree: the working-tree side of snap.
//!
//! It owns what is tracked (the four ignore layers, ARCHITECTURE.md), the parallel scanner, saving a
//! tree into the store, diffs between trees, the crash-safe restore engine (§7), and
//! [`Workspace`], which carries out save, undo, redo and restore (§6). It knows nothing of
//! argument parsing or terminals.
//!
//! ```
//! use snap_tree::{SaveOptions, Workspace};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("notes.txt");
//! std::fs::write(&file, "first draft\n")?;
//!
//! let ws = Workspace::init(dir.path(), None, false)?;
//! ws.save(&SaveOptions { message: "before tool call".into(), ..SaveOptions::default() })?;
//!
//! std::fs::write(&file, "rewritten by a tool\n")?;
//! let saved = ws.save(&SaveOptions { message: "after tool call".into(), ..SaveOptions::default() })?;
//! assert!(saved.snapshot.is_some());
//!
//! ws.undo(1, snap_tree::Run::Apply)?;
//! assert_eq!(std::fs::read_to_string(&file)?, "first draft\n");
//! # Ok(())
//! # }
//! ```

mod capture;
mod config;
pub mod diff;
pub mod display;
mod error;
pub mod flat;
pub mod history;
mod inside;
mod interrupt;
mod marker;
mod moves;
mod observer;
mod parts;
mod paths;
mod record;
mod restore;
mod scan;
pub mod secrets;
mod snapshot;
mod source;
#[cfg(feature = "testing")]
pub mod testing;
mod testing_hooks;
mod upkeep;
pub mod watcher;
mod workspace;

pub use config::{
    Config, DEFAULT_MAX_FILE_SIZE, RemoteConfig, RetentionConfig, WatchConfig, add_exclude_path,
    add_remote, parse_duration, remove_exclude_path, remove_remote,
};
pub use diff::{DiffEntry, FileDiff, Side, TreeDiff};
pub use error::TreeError;
pub use flat::{Change, FlatTree, Node};
pub use history::{
    AUTOSAVE_KEY, Autosaves, Folded, History, Item, Lines, PROMPT_EVENT, Standing, fold_autosaves,
    is_autosave,
};
pub use interrupt::stop_moves_on;
pub use marker::{Marker, Op};
pub use observer::{Event, Observer, Phase};
pub use paths::STORE_DIR;
pub use restore::is_temp_name;
pub use scan::{ScanReport, Unreadable};
pub use source::{
    ChangeSource, Changes, DirtyDir, Scope, WatchPlan, WatchToken, watch_plan, watch_tree,
};
// The store's types that the layers above name (the CLI, the Python crate, benches): named
// here, so the CLI depends on the tree alone and never reaches into the store.
pub use capture::large::{LargeCost, LargeFile};
pub use capture::save::{SaveOutcome, Status};
pub use history::blame::BlameLine;
pub use history::sessions::Told;
pub use moves::{MoveOutcome, RevertOf, RevertOutcome};
pub use parts::Run;
pub use record::SaveOptions;
pub use snap_store::fs::staging::{owner_gone, owner_in};
pub use snap_store::fs::write_atomic;
pub use snap_store::{
    EntryKind, FileChunks, GcReport, ObjectId, Pulled, PurgeReport, Retention, SnapshotKind,
    SnapshotRecord, Staging, Store, StoreError, StoreStats, UntrackedFile, UntrackedWhy,
    cap_lock_wait, on_lock_wait, stop_lock_wait_on,
};
pub use snapshot::{
    AGENT_ID_KEY, AGENT_TYPE_KEY, Attribution, HOOK_KEY, LogEntry, MAIN_AGENT, PathChange,
    Recovered, Snapshot, TOOL_PATH_KEY,
};
pub use upkeep::export::{ExportOutcome, remove_stale_export_staging};
pub use upkeep::expunge::{ExpungeAsk, ExpungeOutcome, Renamed, Taken, Tracking};
pub use workspace::{ReadOnlyWorkspace, Workspace, find_root, repair};
