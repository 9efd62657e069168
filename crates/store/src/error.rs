//! The store's error type. Every variant names the path or object involved.

use std::path::{Path, PathBuf};

use crate::ObjectId;

/// Errors of the object store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// The underlying OS error.
        source: std::io::Error,
    },
    /// A write into a new pack failed earlier, losing the frames that pack held: nothing of
    /// the writer may be committed. Carries the store directory.
    #[error("a write into a new pack in {0} failed earlier; nothing of it was kept")]
    WriterFailed(PathBuf),
    /// The directory holds no store (no `packs/` in it); carries the store directory.
    #[error("no snap store at {0}")]
    NotFound(PathBuf),
    /// Making a store in a directory that holds something else; carries the directory and
    /// one entry that is not snap's.
    #[error(
        "refusing to make a store in {dir}: it holds {entry}, which is not snap's (give --store an empty or new directory)"
    )]
    ForeignEntries {
        /// The directory named as the store.
        dir: PathBuf,
        /// An entry in it that a store does not have.
        entry: String,
    },
    /// Creating a store where one already exists; carries its directory.
    #[error("a snap store already exists at {0}")]
    AlreadyExists(PathBuf),
    /// The catalog was written by a newer snap; nothing is read from it.
    #[error(
        "the store at {path} has format version {found}; this snap reads up to {supported}: upgrade snap"
    )]
    NewerFormat {
        /// The catalog file.
        path: PathBuf,
        /// Format version recorded in the catalog.
        found: u32,
        /// Highest format version this build reads ([`crate::CATALOG_VERSION`]).
        supported: u32,
    },
    /// The catalog file is missing, empty or not a redb database; `repair` rebuilds it.
    #[error(
        "the catalog {path} is unreadable ({why}); run `snap repair` to rebuild it from the packs"
    )]
    CatalogUnreadable {
        /// The catalog file.
        path: PathBuf,
        /// What opening it reported.
        why: String,
    },
    /// A catalog transaction failed, or a catalog record is malformed.
    #[error("catalog {path}: {why}")]
    Catalog {
        /// The catalog file.
        path: PathBuf,
        /// The redb error or the malformed record.
        why: String,
    },
    /// A pack the catalog names has no file (deleted by hand, or the catalog was put back
    /// from an older copy that names packs a later gc or merge replaced).
    #[error(
        "pack {0} is missing (`snap verify` names what it held; if the catalog was put back from an older copy, `snap repair` rebuilds it from the packs that are there)"
    )]
    MissingPack(PathBuf),
    /// A pack's header, frame headers, trailer or body hash are wrong.
    #[error("pack {path} is damaged: {why}")]
    CorruptPack {
        /// The pack file.
        path: PathBuf,
        /// Which check failed, with the offset where there is one.
        why: String,
    },
    /// An object's bytes fail to decompress, hash to its id or decode as its kind.
    #[error("object {id} is damaged: {why}")]
    CorruptObject {
        /// The damaged object (all zeros for a catalog row too short to name one).
        id: ObjectId,
        /// Which check failed.
        why: String,
    },
    /// An object stored as a delta whose base cannot be read; `base` is the first failure
    /// down the chain (a chain names what broke once, not every link above it).
    #[error("object {id} is damaged: its delta base: {base}")]
    BrokenBase {
        /// The object read.
        id: ObjectId,
        /// Why its base (or a base further down its chain) could not be read.
        base: Box<StoreError>,
    },
    /// The catalog has no location, or no snapshot record, for this id.
    #[error("object {id} is missing from the store")]
    MissingObject {
        /// The object asked for.
        id: ObjectId,
    },
    /// An object was read as one kind but is stored as another.
    #[error("object {id} is a {found:?}, expected a {expected:?}")]
    WrongKind {
        /// The object read.
        id: ObjectId,
        /// The kind the caller asked for.
        expected: crate::ObjectKind,
        /// The kind its frame records.
        found: crate::ObjectKind,
    },
    /// An object or its stored payload does not fit a frame's u32 length fields.
    #[error("object {id} is too large ({len} bytes)")]
    ObjectTooLarge {
        /// The object that does not fit.
        id: ObjectId,
        /// Its length in bytes, raw or compressed.
        len: u64,
    },
    /// The store cannot be written (a read-only mount, or no write permission); carries the
    /// file that refused.
    #[error("the store is read-only ({0}); this command needs to write to it")]
    ReadOnly(PathBuf),
    /// Another process held the store lock for the whole lock timeout.
    #[error("the store is locked by {holder} (waited {waited_secs}s); is another snap running?")]
    Locked {
        /// What the lock file says of its holder (`pid N`), or `another process`.
        holder: String,
        /// How long this process waited, in whole seconds.
        waited_secs: u64,
    },
    /// The process was asked to stop (a signal) while it waited for the store lock.
    #[error("stopped while waiting for the store lock, held by {holder}; nothing was changed")]
    LockWaitStopped {
        /// What the lock file says of its holder (`pid N`), or `another process`.
        holder: String,
    },
    /// One of the store's own files is a symlink, which snap never follows.
    #[error("{0} is a symlink; snap never follows links among its own files (remove it)")]
    Symlink(PathBuf),
    /// `.snap/workspace` is damaged; carries its path.
    #[error("{0} is damaged")]
    BadIdentity(PathBuf),
    /// An environment variable whose value cannot be used.
    #[error("{name}={value:?}: {why}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// Its value, as given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// A well-formed snapshot reference that matches no snapshot; carries the reference.
    #[error("unknown snapshot reference {0:?}")]
    UnknownRef(String),
    /// An id prefix that matches several snapshots.
    #[error("snapshot reference {reference:?} is ambiguous: {}", candidates.join(", "))]
    AmbiguousRef {
        /// The prefix as given.
        reference: String,
        /// Each matching snapshot as `<short id> (#SEQ)`.
        candidates: Vec<String>,
    },
    /// A malformed reference, or one that reaches past the history (`@~N` too deep).
    #[error("bad snapshot reference {reference:?}: {why}")]
    BadRef {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
}

impl StoreError {
    /// True when what the store holds is damaged or missing (a pack, an object, a delta
    /// base), as opposed to the store being unreachable: `verify` and `repair` are then the
    /// way on.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            StoreError::CorruptPack { .. }
                | StoreError::CorruptObject { .. }
                | StoreError::BrokenBase { .. }
                | StoreError::MissingObject { .. }
        )
    }

    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
