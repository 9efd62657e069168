//! Where remote bytes live: the [`Remote`] trait, five synchronous calls every backend
//! answers, and its three backends: in memory (tests, never named by a URL), `file://` (a
//! directory: tests, NAS mounts) and `s3://` (any S3-compatible server).
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
use crate::url::RemoteUrl;

/// The largest object a get reads: remote packs are at most a few tens of MiB, so a larger
/// object is damage (or hostile), refused before any buffer is allocated for it.
pub const MAX_GET: u64 = 1 << 30;

/// How old a killed put's leftover must be before a sweep removes it: a put still running
/// writes its temporary file within moments, so one this old is no live put's.
pub const STALE_TMP_AGE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

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
    /// [`Remote::put_if_absent`] of a buffer the caller gives up: a backend that transforms
    /// bodies (crate::sealed) does so where they lie. Bodies of a pack's size come this way.
    fn put_owned(&self, key: &str, body: Vec<u8>) -> Result<Put, RemoteError> {
        self.put_if_absent(key, &body)
    }
    /// The object's bytes (`range` of them when given); `None` when there is no such object.
    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError>;
    /// Every object whose key starts with `prefix`, in key order.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError>;
    /// Removes the object; removing one that is absent is no error.
    fn delete(&self, key: &str) -> Result<(), RemoteError>;
    /// How the remote is named to a person (its URL, credentials never included).
    fn describe(&self) -> String;
    /// Removes what killed puts left in the backend's own scratch space, older than `age`;
    /// returns how many. Backends without one have nothing to sweep.
    fn sweep_stale(&self, age: std::time::Duration) -> Result<usize, RemoteError> {
        let _ = age;
        Ok(0)
    }
    /// How objects are named here: by their ids on a plain remote, by keyed tokens on an
    /// encrypted one (crate::sealed).
    fn names(&self) -> crate::names::Names {
        crate::names::Names::Plain
    }
}

/// Whether opening a remote may create it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The remote must exist already (a `file://` directory that is there); what opens it
    /// only reads, or writes into a remote that a push or `remote add --create` made.
    Existing,
    /// A `file://` directory is made if absent: `snap push` and `snap remote add --create`.
    Create,
}

/// Opens the remote a URL names (`file:///path` or `s3://bucket/prefix`, parsed by
/// [`crate::url::parse`]). `memory://` is refused: tests open an in-memory remote directly.
pub fn open(url: &str, reach: Reach) -> Result<Box<dyn Remote>, RemoteError> {
    match crate::url::parse(url)? {
        RemoteUrl::File(path) => Ok(Box::new(file::FileRemote::open(&path, reach)?)),
        RemoteUrl::S3 { bucket, prefix } => open_s3(url, &bucket, &prefix),
    }
}

#[cfg(feature = "s3")]
fn open_s3(url: &str, bucket: &str, prefix: &str) -> Result<Box<dyn Remote>, RemoteError> {
    Ok(Box::new(s3::S3Remote::open(url, bucket, prefix)?))
}

#[cfg(not(feature = "s3"))]
fn open_s3(url: &str, _bucket: &str, _prefix: &str) -> Result<Box<dyn Remote>, RemoteError> {
    Err(RemoteError::BadUrl {
        url: url.to_string(),
        why: "this snap was built without S3 support (feature s3)".into(),
    })
}
