//! snap-store: snap's content-addressed object store.
//!
//! Objects (chunks, chunk lists, trees, snapshot records) are identified by the BLAKE3 of their
//! kind and bytes, stored zstd-compressed (or raw) in sealed pack files, and located through a
//! redb catalog that also holds the snapshot records, HEAD and the redo stack. The store knows
//! nothing of working trees. The byte layout is in docs/FORMAT.md; ARCHITECTURE.md maps the
//! layers:
//!
//! - [`model`]: ids, objects and records, references, the workspace identity;
//! - `pack`: the pack file and its frames (raw, zstd, delta, slice);
//! - `writer`: new objects into packs, each once;
//! - `catalog`: the redb file (locations, snapshots, history, caches, turns);
//! - `cache`: stat and directory cache rows;
//! - `lifecycle`: prune, gc, orphan packs, the size budget, pack merging;
//! - `verify` and `repair`: checking a store and rebuilding its catalog;
//! - `transfer`: objects leaving for another store (frames copied verbatim into new packs)
//!   and sealed packs arriving from one;
//! - [`fs`]: durable writes, the store lock, path bytes, spill buffers;
//! - `store`: [`Store`], the handle every layer above goes through.

mod cache;
mod catalog;
mod content;
mod error;
pub mod fs;
mod lifecycle;
pub mod model;
mod pack;
mod repair;
mod store;
/// Test hooks: with the `testing` feature, failpoints, faults, the journal and the pack
/// internals the fuzz targets read; without it, inline no-ops only.
#[doc(hidden)]
pub mod testing;
mod transfer;
mod verify;
mod writer;

/// A map keyed by workspace paths, hashed with foldhash instead of std's SipHash: a save
/// looks each directory up in several of them, and the swap made a small-change save at
/// 100k files measurably faster above the walk (docs/PERFORMANCE.md). The keys are
/// the user's own names; flooding one's own map is no threat to guard against.
pub type PathMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use cache::{
    DirCache, DirCacheUpdate, DirHeader, DirRecord, EncodedEntry, ListedKind, MAX_STAT_ENTRY_LEN,
    STAT_KEY_LEN, ScanMemo, StatCacheUpdate, StatEntry, StatKey, StatRows, UntrackedFile,
    UntrackedWhy, WATCH_MEMO_LEN, WalkMemo, WatchMemo, encode_dir_record,
};
pub use catalog::{
    CATALOG_VERSION, Commit, ExpungeRows, HistoryState, Location, Pulled, PulledChange, PurgeRow,
    decode_snapshot_row, encode_location,
};
pub use content::FileChunks;
pub use error::StoreError;
pub use fs::lock::{
    DEFAULT_LOCK_TIMEOUT, cap_lock_wait, lock_timeout, on_lock_wait, stop_lock_wait_on,
};
pub use lifecycle::{
    AUTO_MERGE_BYTES, AUTO_MERGE_PACKS, BUDGET_KEEPS_UNDO, BUDGET_ROUNDS, BudgetReport, GcReport,
    MERGE_MAX_OBJECTS, MERGE_MAX_PACK_OBJECTS, MergeReport, PruneReport, PurgeReport,
    REPACK_LIVE_SHARE, Retention, StoreStats,
};
pub use model::{
    ChangeStats, ChunkList, ChunkRef, EntryKind, ID_LEN, IDENTITY_FILE, ObjectId, ObjectKind,
    PERMISSION_BITS, RECORD_VERSION, SnapshotKind, SnapshotRecord, TREE_VERSION, Tree, TreeEntry,
    WORKSPACE_ID_LEN, WorkspaceIdentity, check_entry_name, decode_record, encode_record,
};
pub use pack::PackFrames;
pub use repair::RepairReport;
pub use store::Store;
pub use transfer::{Incoming, IncomingPurge, IncomingReport, Outgoing, SealedPack, Staging};
pub use verify::{Problem, VerifyReport};
pub use writer::ObjectWriter;
