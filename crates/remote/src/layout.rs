//! The remote's layout (docs/FORMAT.md 9): its marker, and the bytes of the two objects
//! snap defines for it, the pack index and the ref. Which key holds what is [`crate::names`].
//!
//! Every object is written once, create-only, in the order packs, index, records,
//! expunged, ref: a push killed anywhere leaves only objects no ref reaches, and a reader
//! sees a pack only once its index exists, a snapshot only once a ref names it and no
//! `expunged/` object does. The records of expunged ids are the one thing a push deletes
//! (after its ref): they may hold what the expunge took out. On an encrypted remote
//! (layout 2) every object but the marker and the key objects is sealed
//! ([`crate::sealed`]).

use serde::{Deserialize, Serialize};
use snap_store::ObjectId;

use crate::RemoteError;
use crate::backend::Remote;
use crate::names::Names;

/// The key naming the layout's version.
pub const VERSION_KEY: &str = "snap-remote";
/// Its content on a plain remote (layout 1).
pub const VERSION_BODY: &[u8] = b"snap-remote 1\n";
/// Its content on an encrypted remote (layout 2).
pub const SEALED_VERSION_BODY: &[u8] = b"snap-remote 2\n";
/// The newest layout this snap reads.
const NEWEST_LAYOUT: u32 = 2;

/// The marker's body for a remote naming objects by `names`.
pub fn marker_body(names: &Names) -> &'static [u8] {
    match names.sealed() {
        false => VERSION_BODY,
        true => SEALED_VERSION_BODY,
    }
}

/// What the `snap-remote` marker says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Marker {
    /// No marker: no push has written here (a new remote, or not a remote at all).
    #[default]
    Absent,
    /// Layout 1: objects in the clear under their ids.
    Plain,
    /// Layout 2: objects sealed under keyed tokens, key objects under `keys/`.
    Sealed,
}

/// Reads the marker. One of another version is refused: a newer layout is
/// [`RemoteError::NewerLayout`], anything else [`RemoteError::Corrupt`].
pub fn read_marker(remote: &dyn Remote) -> Result<Marker, RemoteError> {
    let Some(found) = crate::retry(|| remote.get(VERSION_KEY, Some(0..64)))? else {
        return Ok(Marker::Absent);
    };
    if found == VERSION_BODY {
        return Ok(Marker::Plain);
    }
    if found == SEALED_VERSION_BODY {
        return Ok(Marker::Sealed);
    }
    let text = String::from_utf8_lossy(&found);
    let line = text.lines().next().unwrap_or_default().to_string();
    let version = line.strip_prefix("snap-remote ").map(str::parse::<u32>);
    match version {
        Some(Ok(n)) if n > NEWEST_LAYOUT => Err(RemoteError::NewerLayout {
            url: remote.describe(),
            found: line,
        }),
        _ => Err(RemoteError::Corrupt {
            key: VERSION_KEY.into(),
            why: "not a snap remote of a layout this snap reads".into(),
        }),
    }
}

/// The body of an `expunged/` object: the new id's hex, or nothing when the snapshot was
/// dropped.
pub fn encode_expunged(new: Option<&ObjectId>) -> Vec<u8> {
    new.map(|id| id.to_hex().into_bytes()).unwrap_or_default()
}

/// Reads an `expunged/` body: `Some(new id)`, `None` for a dropped snapshot.
pub fn decode_expunged(key: &str, bytes: &[u8]) -> Result<Option<ObjectId>, RemoteError> {
    let text = std::str::from_utf8(bytes).map(str::trim).unwrap_or("?");
    if text.is_empty() {
        return Ok(None);
    }
    ObjectId::from_hex(text)
        .map(Some)
        .ok_or_else(|| RemoteError::Corrupt {
            key: key.to_string(),
            why: "not a snapshot id".into(),
        })
}

/// Magic of an index object.
const INDEX_MAGIC: &[u8; 8] = b"SNAPRIDX";
/// Its version.
const INDEX_VERSION: u32 = 1;
/// magic (8) | version u32 LE (4) | count u32 LE (4) | pack id (32).
const INDEX_HEADER_LEN: usize = 48;

/// One object of a remote pack, as its index gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Indexed {
    /// The object's id.
    pub id: ObjectId,
    /// The base (a delta's) or block (a slice's) its frame is stored against, if any: what
    /// must stay on the remote while this copy does, whatever the local store now holds.
    pub base: Option<ObjectId>,
}

/// Encodes a pack's index: header, then per object its id, a flag byte (1: a base follows)
/// and the base, then the BLAKE3 of all before.
pub fn encode_index(pack: &ObjectId, objects: &[Indexed]) -> Vec<u8> {
    let mut out = Vec::with_capacity(INDEX_HEADER_LEN + 33 * objects.len() + 32);
    out.extend_from_slice(INDEX_MAGIC);
    out.extend_from_slice(&INDEX_VERSION.to_le_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_le_bytes());
    out.extend_from_slice(&pack.0);
    for object in objects {
        out.extend_from_slice(&object.id.0);
        match object.base {
            Some(base) => {
                out.push(1);
                out.extend_from_slice(&base.0);
            }
            None => out.push(0),
        }
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// The pack an index object names (its bytes 16..48), before any other check: how an
/// encrypted remote's reader learns which pack a keyed index key stands for.
pub fn index_pack(bytes: &[u8]) -> Option<ObjectId> {
    let named = bytes
        .get(16..INDEX_HEADER_LEN)
        .filter(|_| bytes.starts_with(INDEX_MAGIC))?;
    ObjectId::from_slice(named)
}

/// Decodes an index object, checking its sum, its length and that it names `pack`.
pub fn decode_index(key: &str, pack: &ObjectId, bytes: &[u8]) -> Result<Vec<Indexed>, RemoteError> {
    let corrupt = |why: &str| RemoteError::Corrupt {
        key: key.to_string(),
        why: why.to_string(),
    };
    if bytes.len() < INDEX_HEADER_LEN + 32 || &bytes[..8] != INDEX_MAGIC {
        return Err(corrupt("not a snap pack index"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 32);
    if blake3::hash(body).as_bytes() != sum {
        return Err(corrupt("its checksum does not match"));
    }
    let word = |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    if word(8) != INDEX_VERSION {
        return Err(corrupt("an index version this snap does not read"));
    }
    if &body[16..48] != pack.0.as_slice() {
        return Err(corrupt("it names another pack"));
    }
    let count = word(12) as usize;
    let mut objects = Vec::with_capacity(count.min(1 << 20));
    let mut rest = &body[INDEX_HEADER_LEN..];
    for _ in 0..count {
        if rest.len() < 33 {
            return Err(corrupt("it ends inside an entry"));
        }
        let (id, flag, tail) = (&rest[..32], rest[32], &rest[33..]);
        let (base, tail) = match flag {
            0 => (None, tail),
            1 if tail.len() >= 32 => (ObjectId::from_slice(&tail[..32]), &tail[32..]),
            _ => return Err(corrupt("an entry's base flag is wrong")),
        };
        let id = ObjectId::from_slice(id).ok_or_else(|| corrupt("an id is cut"))?;
        objects.push(Indexed { id, base });
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(corrupt("bytes follow its last entry"));
    }
    Ok(objects)
}

/// A workspace's history as one push left it: `refs/<workspace>/<n>`, JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefDoc {
    /// The layout version, 1.
    pub format: u32,
    /// The workspace id (32 hex digits).
    pub workspace: String,
    /// This ref's number: one more than the ref it follows.
    pub n: u64,
    /// HEAD's snapshot id, hex; absent in a workspace without snapshots.
    pub head: Option<String>,
    /// The redo stack, bottom first, hex ids.
    pub redo: Vec<String>,
    /// Every snapshot of the workspace at the push, hex ids, in sequence order.
    pub snapshots: Vec<String>,
    /// When the push was made, nanoseconds since the Unix epoch.
    pub pushed_ns: i64,
}

impl RefDoc {
    /// Parses a ref, checking each id.
    pub fn decode(key: &str, bytes: &[u8]) -> Result<RefDoc, RemoteError> {
        let corrupt = |why: String| RemoteError::Corrupt {
            key: key.to_string(),
            why,
        };
        let doc: RefDoc = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if doc.format != 1 {
            return Err(corrupt(format!("ref format {} is not 1", doc.format)));
        }
        let ids = doc.head.iter().chain(&doc.redo).chain(&doc.snapshots);
        if let Some(bad) = ids.into_iter().find(|h| ObjectId::from_hex(h).is_none()) {
            return Err(corrupt(format!("{bad:?} is not a snapshot id")));
        }
        Ok(doc)
    }

    /// The ref's bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// The ids of its snapshots.
    pub fn snapshot_ids(&self) -> Vec<ObjectId> {
        self.snapshots
            .iter()
            .filter_map(|h| ObjectId::from_hex(h))
            .collect()
    }
}
