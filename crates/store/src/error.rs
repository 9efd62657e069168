//! The store's error type. Every variant names the path or object involved.

use std::path::{Path, PathBuf};

use crate::ObjectId;

/// Errors of the object store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no snap store at {0} (run `snap init` or `snap save` first)")]
    NotFound(PathBuf),
    #[error("a snap store already exists at {0}")]
    AlreadyExists(PathBuf),
    #[error(
        "the store at {path} has format version {found}; this snap reads up to {supported}: upgrade snap"
    )]
    NewerFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error(
        "the catalog {path} is unreadable ({why}); run `snap repair` to rebuild it from the packs"
    )]
    CatalogUnreadable { path: PathBuf, why: String },
    #[error("catalog {path}: {why}")]
    Catalog { path: PathBuf, why: String },
    #[error("pack {path} is damaged: {why}")]
    CorruptPack { path: PathBuf, why: String },
    #[error("object {id} is damaged: {why}")]
    CorruptObject { id: ObjectId, why: String },
    #[error("object {id} is missing from the store")]
    MissingObject { id: ObjectId },
    #[error("object {id} is a {found:?}, expected a {expected:?}")]
    WrongKind {
        id: ObjectId,
        expected: crate::ObjectKind,
        found: crate::ObjectKind,
    },
    #[error("object {id} is too large ({len} bytes)")]
    ObjectTooLarge { id: ObjectId, len: u64 },
    #[error("the store is locked by {holder} (waited {waited_secs}s); is another snap running?")]
    Locked { holder: String, waited_secs: u64 },
    #[error("unknown snapshot reference {0:?}")]
    UnknownRef(String),
    #[error("snapshot reference {reference:?} is ambiguous: {}", candidates.join(", "))]
    AmbiguousRef {
        reference: String,
        candidates: Vec<String>,
    },
    #[error("bad snapshot reference {reference:?}: {why}")]
    BadRef { reference: String, why: String },
}

impl StoreError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
