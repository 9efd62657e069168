//! The key objects of an encrypted remote (`keys/<name>`, FORMAT.md 9.1): made with the
//! remote, added and removed by `snap remote key`, tried one by one with a passphrase.
//!
//! The first key object is `keys/initial`, written create-only before the marker: of two
//! machines making one remote at once, exactly one master key wins and the other machine
//! opens it with its own passphrase (or is told that passphrase opens no key).

use crate::backend::{Put, Remote};
use crate::crypt::{CryptError, KdfParams, KeyObject, MasterKey};
use crate::layout::{self, Marker};
use crate::sealed::KEYS;
use crate::{RemoteError, retry};

/// The key object a new remote's master key is first wrapped in.
pub const INITIAL: &str = "keys/initial";

/// One key object, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEntry {
    /// Its key on the remote (`keys/...`).
    pub key: String,
    /// The object.
    pub object: KeyObject,
}

/// Every key object on the remote, in key order.
pub fn list(remote: &dyn Remote) -> Result<Vec<KeyEntry>, RemoteError> {
    let mut out = Vec::new();
    for listed in retry(|| remote.list(KEYS))? {
        let Some(bytes) = retry(|| remote.get(&listed.key, None))? else {
            continue;
        };
        let object = KeyObject::decode(&listed.key, &bytes)?;
        out.push(KeyEntry {
            key: listed.key,
            object,
        });
    }
    Ok(out)
}

/// The master key the first key object that `passphrase` opens holds. A key object that is
/// malformed is passed over while another may open; none opening is
/// [`CryptError::WrongPassphrase`].
pub fn unlock(remote: &dyn Remote, passphrase: &[u8]) -> Result<MasterKey, RemoteError> {
    let entries = list(remote)?;
    if entries.is_empty() {
        return Err(RemoteError::Encryption {
            url: remote.describe(),
            why: "an encrypted remote with no key object (keys/ is empty)".into(),
        });
    }
    let mut bad = None;
    for entry in &entries {
        match entry.object.unwrap(&entry.key, passphrase) {
            Ok(master) => return Ok(master),
            Err(CryptError::WrongPassphrase) => {}
            Err(other) => bad = Some(other),
        }
    }
    Err(bad.unwrap_or(CryptError::WrongPassphrase).into())
}

/// Makes `remote` an encrypted one: a new master key wrapped under `passphrase` as
/// [`INITIAL`], then the layout-2 marker. Where another machine made it first, its master
/// key is opened with `passphrase` instead. A remote holding a plain layout is refused.
pub fn create(
    remote: &dyn Remote,
    passphrase: &[u8],
    params: KdfParams,
    now_ns: i64,
) -> Result<MasterKey, RemoteError> {
    if layout::read_marker(remote)? == Marker::Plain {
        return Err(RemoteError::Encryption {
            url: remote.describe(),
            why: "holds an unencrypted history; move it to the encrypted layout first".into(),
        });
    }
    let master = initial(remote, passphrase, params, now_ns)?;
    retry(|| remote.put_if_absent(layout::VERSION_KEY, layout::SEALED_VERSION_BODY))?;
    match layout::read_marker(remote)? {
        Marker::Sealed => Ok(master),
        _ => Err(RemoteError::Encryption {
            url: remote.describe(),
            why: "another snap made it a plain remote meanwhile".into(),
        }),
    }
}

/// The remote's first master key: made and written as [`INITIAL`] (create-only), or, when
/// that object is there already, opened with `passphrase`.
pub fn initial(
    remote: &dyn Remote,
    passphrase: &[u8],
    params: KdfParams,
    now_ns: i64,
) -> Result<MasterKey, RemoteError> {
    let master = MasterKey::generate()?;
    let object = KeyObject::wrap(&master, passphrase, params, now_ns)?;
    match retry(|| remote.put_if_absent(INITIAL, &object.encode()))? {
        Put::Created => Ok(master),
        Put::Exists => unlock(remote, passphrase),
    }
}

/// Wraps `master` under a new passphrase as `keys/<16 random bytes hex>`; returns its key.
pub fn add(
    remote: &dyn Remote,
    master: &MasterKey,
    passphrase: &[u8],
    params: KdfParams,
    now_ns: i64,
) -> Result<String, RemoteError> {
    let object = KeyObject::wrap(master, passphrase, params, now_ns)?;
    let mut name = [0u8; 16];
    getrandom::fill(&mut name).map_err(|e| CryptError::Random { why: e.to_string() })?;
    let hex: String = name.iter().map(|b| format!("{b:02x}")).collect();
    let key = format!("{KEYS}{hex}");
    retry(|| remote.put_if_absent(&key, &object.encode()))?;
    Ok(key)
}

/// Deletes the key object `name` (`keys/<name>` or its name alone). The last one is
/// refused: without a key object no passphrase opens the remote again.
pub fn remove(remote: &dyn Remote, name: &str) -> Result<String, RemoteError> {
    let key = match name.starts_with(KEYS) {
        true => name.to_string(),
        false => format!("{KEYS}{name}"),
    };
    let entries = list(remote)?;
    if !entries.iter().any(|e| e.key == key) {
        return Err(RemoteError::Encryption {
            url: remote.describe(),
            why: format!("holds no key object {key}"),
        });
    }
    if entries.len() == 1 {
        return Err(RemoteError::Encryption {
            url: remote.describe(),
            why: format!("{key} is its last key object; add another first"),
        });
    }
    retry(|| remote.delete(&key))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryRemote;

    /// Small parameters: these tests check the key objects, not Argon2's cost.
    const FAST: KdfParams = KdfParams {
        m_kib: 64,
        t: 1,
        p: 1,
    };

    #[test]
    fn a_remote_opens_with_each_passphrase_until_its_key_goes() {
        let remote = MemoryRemote::default();
        let master = create(&remote, b"first", FAST, 1).expect("create");
        let second = add(&remote, &master, b"second", FAST, 2).expect("add");
        let opened = unlock(&remote, b"second").expect("second opens");
        assert_eq!(opened.to_bytes(), master.to_bytes());
        remove(&remote, INITIAL).expect("remove the first");
        let err = unlock(&remote, b"first").expect_err("first removed");
        assert!(
            err.to_string().contains("no key of this remote opens"),
            "{err}"
        );
        let last = remove(&remote, &second).expect_err("the last key stays");
        assert!(last.to_string().contains("last key object"), "{last}");
    }

    #[test]
    fn a_second_maker_opens_the_first_key_or_is_refused() {
        let remote = MemoryRemote::default();
        let first = create(&remote, b"pass", FAST, 1).expect("create");
        let again = create(&remote, b"pass", FAST, 2).expect("same passphrase");
        assert_eq!(again.to_bytes(), first.to_bytes());
        let err = create(&remote, b"other", FAST, 3).expect_err("other passphrase");
        assert!(
            err.to_string().contains("no key of this remote opens"),
            "{err}"
        );
    }

    #[test]
    fn makers_racing_on_one_new_remote_end_with_one_master_key() {
        let remote = MemoryRemote::default();
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..6)
                .map(|i| {
                    let remote = remote.clone();
                    s.spawn(move || create(&remote, b"shared", FAST, i).expect("create"))
                })
                .collect();
            (racers.into_iter())
                .map(|r| r.join().expect("racer").to_bytes().to_vec())
                .collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]), "one master key wins");
        assert_eq!(list(&remote).expect("list").len(), 1, "one key object");
    }

    #[test]
    fn a_plain_remote_is_not_made_encrypted_in_place() {
        let remote = MemoryRemote::default();
        remote
            .put_if_absent(layout::VERSION_KEY, layout::VERSION_BODY)
            .expect("marker");
        let err = create(&remote, b"pass", FAST, 1).expect_err("plain");
        assert!(err.to_string().contains("unencrypted"), "{err}");
    }
}
