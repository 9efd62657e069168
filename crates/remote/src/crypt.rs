//! The cryptography of an encrypted remote (docs/FORMAT.md 9.1): a random master key per
//! remote, wrapped under a passphrase by key objects (Argon2id, then XChaCha20-Poly1305);
//! every other object sealed with XChaCha20-Poly1305 under a random nonce, its remote name
//! bound in as associated data, so an object moved to another name fails to open; and the
//! keyed names objects take (BLAKE3 keyed mode), so a listing shows no content id.
//!
//! Nothing here is hand-made cryptography: the cipher is RustCrypto's `chacha20poly1305`,
//! the KDF RustCrypto's `argon2`, the names BLAKE3's keyed hash, the randomness the
//! operating system's (`getrandom`). This module only fixes the byte layouts.
//!
//! The layout that uses it (marker `snap-remote 2`) is crate::names and crate::sealed.

use chacha20poly1305::aead::{Aead, AeadInPlace, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use snap_store::ObjectId;
use zeroize::{Zeroize, Zeroizing};

/// The first byte of a sealed object: the version of this layout.
pub const SEALED_VERSION: u8 = 1;
/// XChaCha20's nonce: 24 bytes, random for every seal (collisions are negligible at any
/// number of objects a remote holds).
pub const NONCE_LEN: usize = 24;
/// Poly1305's tag, after the ciphertext.
pub const TAG_LEN: usize = 16;
/// What sealing adds to an object: version, nonce, tag.
pub const SEALED_OVERHEAD: usize = 1 + NONCE_LEN + TAG_LEN;
/// The associated data a key object's sealed master key is bound to.
const KEY_OBJECT_AAD: &[u8] = b"snap-remote key object 1";
/// Bytes of the master key: 32 for the cipher, then 32 for the names.
pub const MASTER_LEN: usize = 64;

/// Why a seal, an open or a key object failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CryptError {
    /// The object's bytes do not open under the key with this name: flipped, cut short, or
    /// put under another name.
    #[error("remote object {name} fails authentication (damaged, or moved from another name)")]
    Tampered {
        /// The object's key on the remote.
        name: String,
    },
    /// No key object opens with the passphrase given.
    #[error("no key of this remote opens with that passphrase")]
    WrongPassphrase,
    /// A key object that is not one this snap reads, or asks for a KDF beyond the bounds.
    #[error("key object {name}: {why}")]
    BadKeyObject {
        /// The key object's key on the remote.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The operating system gave no random bytes.
    #[error("no random bytes from the operating system: {why}")]
    Random {
        /// The system's error.
        why: String,
    },
}

/// A remote's master key: the cipher's key and the names' key. Zeroed when dropped.
pub struct MasterKey {
    bytes: Zeroizing<[u8; MASTER_LEN]>,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

/// `len` random bytes from the operating system.
fn random<const N: usize>() -> Result<Zeroizing<[u8; N]>, CryptError> {
    let mut out = Zeroizing::new([0u8; N]);
    getrandom::fill(out.as_mut()).map_err(|e| CryptError::Random { why: e.to_string() })?;
    Ok(out)
}

impl MasterKey {
    /// A new random key, for a new remote.
    pub fn generate() -> Result<MasterKey, CryptError> {
        Ok(MasterKey { bytes: random()? })
    }

    /// The key's bytes, for the store's 0600 key file.
    pub fn to_bytes(&self) -> Zeroizing<[u8; MASTER_LEN]> {
        self.bytes.clone()
    }

    /// A key read back from those bytes; `None` unless exactly [`MASTER_LEN`] of them.
    pub fn from_bytes(bytes: &[u8]) -> Option<MasterKey> {
        let mut key = Zeroizing::new([0u8; MASTER_LEN]);
        (bytes.len() == MASTER_LEN).then(|| {
            key.copy_from_slice(bytes);
            MasterKey { bytes: key }
        })
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(self.bytes[..32].into())
    }

    /// The sealed form of `plain` stored under the remote name `name` (see
    /// [`SEALED_VERSION`] for the layout).
    pub fn seal(&self, name: &str, plain: &[u8]) -> Result<Vec<u8>, CryptError> {
        seal_with(&self.cipher(), name.as_bytes(), plain)
    }

    /// The plaintext of an object read from the remote name `name`.
    pub fn open(&self, name: &str, sealed: &[u8]) -> Result<Vec<u8>, CryptError> {
        open_with(&self.cipher(), name.as_bytes(), sealed).ok_or_else(|| CryptError::Tampered {
            name: name.to_string(),
        })
    }

    /// [`MasterKey::seal`] of an owned buffer, sealed where it lies: no second buffer of the
    /// object's size (a pack is tens of MiB). Give it [`SEALED_OVERHEAD`] bytes of spare
    /// capacity and it never reallocates.
    pub fn seal_vec(&self, name: &str, mut plain: Vec<u8>) -> Result<Vec<u8>, CryptError> {
        let nonce = random::<NONCE_LEN>()?;
        let tag = self
            .cipher()
            .encrypt_in_place_detached(
                XNonce::from_slice(nonce.as_ref()),
                name.as_bytes(),
                &mut plain,
            )
            .map_err(|_| CryptError::Random {
                why: "the cipher refused the object (too large)".into(),
            })?;
        plain.extend_from_slice(&tag);
        let mut head = [0u8; 1 + NONCE_LEN];
        head[0] = SEALED_VERSION;
        head[1..].copy_from_slice(nonce.as_ref());
        plain.splice(0..0, head);
        Ok(plain)
    }

    /// [`MasterKey::open`] of an owned buffer, opened where it lies.
    pub fn open_vec(&self, name: &str, mut sealed: Vec<u8>) -> Result<Vec<u8>, CryptError> {
        let tampered = || CryptError::Tampered {
            name: name.to_string(),
        };
        if sealed.first() != Some(&SEALED_VERSION) || sealed.len() < SEALED_OVERHEAD {
            return Err(tampered());
        }
        let body_end = sealed.len() - TAG_LEN;
        let (head, rest) = sealed.split_at_mut(1 + NONCE_LEN);
        let (body, tag) = rest.split_at_mut(body_end - 1 - NONCE_LEN);
        let tag = chacha20poly1305::Tag::clone_from_slice(tag);
        self.cipher()
            .decrypt_in_place_detached(XNonce::from_slice(&head[1..]), name.as_bytes(), body, &tag)
            .map_err(|_| tampered())?;
        sealed.truncate(body_end);
        sealed.drain(..1 + NONCE_LEN);
        Ok(sealed)
    }

    /// The name an object with id `id` takes on the remote: the hex of BLAKE3 keyed with the
    /// names' key over the id's bytes. Without the key it says nothing of the id.
    pub fn name_of(&self, id: &ObjectId) -> String {
        self.keyed(&id.0)
    }

    /// As [`MasterKey::name_of`], for any bytes (a workspace id).
    pub fn keyed(&self, bytes: &[u8]) -> String {
        let mut key = [0u8; 32];
        key.copy_from_slice(&self.bytes[32..]);
        let hash = blake3::keyed_hash(&key, bytes);
        key.zeroize();
        hash.to_hex().to_string()
    }
}

/// Version byte, random nonce, then ciphertext and tag, with `aad` authenticated.
fn seal_with(cipher: &XChaCha20Poly1305, aad: &[u8], plain: &[u8]) -> Result<Vec<u8>, CryptError> {
    let nonce = random::<NONCE_LEN>()?;
    let payload = Payload { msg: plain, aad };
    let body = cipher
        .encrypt(XNonce::from_slice(nonce.as_ref()), payload)
        .map_err(|_| CryptError::Random {
            why: "the cipher refused the object (too large)".into(),
        })?;
    let mut out = Vec::with_capacity(SEALED_OVERHEAD + plain.len());
    out.push(SEALED_VERSION);
    out.extend_from_slice(nonce.as_ref());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The plaintext, or `None` for any other version, a short object or a failed tag.
fn open_with(cipher: &XChaCha20Poly1305, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    let (&version, rest) = sealed.split_first()?;
    if version != SEALED_VERSION || rest.len() < NONCE_LEN + TAG_LEN {
        return None;
    }
    let (nonce, body) = rest.split_at(NONCE_LEN);
    let payload = Payload { msg: body, aad };
    cipher.decrypt(XNonce::from_slice(nonce), payload).ok()
}

/// Argon2id's parameters, recorded in each key object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KdfParams {
    /// Memory, in KiB.
    pub m_kib: u32,
    /// Passes.
    pub t: u32,
    /// Lanes.
    pub p: u32,
}

impl KdfParams {
    /// What a new key object takes: 64 MiB, 3 passes, 1 lane (RFC 9106's second
    /// recommended choice, for memory-constrained machines).
    pub const DEFAULT: KdfParams = KdfParams {
        m_kib: 64 * 1024,
        t: 3,
        p: 1,
    };
    /// The most a key object may ask for: 4 GiB, 64 passes, 16 lanes. A hostile remote
    /// cannot make an open take more.
    pub const MAX: KdfParams = KdfParams {
        m_kib: 4 * 1024 * 1024,
        t: 64,
        p: 16,
    };

    fn argon2(self) -> Option<argon2::Argon2<'static>> {
        let within =
            self.m_kib <= Self::MAX.m_kib && self.t <= Self::MAX.t && self.p <= Self::MAX.p;
        let params = argon2::Params::new(self.m_kib, self.t, self.p, Some(32)).ok()?;
        within.then(|| {
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
        })
    }
}

/// A key object, `keys/<hex of 16 random bytes>` on the remote, as JSON (FORMAT.md 9.1): the
/// master key sealed under a key Argon2id derives from a passphrase and the salt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyObject {
    /// 1.
    pub format: u32,
    /// `argon2id`.
    pub kdf: String,
    /// Its parameters.
    #[serde(flatten)]
    pub params: KdfParams,
    /// 32 random bytes, hex.
    pub salt: String,
    /// The master key sealed (as [`MasterKey::seal`] lays it out, associated data
    /// `snap-remote key object 1`), hex.
    pub sealed: String,
    /// When it was made, in nanoseconds since the epoch (shown by `remote key list`).
    pub created_ns: i64,
}

impl KeyObject {
    /// Wraps `master` under `passphrase` with `params` and a fresh salt.
    pub fn wrap(
        master: &MasterKey,
        passphrase: &[u8],
        params: KdfParams,
        created_ns: i64,
    ) -> Result<KeyObject, CryptError> {
        let salt = random::<32>()?;
        let kek = derive(passphrase, salt.as_ref(), params, "new")?;
        let sealed = seal_with(&kek, KEY_OBJECT_AAD, master.bytes.as_ref())?;
        Ok(KeyObject {
            format: 1,
            kdf: "argon2id".into(),
            params,
            salt: hex(salt.as_ref()),
            sealed: hex(&sealed),
            created_ns,
        })
    }

    /// The master key, when `passphrase` opens this object.
    pub fn unwrap(&self, name: &str, passphrase: &[u8]) -> Result<MasterKey, CryptError> {
        let bad = |why: &str| CryptError::BadKeyObject {
            name: name.to_string(),
            why: why.to_string(),
        };
        if self.format != 1 || self.kdf != "argon2id" {
            return Err(bad("not a key object of a layout this snap reads"));
        }
        let salt = unhex(&self.salt)
            .filter(|s| s.len() == 32)
            .ok_or_else(|| bad("bad salt"))?;
        let sealed = unhex(&self.sealed).ok_or_else(|| bad("bad sealed key"))?;
        let kek = derive(passphrase, &salt, self.params, name)?;
        let plain = Zeroizing::new(
            open_with(&kek, KEY_OBJECT_AAD, &sealed).ok_or(CryptError::WrongPassphrase)?,
        );
        MasterKey::from_bytes(&plain).ok_or_else(|| bad("the sealed key has the wrong length"))
    }

    /// The object's bytes on the remote.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a key object's bytes (at most a few hundred; a larger one is refused).
    pub fn decode(name: &str, bytes: &[u8]) -> Result<KeyObject, CryptError> {
        let bad = |why: String| CryptError::BadKeyObject {
            name: name.to_string(),
            why,
        };
        if bytes.len() > 4096 {
            return Err(bad(format!(
                "{} bytes, more than a key object",
                bytes.len()
            )));
        }
        serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))
    }
}

/// The key-encryption key: Argon2id of `passphrase` and `salt`.
fn derive(
    passphrase: &[u8],
    salt: &[u8],
    params: KdfParams,
    name: &str,
) -> Result<XChaCha20Poly1305, CryptError> {
    let argon2 = params.argon2().ok_or_else(|| CryptError::BadKeyObject {
        name: name.to_string(),
        why: format!(
            "KDF parameters out of bounds: {params:?} (at most {:?})",
            KdfParams::MAX
        ),
    })?;
    let mut kek = Zeroizing::new([0u8; 32]);
    argon2
        .hash_password_into(passphrase, salt, kek.as_mut())
        .map_err(|e| CryptError::BadKeyObject {
            name: name.to_string(),
            why: e.to_string(),
        })?;
    Ok(XChaCha20Poly1305::new(kek.as_ref().into()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Small enough for a debug build's tests.
    const QUICK: KdfParams = KdfParams {
        m_kib: 64,
        t: 1,
        p: 1,
    };

    #[test]
    fn a_sealed_object_opens_only_under_its_name_and_key() {
        let key = MasterKey::generate().unwrap();
        let sealed = key.seal("packs/ab.pack", b"frames").unwrap();
        assert_eq!(sealed.len(), SEALED_OVERHEAD + 6);
        assert_eq!(key.open("packs/ab.pack", &sealed).unwrap(), b"frames");
        let moved = key.open("packs/cd.pack", &sealed);
        assert!(
            matches!(moved, Err(CryptError::Tampered { .. })),
            "{moved:?}"
        );
        let other = MasterKey::generate().unwrap();
        assert!(other.open("packs/ab.pack", &sealed).is_err());
        assert!(
            key.open("packs/ab.pack", &sealed[..SEALED_OVERHEAD - 1])
                .is_err()
        );
        assert_ne!(
            key.seal("x", b"same").unwrap(),
            key.seal("x", b"same").unwrap()
        );
    }

    #[test]
    fn names_are_keyed_and_say_nothing_of_the_id() {
        let (a, b) = (
            MasterKey::generate().unwrap(),
            MasterKey::generate().unwrap(),
        );
        let id = ObjectId::of(snap_store::ObjectKind::Chunk, b"content");
        assert_eq!(a.name_of(&id), a.name_of(&id));
        assert_ne!(a.name_of(&id), b.name_of(&id));
        assert!(!a.name_of(&id).contains(&id.to_hex()[..16]));
        let back = MasterKey::from_bytes(a.to_bytes().as_ref()).unwrap();
        assert_eq!(back.name_of(&id), a.name_of(&id));
        assert!(MasterKey::from_bytes(&[0; 63]).is_none());
    }

    #[test]
    fn a_key_object_opens_with_its_passphrase_only() {
        let master = MasterKey::generate().unwrap();
        let object = KeyObject::wrap(&master, b"correct horse", QUICK, 7).unwrap();
        let read = KeyObject::decode("keys/1", &object.encode()).unwrap();
        assert_eq!(read, object);
        let opened = read.unwrap("keys/1", b"correct horse").unwrap();
        assert_eq!(opened.to_bytes().as_ref(), master.to_bytes().as_ref());
        let wrong = read.unwrap("keys/1", b"battery staple");
        assert_eq!(wrong.err(), Some(CryptError::WrongPassphrase));
    }

    #[test]
    fn a_hostile_key_object_is_refused_before_any_work() {
        let master = MasterKey::generate().unwrap();
        let mut object = KeyObject::wrap(&master, b"pw", QUICK, 0).unwrap();
        object.params.m_kib = u32::MAX;
        let refused = object.unwrap("keys/1", b"pw");
        assert!(
            matches!(refused, Err(CryptError::BadKeyObject { .. })),
            "{refused:?}"
        );
        assert!(KeyObject::decode("keys/1", &[b' '; 5000]).is_err());
        assert!(KeyObject::decode("keys/1", b"{").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Round trip, and every single-byte change (any position, any new value) rejected.
        #[test]
        fn every_single_byte_change_is_rejected(
            plain in proptest::collection::vec(any::<u8>(), 0..300),
            at in any::<prop::sample::Index>(),
            flip in 1u8..,
        ) {
            let key = MasterKey::generate().unwrap();
            let mut sealed = key.seal("index/x.idx", &plain).unwrap();
            prop_assert_eq!(key.open("index/x.idx", &sealed).unwrap(), plain.clone());
            // The in-place forms read and write the same layout.
            let in_place = key.seal_vec("index/x.idx", plain.clone()).unwrap();
            prop_assert_eq!(key.open("index/x.idx", &in_place).unwrap(), plain.clone());
            prop_assert_eq!(key.open_vec("index/x.idx", sealed.clone()).unwrap(), plain);
            let i = at.index(sealed.len());
            sealed[i] ^= flip;
            prop_assert!(key.open("index/x.idx", &sealed).is_err());
            prop_assert!(key.open_vec("index/x.idx", sealed.clone()).is_err());
        }
    }
}
