//! The caches a scan trusts only when the filesystem agrees: the stat cache (a tracked file's
//! stat key and content id, docs/FORMAT.md 6), the rows a scan hands to its commit, and the
//! directory cache (a directory's stat, its ignore files' stats and the entries its rules let
//! through), and the files the last save could not keep ([`untracked`]). Rows are encoded here; the catalog stores them. A save is correct with every
//! cache empty: a wrong or missing row costs a re-read, never a wrong snapshot.

pub(crate) mod dir;
pub(crate) mod rows;
pub(crate) mod stat;
pub(crate) mod untracked;

pub use dir::{DirCache, DirCacheUpdate, DirHeader, DirRecord, ListedKind, encode_dir_record};
pub use rows::StatRows;
pub use stat::{
    EncodedEntry, MAX_STAT_ENTRY_LEN, STAT_KEY_LEN, ScanMemo, StatCacheUpdate, StatEntry, StatKey,
    WATCH_MEMO_LEN, WalkMemo, WatchMemo,
};
pub use untracked::{UntrackedFile, UntrackedWhy};
