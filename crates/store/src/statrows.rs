//! `StatRows`: the stat cache rows a scan hands to its commit. They are packed in one
//! buffer and, past a few MiB, written to an unnamed file in the store's `tmp/`, so that a
//! first save of a million files does not hold a million rows in memory from the moment it
//! reads them until its commit (they were about 98 MB of its 400 MB peak).
//!
//! ```text
//! row  path_len u32 LE | path [path_len] | StatEntry [77]   (statcache.rs)
//! ```
//! The spill file holds rows in that layout, one after another, and the rows still in memory
//! follow it. The file has no name (`O_TMPFILE` where the filesystem has it), so nothing is
//! left behind by a crash, and it is only ever read by the process that wrote it: it is not
//! part of the on-disk format.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::StoreError;
use crate::statcache::{STAT_ENTRY_LEN, StatEntry};

/// Bytes of rows held in memory before they are written to the spill file.
const SPILL_AT: usize = 4 << 20;

/// Bytes read from the spill file at a time.
const READ_AT_ONCE: usize = 1 << 20;

/// Stat cache rows to write, in the order they were pushed.
#[derive(Debug, Default)]
pub struct StatRows {
    /// The rows not spilled, after those in the spill file.
    bytes: Vec<u8>,
    rows: usize,
    /// Set once a row's path did not sort strictly after the one pushed before it.
    unsorted: bool,
    last: Vec<u8>,
    spill: Option<Spill>,
}

/// Where rows go past `at` bytes in memory.
#[derive(Debug)]
struct Spill {
    /// The directory the file is made in, when the first rows are spilled.
    dir: PathBuf,
    at: usize,
    file: Option<File>,
    /// Bytes of rows in the file; the first `len` bytes are whole rows.
    len: u64,
    /// Set when the file could not be made or written: the rows after it stay in memory.
    stopped: bool,
}

impl StatRows {
    /// Rows that go to an unnamed file made in `dir` past [`SPILL_AT`] bytes in memory. If
    /// the file cannot be made or written, the rows stay in memory: spilling saves memory,
    /// it is never a reason for a scan to fail.
    pub fn spilling_into(dir: &Path) -> StatRows {
        StatRows::spilling_at(dir, SPILL_AT)
    }

    pub(crate) fn spilling_at(dir: &Path, at: usize) -> StatRows {
        StatRows {
            spill: Some(Spill {
                dir: dir.to_path_buf(),
                at,
                file: None,
                len: 0,
                stopped: false,
            }),
            ..StatRows::default()
        }
    }

    /// Adds the row of `path`. Paths are at most `u32::MAX` bytes (the kernel's are 4 KiB).
    pub fn push(&mut self, path: &[u8], entry: &StatEntry) {
        if self.rows > 0 && path <= self.last.as_slice() {
            self.unsorted = true;
        }
        self.last.clear();
        self.last.extend_from_slice(path);
        self.bytes
            .extend_from_slice(&(path.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(path);
        self.bytes.extend_from_slice(&entry.encode());
        self.rows += 1;
        if self
            .spill
            .as_ref()
            .is_some_and(|s| self.bytes.len() >= s.at)
        {
            self.spill_rows();
        }
    }

    /// Moves the rows in memory to the end of the spill file.
    fn spill_rows(&mut self) {
        let Some(spill) = self.spill.as_mut().filter(|s| !s.stopped) else {
            return;
        };
        if spill.file.is_none() {
            spill.file = tempfile::tempfile_in(&spill.dir).ok();
        }
        let written = (spill.file.as_ref()).map(|f| f.write_all_at(&self.bytes, spill.len));
        match written {
            Some(Ok(())) => {
                spill.len += self.bytes.len() as u64;
                self.bytes.clear();
            }
            // A short write leaves bytes past `len`, which are never read.
            _ => spill.stopped = true,
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
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
        if let Some(Spill {
            dir,
            file: Some(file),
            len,
            ..
        }) = &self.spill
        {
            read_spilled(dir, file, *len, &mut f)?;
        }
        let used = whole_rows(&self.bytes, &mut f)?;
        debug_assert_eq!(used, self.bytes.len(), "rows in memory are whole");
        Ok(())
    }
}

/// Calls `f` on the rows of the first `len` bytes of `file`, read a piece at a time.
fn read_spilled<E: From<StoreError>>(
    dir: &Path,
    file: &File,
    len: u64,
    f: &mut impl FnMut(&[u8], &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut buf = Vec::with_capacity(READ_AT_ONCE);
    let mut at = 0;
    while at < len {
        let start = buf.len();
        let piece = READ_AT_ONCE.min(usize::try_from(len - at).unwrap_or(usize::MAX));
        buf.resize(start + piece, 0);
        (file.read_exact_at(&mut buf[start..], at)).map_err(|e| StoreError::io(dir, e))?;
        at += piece as u64;
        let used = whole_rows(&buf, f)?;
        buf.drain(..used);
    }
    if buf.is_empty() {
        return Ok(());
    }
    let cut = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the spilled stat rows end inside a row",
    );
    Err(StoreError::io(dir, cut).into())
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
    let (entry, tail) = tail.split_at_checked(STAT_ENTRY_LEN)?;
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
    use crate::statcache::StatKey;
    use crate::{EntryKind, ObjectId};

    fn entry(n: u64) -> StatEntry {
        StatEntry {
            key: StatKey {
                size: n,
                mtime_ns: -(n as i64),
                ctime_ns: 5,
                ino: 7,
                mode: 0o100644,
            },
            kind: EntryKind::Executable,
            id: ObjectId([n as u8; 32]),
            written_ns: n as i64,
        }
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
        assert!(rows.spill.as_ref().is_some_and(|s| s.stopped && s.len == 0));
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
            prop_assert!(rows.bytes.len() < at + 4 + 300 + STAT_ENTRY_LEN);
            prop_assert_eq!(rows.len(), want.len());
            prop_assert_eq!(rows.is_sorted(), paths.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(back(&rows), want);
        }
    }
}
