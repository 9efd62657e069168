//! The stat cache (DESIGN §9): for each tracked file, the stat key it had when it was last
//! hashed and the id its content got, so a save re-reads only files whose stat changed.
//!
//! ```text
//! stat_cache  &[u8] path -> size u64 | mtime_ns i64 | ctime_ns i64 | ino u64 | mode u32
//!                           | kind u8 | id [32] | written_ns i64                  (77 bytes LE)
//! (the catalog appends an 8-byte check to every row: `catalog::seal`)
//! ```
//! An entry is trusted only when the file's stat key equals it and the file's mtime is strictly
//! before `written_ns`, the filesystem's clock when the entry was written: a file modified in
//! the same clock tick as the scan that hashed it (racy) is hashed again, and its entry then
//! rewritten with a later clock, so it is not rehashed forever. Entries are only written by
//! scans whose objects were committed, and gc clears the cache, so a trusted id is always in
//! the store.

use crate::{EntryKind, ObjectId};

/// Byte length of an encoded [`StatEntry`].
pub const STAT_ENTRY_LEN: usize = 77;

/// The parts of a file's stat that change when its content may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatKey {
    /// File length in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Inode change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// File type and permission bits (`st_mode`).
    pub mode: u32,
}

/// Byte length of an encoded [`StatKey`].
pub const STAT_KEY_LEN: usize = 36;

impl StatKey {
    /// `size u64 | mtime_ns i64 | ctime_ns i64 | ino u64 | mode u32`, all LE (36 bytes).
    pub fn encode(&self) -> [u8; STAT_KEY_LEN] {
        let mut v = [0u8; STAT_KEY_LEN];
        v[0..8].copy_from_slice(&self.size.to_le_bytes());
        v[8..16].copy_from_slice(&self.mtime_ns.to_le_bytes());
        v[16..24].copy_from_slice(&self.ctime_ns.to_le_bytes());
        v[24..32].copy_from_slice(&self.ino.to_le_bytes());
        v[32..36].copy_from_slice(&self.mode.to_le_bytes());
        v
    }

    /// Decodes exactly [`STAT_KEY_LEN`] bytes.
    pub fn decode(v: &[u8]) -> Option<StatKey> {
        if v.len() != STAT_KEY_LEN {
            return None;
        }
        let u64_at = |i: usize| v[i..i + 8].try_into().ok().map(u64::from_le_bytes);
        let i64_at = |i: usize| v[i..i + 8].try_into().ok().map(i64::from_le_bytes);
        Some(StatKey {
            size: u64_at(0)?,
            mtime_ns: i64_at(8)?,
            ctime_ns: i64_at(16)?,
            ino: u64_at(24)?,
            mode: u32::from_le_bytes(v[32..36].try_into().ok()?),
        })
    }

    /// The racy rule: a thing last seen as `self` is unchanged now, when it stats as `now`,
    /// only if the two are equal and `self` was both modified and changed (mtime and ctime)
    /// strictly before `written_ns`, the filesystem clock when it was seen. A change in the
    /// same tick leaves every field equal; ctime counts too because mtime can be set back
    /// (`cp -p`, `tar -x`, `touch -d`) while ctime always moves with the change.
    pub fn still(&self, now: &StatKey, written_ns: i64) -> bool {
        self == now && now.mtime_ns < written_ns && now.ctime_ns < written_ns
    }
}

/// One cached verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatEntry {
    /// The stat the file had when it was hashed.
    pub key: StatKey,
    /// File or Executable; never a symlink or directory.
    pub kind: EntryKind,
    /// Id the content got then: a chunk or a chunk list.
    pub id: ObjectId,
    /// Filesystem time when this entry was written.
    pub written_ns: i64,
}

impl StatEntry {
    /// True when the file, now stat-ing as `key`, is certainly unchanged since it was hashed.
    pub fn trusted_for(&self, key: &StatKey) -> bool {
        self.key.still(key, self.written_ns)
    }

    /// The 77-byte little-endian encoding.
    pub fn encode(&self) -> [u8; STAT_ENTRY_LEN] {
        let mut v = [0u8; STAT_ENTRY_LEN];
        v[0..STAT_KEY_LEN].copy_from_slice(&self.key.encode());
        v[36] = kind_byte(self.kind);
        v[37..69].copy_from_slice(&self.id.0);
        v[69..77].copy_from_slice(&self.written_ns.to_le_bytes());
        v
    }

    /// Decodes an entry; `None` for a malformed one (treated as absent: the file is rehashed).
    pub fn decode(v: &[u8]) -> Option<StatEntry> {
        if v.len() != STAT_ENTRY_LEN {
            return None;
        }
        let key = StatKey::decode(&v[..STAT_KEY_LEN])?;
        let kind = match v[36] {
            0 => EntryKind::File,
            1 => EntryKind::Executable,
            _ => return None,
        };
        Some(StatEntry {
            key,
            kind,
            id: ObjectId::from_slice(&v[37..69])?,
            written_ns: i64::from_le_bytes(v[69..77].try_into().ok()?),
        })
    }
}

fn kind_byte(kind: EntryKind) -> u8 {
    match kind {
        EntryKind::Executable => 1,
        _ => 0,
    }
}

/// What the last full scan found: a digest of every path with its kind, size and id, and the
/// root tree those entries build. The root is a function of the entries, so a later scan with
/// the same digest may take the root as it is instead of building every tree again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanMemo {
    /// BLAKE3 over the scan's entries in path order (see `snap_tree::scan`).
    pub digest: ObjectId,
    /// The root tree id they build.
    pub root: ObjectId,
}

impl ScanMemo {
    /// The 64-byte `meta["scan"]` value: digest [32] | root [32].
    pub fn encode(&self) -> [u8; 64] {
        let mut v = [0u8; 64];
        v[..32].copy_from_slice(&self.digest.0);
        v[32..].copy_from_slice(&self.root.0);
        v
    }

    /// Decodes a `meta["scan"]` value; `None` when malformed (the memo is then ignored).
    pub fn decode(v: &[u8]) -> Option<ScanMemo> {
        Some(ScanMemo {
            digest: ObjectId::from_slice(v.get(..32)?)?,
            root: ObjectId::from_slice(v.get(32..64)?).filter(|_| v.len() == 64)?,
        })
    }
}

/// What the last exact walk saw, for a save that finds the same: the order-free digest of
/// every entry's path, kind and stat key, the root tree those entries' contents built, and
/// the filesystem clock when that scan began. A later walk with the same digest whose every
/// file and symlink was modified before that clock sees exactly those contents (the racy
/// rule, applied to the whole tree at once), so its root is that root.
///
/// The tree cache holds the same memo for each directory's subtree: its entries' digest, the
/// tree they built, and that scan's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkMemo {
    /// The walk's digest (see `snap_tree::scan::WalkSum`).
    pub digest: [u8; 32],
    /// The root tree id the walked entries built.
    pub root: ObjectId,
    /// The filesystem clock at the start of that scan.
    pub written_ns: i64,
}

impl WalkMemo {
    /// The 72-byte `meta["walk"]` value: digest [32] | root [32] | written_ns i64 LE.
    pub fn encode(&self) -> [u8; 72] {
        let mut v = [0u8; 72];
        v[..32].copy_from_slice(&self.digest);
        v[32..64].copy_from_slice(&self.root.0);
        v[64..].copy_from_slice(&self.written_ns.to_le_bytes());
        v
    }

    /// Decodes a `meta["walk"]` value; `None` when malformed (the memo is then ignored).
    pub fn decode(v: &[u8]) -> Option<WalkMemo> {
        if v.len() != 72 {
            return None;
        }
        Some(WalkMemo {
            digest: v[..32].try_into().ok()?,
            root: ObjectId::from_slice(&v[32..64])?,
            written_ns: i64::from_le_bytes(v[64..].try_into().ok()?),
        })
    }
}

/// Changes to the stat cache, committed with the snapshot (or alone).
#[derive(Debug, Default)]
pub struct StatCacheUpdate {
    /// Entries to write, keyed by workspace-relative path.
    pub put: crate::StatRows,
    /// Paths to drop: no longer tracked as regular files.
    pub remove: Vec<Vec<u8>>,
    /// With the set of live objects (gc), first drop every stat and tree cache row, and the
    /// scan and walk memos, that names an object outside it or whose check fails: gc may
    /// have just dropped those objects. The rest name objects gc keeps, and stay trusted.
    pub only_live: Option<std::collections::HashSet<ObjectId>>,
    /// A new memo of the scan, when it differs from the stored one.
    pub memo: Option<ScanMemo>,
    /// A new walk memo, when it differs from the stored one.
    pub walk: Option<WalkMemo>,
    /// Tree cache entries to write: each directory's subtree memo, by path.
    pub trees: Vec<(Vec<u8>, WalkMemo)>,
    /// Changes to the directory cache.
    pub dirs: crate::DirCacheUpdate,
}

impl StatCacheUpdate {
    /// True when committing it would change nothing.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty()
            && self.remove.is_empty()
            && self.only_live.is_none()
            && self.memo.is_none()
            && self.walk.is_none()
            && self.trees.is_empty()
            && self.dirs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(mtime_ns: i64, written_ns: i64) -> StatEntry {
        StatEntry {
            key: StatKey {
                size: 3,
                mtime_ns,
                ctime_ns: 5,
                ino: 7,
                mode: 0o100644,
            },
            kind: EntryKind::Executable,
            id: ObjectId([4; 32]),
            written_ns,
        }
    }

    #[test]
    fn round_trip() {
        let e = entry(-1, i64::MAX);
        assert_eq!(StatEntry::decode(&e.encode()), Some(e));
        assert_eq!(StatEntry::decode(&e.encode()[..76]), None);
    }

    #[test]
    fn a_scan_memo_round_trips_and_refuses_other_lengths() {
        let memo = ScanMemo {
            digest: ObjectId([1; 32]),
            root: ObjectId([2; 32]),
        };
        assert_eq!(ScanMemo::decode(&memo.encode()), Some(memo));
        assert_eq!(ScanMemo::decode(&memo.encode()[..63]), None);
        assert_eq!(
            ScanMemo::decode(&[memo.encode().as_slice(), &[0]].concat()),
            None
        );
    }

    #[test]
    fn a_walk_memo_round_trips_and_refuses_other_lengths() {
        let memo = WalkMemo {
            digest: [3; 32],
            root: ObjectId([4; 32]),
            written_ns: -5,
        };
        assert_eq!(WalkMemo::decode(&memo.encode()), Some(memo));
        assert_eq!(WalkMemo::decode(&memo.encode()[..71]), None);
        assert_eq!(
            WalkMemo::decode(&[memo.encode().as_slice(), &[0]].concat()),
            None
        );
    }

    #[test]
    fn the_racy_rule() {
        let e = entry(100, 200);
        assert!(e.trusted_for(&e.key));
        assert!(
            !entry(200, 200).trusted_for(&entry(200, 200).key),
            "same tick as the scan: rehash"
        );
        let mut other = e.key;
        other.ctime_ns += 1;
        assert!(!e.trusted_for(&other));
    }
}
