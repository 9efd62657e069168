//! Where remote bytes live: the [`Remote`] trait, five synchronous calls every backend
//! answers, and its three backends: in memory (tests), `file://` (a directory: tests, NAS
//! mounts) and `s3://` (any S3-compatible server).
//!
//! The trait is what snap's remote layout needs and no more: objects are written once,
//! create-only, and never changed, so no call overwrites. A backend that cannot refuse a
//! second create of one key cannot hold refs safely, and `snap remote add` refuses it.

pub mod file;
pub mod memory;
#[cfg(feature = "s3")]
pub mod s3;

use std::ops::Range;

use crate::RemoteError;

/// What a create-only put found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Put {
    /// The object did not exist and now holds the bytes given.
    Created,
    /// An object of that key existed already; it was left as it was.
    Exists,
}

/// One object a listing found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its key, relative to the remote's prefix.
    pub key: String,
    /// Its length in bytes.
    pub size: u64,
}

/// An object store holding one snap remote, keys relative to its prefix (`packs/...`).
pub trait Remote: Send + Sync + std::fmt::Debug {
    /// Stores `body` under `key` unless an object of that key exists: exactly one of any
    /// number of racing creates of one key returns [`Put::Created`].
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError>;
    /// The object's bytes (`range` of them when given); `None` when there is no such object.
    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError>;
    /// Every object whose key starts with `prefix`, in key order.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError>;
    /// Removes the object; removing one that is absent is no error.
    fn delete(&self, key: &str) -> Result<(), RemoteError>;
    /// How the remote is named to a person (its URL, credentials never included).
    fn describe(&self) -> String;
}

/// Opens the remote a URL names: `file:///path`, `s3://bucket/prefix` or `memory://name`
/// (a process-wide in-memory remote, for tests).
pub fn open(url: &str) -> Result<Box<dyn Remote>, RemoteError> {
    if let Some(path) = url.strip_prefix("file://") {
        return Ok(Box::new(file::FileRemote::open(std::path::Path::new(
            path,
        ))?));
    }
    if let Some(name) = url.strip_prefix("memory://") {
        return Ok(Box::new(memory::MemoryRemote::named(name)));
    }
    if url.starts_with("s3://") {
        return open_s3(url);
    }
    Err(RemoteError::BadUrl {
        url: url.to_string(),
        why: "expected s3://bucket/prefix or file:///path".into(),
    })
}

#[cfg(feature = "s3")]
fn open_s3(url: &str) -> Result<Box<dyn Remote>, RemoteError> {
    Ok(Box::new(s3::S3Remote::open(url)?))
}

#[cfg(not(feature = "s3"))]
fn open_s3(url: &str) -> Result<Box<dyn Remote>, RemoteError> {
    Err(RemoteError::BadUrl {
        url: url.to_string(),
        why: "this snap was built without S3 support (feature s3)".into(),
    })
}
