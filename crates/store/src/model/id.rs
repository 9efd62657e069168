//! Object ids: BLAKE3-256 of an object's kind byte followed by its uncompressed canonical bytes.
//!
//! Hashing the kind in means a chunk and a tree with equal bytes never share an id, so the kind
//! recorded next to an id can always be checked against the id itself.

use std::fmt;

use crate::ObjectKind;

/// Length in bytes of an [`ObjectId`].
pub const ID_LEN: usize = 32;

/// The content address of one object.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectId(pub [u8; ID_LEN]);

impl ObjectId {
    /// The id of `bytes` stored as an object of `kind`.
    pub fn of(kind: ObjectKind, bytes: &[u8]) -> ObjectId {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&[kind as u8]);
        hasher.update(bytes);
        ObjectId(*hasher.finalize().as_bytes())
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        let mut out = String::with_capacity(ID_LEN * 2);
        for b in self.0 {
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        }
        out
    }

    /// The first 12 hex digits, as shown to people.
    pub fn short(&self) -> String {
        self.to_hex()[..12].to_string()
    }

    /// Parses a full 64-digit hex id.
    pub fn from_hex(s: &str) -> Option<ObjectId> {
        let bytes = s.as_bytes();
        if bytes.len() != ID_LEN * 2 {
            return None;
        }
        let mut out = [0u8; ID_LEN];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (hex_val(pair[0])? << 4) | hex_val(pair[1])?;
        }
        Some(ObjectId(out))
    }

    /// Builds an id from a slice that must be exactly [`ID_LEN`] bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<ObjectId> {
        <[u8; ID_LEN]>::try_from(bytes).ok().map(ObjectId)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.short())
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let id = ObjectId::of(ObjectKind::Chunk, b"hello");
        assert_eq!(ObjectId::from_hex(&id.to_hex()), Some(id));
        assert_eq!(id.short().len(), 12);
    }

    #[test]
    fn kind_is_part_of_the_id() {
        assert_ne!(
            ObjectId::of(ObjectKind::Chunk, b"x"),
            ObjectId::of(ObjectKind::Tree, b"x")
        );
    }

    #[test]
    fn bad_hex_is_refused() {
        assert_eq!(ObjectId::from_hex("zz"), None);
        assert_eq!(ObjectId::from_hex(&"g".repeat(64)), None);
    }
}
