//! `StatRows`: the stat cache rows a scan hands to its commit, spilled past a few MiB to an
//! unnamed file (see [`crate::fs::spill`]): held whole, they were about a quarter of a first
//! save's peak at a million files (docs/PERFORMANCE.md).
//!
//! ```text
//! row  path_len u32 LE | path [path_len] | entry_len u8 | StatEntry [entry_len]   (statcache.rs)
//! ```

use std::path::Path;

use crate::StoreError;
use crate::cache::stat::StatEntry;
use crate::fs::spill::{SPILL_AT, SpillBuf};

/// Stat cache rows to write, in the order they were pushed.
#[derive(Debug, Default)]
pub struct StatRows {
    rows: SpillBuf,
    count: usize,
    /// Set once a row's path did not sort strictly after the one pushed before it.
    unsorted: bool,
    last: Vec<u8>,
}

impl StatRows {
    /// Rows that go to an unnamed file made in `dir` past a few MiB in memory (see
    /// [`crate::fs::spill`]).
    pub fn spilling_into(dir: &Path) -> StatRows {
        StatRows::spilling_at(dir, SPILL_AT)
    }

    pub(crate) fn spilling_at(dir: &Path, at: usize) -> StatRows {
        StatRows {
            rows: SpillBuf::spilling_at(dir, at),
            ..StatRows::default()
        }
    }

    /// Adds the row of `path`. Paths are at most `u32::MAX` bytes (the kernel's are 4 KiB).
    pub fn push(&mut self, path: &[u8], entry: &StatEntry) {
        if self.count > 0 && path <= self.last.as_slice() {
            self.unsorted = true;
        }
        self.last.clear();
        self.last.extend_from_slice(path);
        let len = (path.len() as u32).to_le_bytes();
        let entry = entry.encode();
        let entry = entry.as_slice();
        // An entry is at most `MAX_STAT_ENTRY_LEN` (76) bytes: its length fits a byte.
        self.rows.push(&[&len, path, &[entry.len() as u8], entry]);
        self.count += 1;
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True when each row's path sorts strictly after the one before it.
    pub fn is_sorted(&self) -> bool {
        !self.unsorted
    }

    /// Calls `f` with each row's path and encoded entry, in the order they were pushed.
    pub fn try_for_each<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.rows
            .try_for_each_piece(|piece| whole_rows(piece, &mut f))
    }
}

/// Calls `f` on each whole row at the start of `bytes`; returns the bytes those rows take.
fn whole_rows<E>(
    bytes: &[u8],
    f: &mut impl FnMut(&[u8], &[u8]) -> Result<(), E>,
) -> Result<usize, E> {
    let mut rest = bytes;
    while let Some((path, entry, tail)) = split_row(rest) {
        f(path, entry)?;
        rest = tail;
    }
    Ok(bytes.len() - rest.len())
}

/// The path and entry of the row at the start of `bytes`, and what follows it; `None` when
/// `bytes` does not start with a whole row.
fn split_row(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (len, tail) = bytes.split_first_chunk::<4>()?;
    let (path, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let (&entry_len, tail) = tail.split_first()?;
    let (entry, tail) = tail.split_at_checked(usize::from(entry_len))?;
    Some((path, entry, tail))
}

impl FromIterator<(Vec<u8>, StatEntry)> for StatRows {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, StatEntry)>>(rows: I) -> StatRows {
        let mut out = StatRows::default();
        for (path, entry) in rows {
            out.push(&path, &entry);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::cache::stat::StatKey;
    use crate::{EntryKind, ObjectId};

    fn entry(n: u64) -> StatEntry {
        let key = StatKey {
            size: n << (n % 60),
            mtime_ns: -(n as i64),
            ctime_ns: 5,
            ino: 7,
            mode: 0o100644,
        };
        StatEntry::hashed(
            key,
            EntryKind::Executable,
            ObjectId([n as u8; 32]),
            n as i64,
        )
    }

    fn back(rows: &StatRows) -> Vec<(Vec<u8>, StatEntry)> {
        let mut out = Vec::new();
        rows.try_for_each(|p, e| {
            out.push((p.to_vec(), StatEntry::decode(e).expect("an entry")));
            Ok::<_, StoreError>(())
        })
        .expect("rows read back");
        out
    }

    /// Rows kept in memory come back as pushed, whatever their paths' lengths.
    #[test]
    fn rows_in_memory_come_back_in_order() {
        let paths: Vec<Vec<u8>> = (0..40usize)
            .map(|n| vec![b'a' + (n % 26) as u8; 1 + n * 37 % 300])
            .collect();
        let mut rows = StatRows::default();
        let want: Vec<_> = (paths.iter().enumerate())
            .map(|(n, p)| (p.clone(), entry(n as u64)))
            .collect();
        for (path, e) in &want {
            rows.push(path, e);
        }
        assert_eq!((rows.len(), rows.is_sorted()), (40, false));
        assert_eq!(back(&rows), want);
        assert!(back(&StatRows::default()).is_empty());
    }

    /// A directory the file cannot be made in keeps every row in memory.
    #[test]
    fn rows_stay_in_memory_when_the_spill_file_cannot_be_made() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut rows = StatRows::spilling_at(&dir.path().join("missing"), 10);
        let want: Vec<_> = (0..50u64)
            .map(|n| (format!("p{n:03}").into_bytes(), entry(n)))
            .collect();
        for (path, e) in &want {
            rows.push(path, e);
        }
        assert_eq!(back(&rows), want);
    }

    proptest! {
        /// Whatever the paths and wherever the spills fall, the rows come back whole and in
        /// the order pushed, and `is_sorted` says whether that order was strictly rising.
        #[test]
        fn spilled_rows_come_back_as_pushed(
            paths in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..200),
            at in 1usize..3000,
        ) {
            let dir = tempfile::tempdir().expect("a temp dir");
            let mut rows = StatRows::spilling_at(dir.path(), at);
            let want: Vec<_> = (paths.iter().enumerate())
                .map(|(n, p)| (p.clone(), entry(n as u64)))
                .collect();
            for (path, e) in &want {
                rows.push(path, e);
            }
            prop_assert_eq!(rows.len(), want.len());
            prop_assert_eq!(rows.is_sorted(), paths.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(back(&rows), want);
        }
    }
}
