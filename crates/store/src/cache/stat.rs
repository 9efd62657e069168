//! The stat cache (docs/FORMAT.md 6): for each tracked file, the stat key it had when it was last
//! hashed and the id its content got, so a save re-reads only files whose stat changed.
//!
//! ```text
//! stat_cache  &[u8] path -> flags u8 | id [32] | size varint | mtime_ns i64 LE
//!                           | ctime_ns - mtime_ns zigzag varint | ino varint | mode varint
//!                                                                  (42 to 76 bytes)
//! (the catalog appends an 8-byte check to every row: `catalog::seal`)
//! ```
//! An entry is trusted only when the file's stat key equals it and the file was modified and
//! changed strictly before the filesystem's clock when the scan that hashed it began: a file
//! modified in the same clock tick as that scan (racy) is hashed again, and its entry then
//! rewritten by a later scan, so it is not rehashed forever. That comparison is made once,
//! as the entry is made, and kept as the `settled` flag. Entries are only written by scans
//! whose objects were committed, and gc drops those naming objects it drops, so a trusted id
//! is always in the store.
//!
//! Rows of the older fixed layout (77 bytes: the key, kind u8, id [32], written_ns i64, all
//! LE) are still read; a row of the new layout is at most 76 bytes, so the length tells them
//! apart.

use crate::{EntryKind, ObjectId};

/// The most bytes an encoded [`StatEntry`] takes (flags, id, then a u64 varint of up to 10
/// bytes, 8 bytes of mtime, two more 10-byte varints and a u32 varint of up to 5).
pub const MAX_STAT_ENTRY_LEN: usize = 1 + 32 + 10 + 8 + 10 + 10 + 5;

/// Byte length of a row of the older fixed layout, still read.
const FIXED_ENTRY_LEN: usize = 77;

const _: () = assert!(MAX_STAT_ENTRY_LEN < FIXED_ENTRY_LEN);

/// `flags` bits: the file is executable; its entry settled (see [`StatEntry::settled`]).
const FLAG_EXECUTABLE: u8 = 1;
const FLAG_SETTLED: u8 = 2;

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
    /// The file was modified and changed (mtime and ctime) strictly before the filesystem
    /// clock when the scan that hashed it began, so a later stat equal to `key` shows this
    /// content (the racy rule, [`StatKey::still`]).
    pub settled: bool,
}

impl StatEntry {
    /// The entry of a file hashed by a scan that began at filesystem time `scan_ns`.
    pub fn hashed(key: StatKey, kind: EntryKind, id: ObjectId, scan_ns: i64) -> StatEntry {
        StatEntry {
            key,
            kind,
            id,
            settled: key.still(&key, scan_ns),
        }
    }

    /// True when the file, now stat-ing as `key`, is certainly unchanged since it was hashed.
    pub fn trusted_for(&self, key: &StatKey) -> bool {
        self.settled && self.key == *key
    }

    /// The encoding drawn at the top of this module, [`MAX_STAT_ENTRY_LEN`] bytes at most.
    pub fn encode(&self) -> EncodedEntry {
        let mut out = EncodedEntry {
            bytes: [0; MAX_STAT_ENTRY_LEN],
            len: 0,
        };
        let flags = match self.kind {
            EntryKind::Executable => FLAG_EXECUTABLE,
            _ => 0,
        } | if self.settled { FLAG_SETTLED } else { 0 };
        out.put(&[flags]);
        out.put(&self.id.0);
        out.put_varint(self.key.size);
        out.put(&self.key.mtime_ns.to_le_bytes());
        out.put_varint(zigzag(self.key.ctime_ns.wrapping_sub(self.key.mtime_ns)));
        out.put_varint(self.key.ino);
        out.put_varint(u64::from(self.key.mode));
        out
    }

    /// Decodes an entry of either layout; `None` for a malformed one (treated as absent: the
    /// file is rehashed).
    pub fn decode(v: &[u8]) -> Option<StatEntry> {
        if v.len() == FIXED_ENTRY_LEN {
            return decode_fixed(v);
        }
        let (&flags, rest) = v.split_first()?;
        if flags & !(FLAG_EXECUTABLE | FLAG_SETTLED) != 0 {
            return None;
        }
        let (id, rest) = rest.split_at_checked(32)?;
        let (size, rest) = take_varint(rest)?;
        let (mtime, rest) = rest.split_first_chunk::<8>()?;
        let mtime_ns = i64::from_le_bytes(*mtime);
        let (ctime_delta, rest) = take_varint(rest)?;
        let (ino, rest) = take_varint(rest)?;
        let (mode, rest) = take_varint(rest)?;
        if !rest.is_empty() {
            return None;
        }
        Some(StatEntry {
            key: StatKey {
                size,
                mtime_ns,
                ctime_ns: mtime_ns.wrapping_add(unzigzag(ctime_delta)),
                ino,
                mode: u32::try_from(mode).ok()?,
            },
            kind: match flags & FLAG_EXECUTABLE {
                0 => EntryKind::File,
                _ => EntryKind::Executable,
            },
            id: ObjectId::from_slice(id)?,
            settled: flags & FLAG_SETTLED != 0,
        })
    }
}

/// A row of the older layout: key [36] | kind u8 | id [32] | written_ns i64 LE.
fn decode_fixed(v: &[u8]) -> Option<StatEntry> {
    let key = StatKey::decode(&v[..STAT_KEY_LEN])?;
    let kind = match v[36] {
        0 => EntryKind::File,
        1 => EntryKind::Executable,
        _ => return None,
    };
    let written_ns = i64::from_le_bytes(v[69..77].try_into().ok()?);
    Some(StatEntry::hashed(
        key,
        kind,
        ObjectId::from_slice(&v[37..69])?,
        written_ns,
    ))
}

/// An encoded [`StatEntry`]: its bytes are `bytes[..len]`.
#[derive(Clone, Copy, Debug)]
pub struct EncodedEntry {
    bytes: [u8; MAX_STAT_ENTRY_LEN],
    len: usize,
}

impl EncodedEntry {
    /// The encoded bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn put(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    fn put_varint(&mut self, n: u64) {
        varint(n, |b| self.put(&[b]));
    }
}

/// Hands `put` the LEB128 bytes of `n`: seven bits a byte, low first, the high bit set on
/// all but the last.
pub(crate) fn varint(mut n: u64, mut put: impl FnMut(u8)) {
    while n >= 0x80 {
        put((n as u8) | 0x80);
        n >>= 7;
    }
    put(n as u8);
}

/// A LEB128 u64 at the start of `v`, and the rest; `None` when cut short or over 64 bits.
pub(crate) fn take_varint(v: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (i, &b) in v.iter().enumerate().take(10) {
        let bits = u64::from(b & 0x7f);
        if i == 9 && b > 1 {
            return None;
        }
        n |= bits << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, &v[i + 1..]));
        }
    }
    None
}

/// Signed to unsigned with small magnitudes small: 0, -1, 1, -2 -> 0, 1, 2, 3.
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
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

/// The change source's token a capture was taken at (`meta["watch"]`, docs/FORMAT.md 6.6):
/// what a watcher answered for that capture, and the tree it found. A later capture asks the
/// watcher what changed since (`instance`, `seq`) and re-reads only that, starting from
/// `root`; anything that does not match (another watcher, another config) reads it all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchMemo {
    /// The watcher's instance and epoch: a new one for each start, overflow or doubt.
    pub instance: [u8; 16],
    /// The watcher's event sequence number at the cookie the capture waited for.
    pub seq: u64,
    /// The root tree the capture found.
    pub root: ObjectId,
    /// The filesystem clock at the start of that capture.
    pub written_ns: i64,
    /// The fingerprint of the config the capture walked under (exclusions, store path, file
    /// size limit).
    pub fingerprint: [u8; 32],
}

/// Length of a `meta["watch"]` value.
pub const WATCH_MEMO_LEN: usize = 96;

impl WatchMemo {
    /// The 96-byte value: instance [16] | seq u64 LE | root [32] | written_ns i64 LE |
    /// fingerprint [32].
    pub fn encode(&self) -> [u8; WATCH_MEMO_LEN] {
        let mut v = [0u8; WATCH_MEMO_LEN];
        v[..16].copy_from_slice(&self.instance);
        v[16..24].copy_from_slice(&self.seq.to_le_bytes());
        v[24..56].copy_from_slice(&self.root.0);
        v[56..64].copy_from_slice(&self.written_ns.to_le_bytes());
        v[64..].copy_from_slice(&self.fingerprint);
        v
    }

    /// Decodes a `meta["watch"]` value; `None` when malformed (the next capture reads all).
    pub fn decode(v: &[u8]) -> Option<WatchMemo> {
        if v.len() != WATCH_MEMO_LEN {
            return None;
        }
        Some(WatchMemo {
            instance: v[..16].try_into().ok()?,
            seq: u64::from_le_bytes(v[16..24].try_into().ok()?),
            root: ObjectId::from_slice(&v[24..56])?,
            written_ns: i64::from_le_bytes(v[56..64].try_into().ok()?),
            fingerprint: v[64..].try_into().ok()?,
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
    /// The change source's token this capture was taken at, when a watcher answered.
    pub watch: Option<WatchMemo>,
    /// The files on disk this save could not keep, when the list changed (see
    /// [`crate::cache::untracked`]).
    pub untracked: Option<Vec<crate::UntrackedFile>>,
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
            && self.untracked.is_none()
            && self.watch.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(mtime_ns: i64, written_ns: i64) -> StatEntry {
        let key = StatKey {
            size: 3,
            mtime_ns,
            ctime_ns: 5,
            ino: 7,
            mode: 0o100644,
        };
        StatEntry::hashed(key, EntryKind::Executable, ObjectId([4; 32]), written_ns)
    }

    #[test]
    fn round_trip() {
        let e = entry(-1, i64::MAX);
        let row = e.encode();
        assert_eq!(StatEntry::decode(row.as_slice()), Some(e));
        // 1 + 32 + size 1 + mtime 8 + ctime delta 1 + ino 1 + mode 3.
        assert_eq!(row.as_slice().len(), 47);
        assert_eq!(StatEntry::decode(&row.as_slice()[..46]), None);
        assert_eq!(StatEntry::decode(&[row.as_slice(), &[0]].concat()), None);
    }

    #[test]
    fn a_row_of_the_fixed_layout_still_decodes_and_keeps_its_racy_verdict() {
        for (mtime_ns, written_ns, settled) in [(100, 200, true), (200, 200, false)] {
            let e = entry(mtime_ns, written_ns);
            let mut row = e.key.encode().to_vec();
            row.push(1);
            row.extend_from_slice(&e.id.0);
            row.extend_from_slice(&written_ns.to_le_bytes());
            let back = StatEntry::decode(&row).expect("a 77-byte row");
            assert_eq!((back, back.settled), (e, settled));
        }
    }

    proptest::proptest! {
        /// Any key, kind and verdict comes back as it went in, within the length promised.
        #[test]
        fn any_entry_round_trips(
            size: u64, mtime_ns: i64, ctime_ns: i64, ino: u64, mode: u32,
            executable: bool, settled: bool, id: [u8; 32],
        ) {
            let e = StatEntry {
                key: StatKey { size, mtime_ns, ctime_ns, ino, mode },
                kind: if executable { EntryKind::Executable } else { EntryKind::File },
                id: ObjectId(id),
                settled,
            };
            let row = e.encode();
            proptest::prop_assert!(row.as_slice().len() <= MAX_STAT_ENTRY_LEN);
            proptest::prop_assert_eq!(StatEntry::decode(row.as_slice()), Some(e));
        }

        /// Whatever the bytes, decoding returns or refuses; it never panics.
        #[test]
        fn any_bytes_decode_or_are_refused(v in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..90)) {
            let _ = StatEntry::decode(&v);
        }
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
    fn a_watch_memo_round_trips_and_refuses_other_lengths() {
        let memo = WatchMemo {
            instance: [1; 16],
            seq: u64::MAX - 2,
            root: ObjectId([4; 32]),
            written_ns: -5,
            fingerprint: [9; 32],
        };
        let bytes = memo.encode();
        assert_eq!(WatchMemo::decode(&bytes), Some(memo));
        assert_eq!(bytes[16..24], (u64::MAX - 2).to_le_bytes());
        assert_eq!(WatchMemo::decode(&bytes[..WATCH_MEMO_LEN - 1]), None);
        assert_eq!(WatchMemo::decode(&[bytes.as_slice(), &[0]].concat()), None);
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
