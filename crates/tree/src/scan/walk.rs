//! One walk of the working tree, as the walker hands it to the scanner: its entries with their
//! stat keys, what it left out, the directory records it read, and its order-free digest
//! (`WalkSum`), per directory and whole, which the walk memo and tree cache compare.

use snap_store::{EntryKind, PathMap, STAT_KEY_LEN, StatKey, WalkMemo};

/// A file a save could not read, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unreadable {
    /// Workspace-relative.
    pub path: Vec<u8>,
    /// The system's error, as text.
    pub error: String,
}

/// A walked path, its kind, and for a regular file the lstat key the walk saw.
pub type WalkEntry = (Vec<u8>, EntryKind, Option<StatKey>);

/// What a walk found, before anything is read.
#[derive(Debug, Default)]
pub struct Walk {
    /// Tracked paths: directories, files and symlinks; regular files with the lstat key the
    /// walk saw.
    pub entries: Vec<WalkEntry>,
    /// Files over `max_file_size`: path and size.
    pub too_large: Vec<(Vec<u8>, u64)>,
    /// FIFOs, sockets and devices skipped.
    pub special: u64,
    /// Directories snap may not open, left out whole, with the error each gave.
    pub unreadable: Vec<Unreadable>,
    /// Ignore files over `max_ignore_file_bytes`, workspace-relative: each one's directory
    /// was left out whole.
    pub refused_rules: Vec<Vec<u8>>,
    /// New records for the directory cache: each directory this walk read, by path.
    pub dirs: Vec<(Vec<u8>, Vec<u8>)>,
    /// Directories whose cached record was still good, so they were not read.
    pub dirs_cached: u64,
    /// A symlink could not be stat-ed, so the walk's digest does not pin the tree down.
    pub inexact: bool,
    /// Each directory's own share of the walk's digest and its newest mtime (of its files and
    /// symlinks): its entries, not theirs.
    pub tallies: Vec<(Vec<u8>, WalkSum, i64)>,
    /// Directories holding entries the walk left out (emptied once the walk applied the
    /// directory rule to them).
    pub left_out: Vec<Vec<u8>>,
    /// Each visited directory with how many tracked entries it holds (directories, files,
    /// symlinks): what the directory rule counts.
    pub tracked: Vec<(Vec<u8>, u32)>,
    /// Each visited directory's permission bits, from the stat taken when it was visited.
    pub dir_modes: PathMap<Vec<u8>, u16>,
    /// The newest mtime or ctime of a symlink or oversize file: entries whose stat keys
    /// `entries` does not keep, so that [`Walk::racy_since`] cannot name them.
    pub newest_unlisted_ns: i64,
}

/// Each directory's subtree digest and newest mtime (everything under it), summed bottom up
/// from the walk's per-directory tallies. The root is `""`.
pub fn subtree_sums(walk: &Walk) -> PathMap<Vec<u8>, (WalkSum, i64)> {
    let mut dirs: Vec<&(Vec<u8>, WalkSum, i64)> = walk.tallies.iter().collect();
    // A parent is a proper prefix of its children, so in descending byte order every
    // directory comes after everything under it.
    dirs.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let empty = (WalkSum::default(), i64::MIN);
    let mut sums = PathMap::with_capacity_and_hasher(dirs.len(), Default::default());
    for (path, own, newest) in dirs {
        let (mut sum, mut latest) = sums.remove(path).unwrap_or(empty);
        sum.merge(own);
        latest = latest.max(*newest);
        if !path.is_empty() {
            let parent = sums
                .entry(crate::flat::split(path).0.to_vec())
                .or_insert(empty);
            parent.0.merge(&sum);
            parent.1 = parent.1.max(latest);
        }
        sums.insert(path.clone(), (sum, latest));
    }
    sums
}

impl Walk {
    /// True when this walk found exactly what the walk of `memo` found, and nothing walked
    /// was modified since that scan began: the tree is then `memo.root`.
    pub fn unchanged_since(&self, memo: &WalkMemo) -> bool {
        let newest = self.tallies.iter().map(|t| t.2).max().unwrap_or(i64::MIN);
        !self.inexact && self.sum().to_bytes() == memo.digest && newest < memo.written_ns
    }

    /// True when this walk found exactly what the walk of `memo` found (its digest), though
    /// entries were modified in the same clock tick as that scan began; returns the regular
    /// files among them, whose content a stat cannot vouch for. `None` when the walk differs.
    /// A symlink modified in that tick is a no (`None`) as well: only regular files are read
    /// again, and the memo a move leaves may hold a link replaced after the move wrote it.
    pub fn racy_since(&self, memo: &WalkMemo) -> Option<Vec<&[u8]>> {
        if self.inexact
            || self.newest_unlisted_ns >= memo.written_ns
            || self.sum().to_bytes() != memo.digest
        {
            return None;
        }
        let racy = |k: &StatKey| k.mtime_ns.max(k.ctime_ns) >= memo.written_ns;
        Some(
            (self.entries.iter())
                .filter(|(_, _, stat)| stat.as_ref().is_some_and(racy))
                .map(|(path, _, _)| path.as_slice())
                .collect(),
        )
    }

    /// The order-free digest of every entry with its stat key (too-large files included):
    /// the sum of the directories' tallies.
    pub fn sum(&self) -> WalkSum {
        let mut sum = WalkSum::default();
        for (_, tally, _) in &self.tallies {
            sum.merge(tally);
        }
        sum
    }
}

/// An order-free digest of a walk, so that walker threads add entries as they find them:
/// the lane-wise wrapping sum of BLAKE3(path length u32 LE | path | kind byte | stat key or
/// 36 zero bytes), read as four u64 LE lanes. Kinds: 0 file, 1 executable, 2 symlink,
/// 3 directory, 4 file over the size limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkSum([u64; 4]);

impl WalkSum {
    /// Adds one entry.
    pub fn add(&mut self, path: &[u8], kind: u8, key: Option<&StatKey>) {
        let mut h = blake3::Hasher::new();
        h.update(&(path.len() as u32).to_le_bytes());
        h.update(path);
        h.update(&[kind]);
        h.update(&key.map_or([0; STAT_KEY_LEN], StatKey::encode));
        let hash = h.finalize();
        for (lane, bytes) in self.0.iter_mut().zip(hash.as_bytes().chunks_exact(8)) {
            let mut v = [0u8; 8];
            v.copy_from_slice(bytes);
            *lane = lane.wrapping_add(u64::from_le_bytes(v));
        }
    }

    /// Adds every entry of `other`.
    pub fn merge(&mut self, other: &WalkSum) {
        for (lane, o) in self.0.iter_mut().zip(other.0) {
            *lane = lane.wrapping_add(o);
        }
    }

    /// The 32-byte digest.
    pub fn to_bytes(self) -> [u8; 32] {
        let mut v = [0u8; 32];
        for (out, lane) in v.chunks_exact_mut(8).zip(self.0) {
            out.copy_from_slice(&lane.to_le_bytes());
        }
        v
    }
}
