//! snap-store: snap's content-addressed object store.
//!
//! Objects (chunks, chunk lists, trees, snapshot records) are identified by the BLAKE3 of their
//! kind and bytes, stored zstd-compressed (or raw) in sealed pack files, and located through a
//! redb catalog that also holds the snapshot records, HEAD and the redo stack. The store knows
//! nothing of working trees. The byte layout is in docs/FORMAT.md.

mod budget;
mod catalog;
mod catalog_file;
pub mod delta;
mod dircache;
mod error;
pub mod fsio;
mod id;
mod identity;
mod lifecycle;
mod lock;
mod merge;
mod object;
mod orphans;
pub mod pack;
mod packframes;
mod refs;
pub mod relpath;
mod repair;
mod seen;
pub mod slice;
mod spill;
mod statcache;
mod statrows;
mod store;
#[doc(hidden)]
pub mod testing;
mod verify;
mod writer;

/// A map keyed by workspace paths, hashed with foldhash instead of std's SipHash: a save
/// looks each directory up in several of them, and the swap made a small-change save at
/// 100k files measurably faster above the walk (docs/PERFORMANCE.md). The keys are
/// the user's own names; flooding one's own map is no threat to guard against.
pub type PathMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use budget::{BUDGET_KEEPS_UNDO, BUDGET_ROUNDS, BudgetReport};
pub use catalog::{
    CATALOG_VERSION, Commit, HistoryState, Location, decode_snapshot_row, encode_location,
};
pub use dircache::{DirCache, DirCacheUpdate, DirHeader, DirRecord, ListedKind, encode_dir_record};
pub use error::StoreError;
pub use id::{ID_LEN, ObjectId};
pub use identity::{IDENTITY_FILE, WORKSPACE_ID_LEN, WorkspaceIdentity};
pub use lifecycle::{GcReport, PruneReport, REPACK_LIVE_SHARE, Retention, StoreStats};
pub use lock::{
    DEFAULT_LOCK_TIMEOUT, cap_lock_wait, lock_timeout, on_lock_wait, stop_lock_wait_on,
};
pub use merge::{
    AUTO_MERGE_BYTES, AUTO_MERGE_PACKS, MERGE_MAX_OBJECTS, MERGE_MAX_PACK_OBJECTS, MergeReport,
};
pub use object::{
    ChangeStats, ChunkList, ChunkRef, EntryKind, ObjectKind, PERMISSION_BITS, RECORD_VERSION,
    SnapshotKind, SnapshotRecord, TREE_VERSION, Tree, TreeEntry, check_entry_name, decode_record,
    encode_record,
};
pub use packframes::PackFrames;
pub use repair::RepairReport;
pub use statcache::{
    EncodedEntry, MAX_STAT_ENTRY_LEN, STAT_KEY_LEN, ScanMemo, StatCacheUpdate, StatEntry, StatKey,
    WalkMemo,
};
pub use statrows::StatRows;
pub use store::Store;
pub use verify::{Problem, VerifyReport};
pub use writer::ObjectWriter;
