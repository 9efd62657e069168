//! An encrypted remote (layout 2) seen through the [`Remote`] trait: every object but the
//! marker and the key objects is sealed on its way up ([`MasterKey::seal`], the object's key
//! as associated data) and opened on its way down, so a flipped byte, a cut object or an
//! object moved to another key is [`RemoteError::Corrupt`] naming it, and nothing of it is
//! used. Callers name objects through [`Remote::names`], which hands out keyed tokens here.

use std::ops::Range;
use std::sync::Arc;

use crate::RemoteError;
use crate::backend::{Listed, Put, Remote};
use crate::crypt::{CryptError, MasterKey};
use crate::layout::VERSION_KEY;
use crate::names::Names;

/// The folder of the key objects, in the clear.
pub const KEYS: &str = "keys/";

/// A backend whose objects are sealed under a master key.
#[derive(Debug)]
pub struct Sealed {
    inner: Box<dyn Remote>,
    key: Arc<MasterKey>,
}

impl Sealed {
    /// `inner`, its objects sealed under `key`.
    pub fn new(inner: Box<dyn Remote>, key: MasterKey) -> Sealed {
        Sealed {
            inner,
            key: Arc::new(key),
        }
    }
}

/// The marker and the key objects are the clear part of layout 2.
fn in_clear(key: &str) -> bool {
    key == VERSION_KEY || key.starts_with(KEYS)
}

/// A failed open as the remote's error: the object, and that it fails authentication.
fn damaged(error: CryptError, key: &str) -> RemoteError {
    let why = match error {
        CryptError::Tampered { .. } => {
            "fails authentication: damaged, cut short, or moved from another key".to_string()
        }
        other => other.to_string(),
    };
    RemoteError::Corrupt {
        key: key.to_string(),
        why,
    }
}

impl Remote for Sealed {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        if in_clear(key) {
            return self.inner.put_if_absent(key, body);
        }
        let sealed = self.key.seal(key, body).map_err(|e| damaged(e, key))?;
        self.inner.put_if_absent(key, &sealed)
    }

    fn put_owned(&self, key: &str, body: Vec<u8>) -> Result<Put, RemoteError> {
        if in_clear(key) {
            return self.inner.put_if_absent(key, &body);
        }
        let sealed = self.key.seal_vec(key, body).map_err(|e| damaged(e, key))?;
        self.inner.put_if_absent(key, &sealed)
    }

    /// The whole object is read and opened, then `range` cut from the plaintext: an
    /// authenticated object cannot be checked in part.
    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        if in_clear(key) {
            return self.inner.get(key, range);
        }
        let Some(sealed) = self.inner.get(key, None)? else {
            return Ok(None);
        };
        let plain = self
            .key
            .open_vec(key, sealed)
            .map_err(|e| damaged(e, key))?;
        Ok(Some(match range {
            None => plain,
            Some(r) => {
                let end = usize::try_from(r.end)
                    .unwrap_or(usize::MAX)
                    .min(plain.len());
                let start = usize::try_from(r.start).unwrap_or(usize::MAX).min(end);
                plain[start..end].to_vec()
            }
        }))
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        self.inner.list(prefix)
    }

    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        self.inner.delete(key)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn sweep_stale(&self, age: std::time::Duration) -> Result<usize, RemoteError> {
        self.inner.sweep_stale(age)
    }

    fn names(&self) -> Names {
        Names::Keyed(self.key.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryRemote;

    fn sealed() -> (MemoryRemote, Sealed) {
        let raw = MemoryRemote::default();
        let key = MasterKey::generate().expect("random");
        (raw.clone(), Sealed::new(Box::new(raw), key))
    }

    #[test]
    fn objects_are_sealed_and_bound_to_their_key() {
        let (raw, remote) = sealed();
        remote
            .put_if_absent("sealed/snapshots/a", b"secret body")
            .expect("put");
        remote
            .put_if_absent("sealed/snapshots/b", b"other body")
            .expect("put");
        let stored = raw
            .get("sealed/snapshots/a", None)
            .expect("get")
            .expect("there");
        assert!(!stored.windows(6).any(|w| w == b"secret"));
        let read = remote.get("sealed/snapshots/a", Some(7..11)).expect("get");
        assert_eq!(read.as_deref(), Some(&b"body"[..]));
        // Moved to another key: refused by name.
        let other = raw
            .get("sealed/snapshots/b", None)
            .expect("get")
            .expect("there");
        raw.delete("sealed/snapshots/a").expect("delete");
        raw.put_if_absent("sealed/snapshots/a", &other)
            .expect("put");
        let err = remote.get("sealed/snapshots/a", None).expect_err("swapped");
        assert!(err.to_string().contains("sealed/snapshots/a"), "{err}");
    }

    #[test]
    fn the_marker_and_keys_stay_in_the_clear() {
        let (raw, remote) = sealed();
        remote
            .put_if_absent(VERSION_KEY, b"snap-remote 2\n")
            .expect("put");
        remote.put_if_absent("keys/initial", b"{}").expect("put");
        assert_eq!(
            raw.get(VERSION_KEY, None).expect("get").as_deref(),
            Some(&b"snap-remote 2\n"[..])
        );
        assert_eq!(
            raw.get("keys/initial", None).expect("get").as_deref(),
            Some(&b"{}"[..])
        );
    }
}
