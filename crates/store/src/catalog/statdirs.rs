//! The stat cache stored by directory (FORMAT.md 6.1): a directory's files' entries by name,
//! in rows of about a kilobyte, so a path is not stored whole with each entry and one check
//! and one row's bookkeeping cover a few dozen files.
//!
//! ```text
//! stat_dirs  &[u8] directory path ("" for the root) | 0x00 | name the part starts at
//!                  -> entry* ‖ check [8]
//! entry      name_len varint | name [name_len] | entry_len u8 | StatEntry [entry_len]
//! ```
//! A directory's parts follow each other in key order (no path holds a NUL byte). A part
//! holds the names from the one in its key up to the next part's, the first part every name
//! before that too, each part's in strictly increasing order. A change rewrites only the
//! parts its names fall in, so one edit in a directory of 100,000 files does not rewrite
//! them all. A part is cut near a quarter of redb's 4 KiB page, so that a directory's row never
//! takes a leaf of its own (docs/PERFORMANCE.md, "Figures behind the code"). Rows of the older `stat_cache`
//! table (one per path) are still read, and moved into `stat_dirs` by the first commit that
//! writes the stat cache.

use std::collections::{BTreeMap, HashMap};

use redb::{ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction};

use super::Catalog;
use super::rows::{capacity_hint, seal, unseal};
use super::tables::STAT_CACHE;
use crate::cache::rows::StatRows;
use crate::cache::stat::{StatEntry, take_varint, varint};
use crate::fs::relpath::{join, split};
use crate::{ObjectId, StoreError};

pub(super) const STAT_DIRS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("stat_dirs");

/// A directory's entries, by name, each still encoded.
type DirEntries = BTreeMap<Vec<u8>, Vec<u8>>;

/// Entries to put into a directory: (name, encoded entry).
type NewEntries = Vec<(Vec<u8>, Vec<u8>)>;

/// A part is cut once its entries pass this many bytes; one that grows past twice that is
/// cut again.
const PART_BYTES: usize = 960;

/// The key of the part of `dir`'s entries that starts at `name`.
fn part_key(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(dir.len() + 1 + name.len());
    key.extend_from_slice(dir);
    key.push(0);
    key.extend_from_slice(name);
    key
}

/// The directory a `stat_dirs` key holds entries of; `None` for a key without a NUL.
fn key_dir(key: &[u8]) -> Option<&[u8]> {
    key.iter().position(|&b| b == 0).map(|at| &key[..at])
}

/// The keys of `dir`'s parts lie in `dir ‖ 0x00 ..  dir ‖ 0x01`.
fn dir_range(dir: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut end = dir.to_vec();
    end.push(1);
    (part_key(dir, b""), end)
}

/// Which of the parts starting at `starts` holds `name` (see `Catalog::part_starts`).
fn part_of(starts: &[Vec<u8>], name: &[u8]) -> usize {
    starts.partition_point(|s| s.as_slice() <= name).max(1) - 1
}

fn owned(entries: Vec<(&[u8], &[u8])>) -> DirEntries {
    entries
        .into_iter()
        .map(|(n, e)| (n.to_vec(), e.to_vec()))
        .collect()
}

/// True when `dir` is `open` or lies under it.
fn within(dir: &[u8], open: &[u8]) -> bool {
    open.is_empty()
        || dir == open
        || (dir.len() > open.len() && dir.starts_with(open) && dir[open.len()] == b'/')
}

/// Rows that come in path order, grouped by directory: each directory's go to `flush` once
/// the rows have left it. A directory's paths (`d/...`) are together in path order, so only
/// the directories open along the current path are held.
#[derive(Default)]
struct ByDirectory {
    open: Vec<(Vec<u8>, NewEntries)>,
}

impl ByDirectory {
    fn push<E>(
        &mut self,
        path: &[u8],
        entry: Vec<u8>,
        flush: &mut impl FnMut(Vec<u8>, NewEntries) -> Result<(), E>,
    ) -> Result<(), E> {
        let (dir, name) = split(path);
        while self.open.last().is_some_and(|(top, _)| !within(dir, top)) {
            if let Some((top, new)) = self.open.pop() {
                flush(top, new)?;
            }
        }
        if self.open.last().is_none_or(|(top, _)| top != dir) {
            self.open.push((dir.to_vec(), Vec::new()));
        }
        if let Some((_, new)) = self.open.last_mut() {
            new.push((name.to_vec(), entry));
        }
        Ok(())
    }

    fn finish<E>(
        mut self,
        flush: &mut impl FnMut(Vec<u8>, NewEntries) -> Result<(), E>,
    ) -> Result<(), E> {
        while let Some((top, new)) = self.open.pop() {
            flush(top, new)?;
        }
        Ok(())
    }
}

/// The row value (without its check) of `entries`.
fn encode_row<'a>(entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, entry) in entries {
        varint(name.len() as u64, |b| out.push(b));
        out.extend_from_slice(name);
        // An entry is at most `MAX_STAT_ENTRY_LEN` (76) bytes.
        out.push(entry.len() as u8);
        out.extend_from_slice(entry);
    }
    out
}

/// The (name, entry) pairs of a row value; `None` when it is cut short, or its names are not
/// strictly increasing (the whole row is then ignored, and its files read again).
fn decode_row(mut v: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut out: Vec<(&[u8], &[u8])> = Vec::new();
    while !v.is_empty() {
        let (len, rest) = take_varint(v)?;
        let (name, rest) = rest.split_at_checked(usize::try_from(len).ok()?)?;
        let (&entry_len, rest) = rest.split_first()?;
        let (entry, rest) = rest.split_at_checked(usize::from(entry_len))?;
        if out.last().is_some_and(|(last, _)| *last >= name) {
            return None;
        }
        out.push((name, entry));
        v = rest;
    }
    Some(out)
}

/// The decoded entries of a stored row (under `key`) whose check holds; `None` when damaged.
fn sound_row<'v>(key: &[u8], stored: &'v [u8]) -> Option<Vec<(&'v [u8], &'v [u8])>> {
    unseal(key, stored).and_then(decode_row)
}

impl Catalog {
    /// Writes a commit's stat cache changes: moves any rows of the older per-path table in
    /// first, then for each directory touched, its row with `remove` taken out and `put`
    /// put in. `put` comes in path order from a scan, so a directory's rows are all seen
    /// before the walk leaves it ("d/" paths are contiguous): the directories open along the
    /// current path are all that is held, not the million rows of a first save.
    pub(super) fn write_stat_dirs(
        &self,
        txn: &WriteTransaction,
        remove: &[Vec<u8>],
        put: &StatRows,
    ) -> Result<(), StoreError> {
        self.move_legacy_stat_rows(txn)?;
        let mut gone: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
        for path in remove {
            let (dir, name) = split(path);
            gone.entry(dir).or_default().push(name);
        }
        let mut table = txn.open_table(STAT_DIRS).map_err(|e| self.err(e))?;
        let mut flush = |dir: Vec<u8>, new: NewEntries| {
            let names = gone.remove(dir.as_slice()).unwrap_or_default();
            self.rewrite_dir(&mut table, &dir, &names, new)
        };
        if put.is_sorted() {
            let mut grouped = ByDirectory::default();
            put.try_for_each(|path, entry| grouped.push(path, entry.to_vec(), &mut flush))?;
            grouped.finish(&mut flush)?;
        } else {
            let mut by_dir: BTreeMap<Vec<u8>, NewEntries> = BTreeMap::new();
            put.try_for_each(|path, entry| {
                let (dir, name) = split(path);
                let new = by_dir.entry(dir.to_vec()).or_default();
                new.push((name.to_vec(), entry.to_vec()));
                Ok::<_, StoreError>(())
            })?;
            for (dir, new) in by_dir {
                flush(dir, new)?;
            }
        }
        let left: Vec<(Vec<u8>, Vec<&[u8]>)> = gone
            .drain()
            .map(|(dir, names)| (dir.to_vec(), names))
            .collect();
        for (dir, names) in left {
            self.rewrite_dir(&mut table, &dir, &names, Vec::new())?;
        }
        Ok(())
    }

    /// Rewrites the parts of `dir` that `gone` and `new` fall in: their sound entries, less
    /// `gone`, with `new` put over them, cut again when past twice [`PART_BYTES`]; a part
    /// left empty goes. Only those parts are decoded.
    fn rewrite_dir(
        &self,
        table: &mut redb::Table<&[u8], &[u8]>,
        dir: &[u8],
        gone: &[&[u8]],
        new: NewEntries,
    ) -> Result<(), StoreError> {
        let mut starts = self.part_starts(table, dir)?;
        if starts.is_empty() {
            starts.push(Vec::new());
        }
        let mut touched: BTreeMap<usize, (Vec<&[u8]>, NewEntries)> = BTreeMap::new();
        for name in gone {
            touched
                .entry(part_of(&starts, name))
                .or_default()
                .0
                .push(name);
        }
        for (name, entry) in new {
            let at = part_of(&starts, &name);
            touched.entry(at).or_default().1.push((name, entry));
        }
        for (at, (gone, new)) in touched {
            let key = part_key(dir, &starts[at]);
            let mut entries: DirEntries =
                match table.get(key.as_slice()).map_err(|e| self.err(e))? {
                    Some(v) => owned(sound_row(&key, v.value()).unwrap_or_default()),
                    None => DirEntries::new(),
                };
            table.remove(key.as_slice()).map_err(|e| self.err(e))?;
            for name in gone {
                entries.remove(name);
            }
            entries.extend(new);
            self.write_parts(table, dir, &entries)?;
        }
        Ok(())
    }

    /// Writes `entries` as parts of about [`PART_BYTES`], each keyed by its first name.
    fn write_parts(
        &self,
        table: &mut redb::Table<&[u8], &[u8]>,
        dir: &[u8],
        entries: &DirEntries,
    ) -> Result<(), StoreError> {
        let size = |(n, e): (&Vec<u8>, &Vec<u8>)| n.len() + e.len() + 2;
        let whole: usize = entries.iter().map(size).sum();
        // A part within twice the size stays whole: an edit does not cut it over and over.
        let cut_at = if whole <= 2 * PART_BYTES {
            usize::MAX
        } else {
            PART_BYTES
        };
        let mut rows = entries.iter().peekable();
        while let Some((first, _)) = rows.peek() {
            let key = part_key(dir, first);
            let mut bytes = 0;
            let chunk = std::iter::from_fn(|| {
                let next = rows.next_if(|_| bytes < cut_at)?;
                bytes += size(next);
                Some((next.0.as_slice(), next.1.as_slice()))
            });
            let row = encode_row(chunk);
            table
                .insert(key.as_slice(), seal(&key, &row).as_slice())
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// The names `dir`'s parts start at, in order: part i holds the names from its start up
    /// to part i + 1's, and part 0 every name before too.
    fn part_starts(
        &self,
        table: &impl ReadableTable<&'static [u8], &'static [u8]>,
        dir: &[u8],
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let (start, end) = dir_range(dir);
        let mut starts = Vec::new();
        for row in table
            .range(start.as_slice()..end.as_slice())
            .map_err(|e| self.err(e))?
        {
            let (k, _) = row.map_err(|e| self.err(e))?;
            starts.push(k.value()[dir.len() + 1..].to_vec());
        }
        Ok(starts)
    }

    /// Moves the sound rows of the older per-path `stat_cache` table into `stat_dirs`, in
    /// the compact entry layout, and empties it (the table stays, for older readers).
    fn move_legacy_stat_rows(&self, txn: &WriteTransaction) -> Result<(), StoreError> {
        let mut legacy = txn.open_table(STAT_CACHE).map_err(|e| self.err(e))?;
        if legacy.is_empty().map_err(|e| self.err(e))? {
            return Ok(());
        }
        // The rows come in key order, which is path order: grouped as a scan's are, a
        // million of them are never all held at once.
        let mut table = txn.open_table(STAT_DIRS).map_err(|e| self.err(e))?;
        let mut flush = |dir: Vec<u8>, new| self.rewrite_dir(&mut table, &dir, &[], new);
        let mut grouped = ByDirectory::default();
        for row in legacy.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let Some(entry) = unseal(k.value(), v.value()).and_then(StatEntry::decode) else {
                continue;
            };
            grouped.push(k.value(), entry.encode().as_slice().to_vec(), &mut flush)?;
        }
        grouped.finish(&mut flush)?;
        legacy.retain(|_, _| false).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Drops every stat cache entry whose object is not in `live`, and every damaged row.
    pub(super) fn retain_live_stats(
        &self,
        txn: &WriteTransaction,
        live: &std::collections::HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        self.move_legacy_stat_rows(txn)?;
        let mut table = txn.open_table(STAT_DIRS).map_err(|e| self.err(e))?;
        let mut changed: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let Some(entries) = sound_row(k.value(), v.value()) else {
                changed.push((k.value().to_vec(), None));
                continue;
            };
            let is_live = |e: &&[u8]| StatEntry::decode(e).is_some_and(|e| live.contains(&e.id));
            let kept: Vec<(&[u8], &[u8])> = entries
                .iter()
                .copied()
                .filter(|(_, e)| is_live(e))
                .collect();
            if kept.len() != entries.len() {
                let row = (!kept.is_empty()).then(|| seal(k.value(), &encode_row(kept)));
                changed.push((k.value().to_vec(), row));
            }
        }
        for (dir, row) in changed {
            match row {
                Some(row) => table.insert(dir.as_slice(), row.as_slice()).map(drop),
                None => table.remove(dir.as_slice()).map(drop),
            }
            .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// The stat cache entries of `paths` (in their order, those that have one), reading only
    /// the rows of their directories: for a scan that needs a few, not the whole table.
    pub fn stat_entries(&self, paths: &[&[u8]]) -> Result<Vec<(Vec<u8>, StatEntry)>, StoreError> {
        let txn = self.read()?;
        let table = open_or_none(txn.open_table(STAT_DIRS)).map_err(|e| self.err(e))?;
        let legacy = open_or_none(txn.open_table(STAT_CACHE)).map_err(|e| self.err(e))?;
        // The part starts of each directory asked about, and each part decoded, once.
        let mut starts: HashMap<Vec<u8>, Vec<Vec<u8>>> = HashMap::new();
        let mut parts: HashMap<Vec<u8>, DirEntries> = HashMap::new();
        let mut out = Vec::new();
        for path in paths {
            let (dir, name) = split(path);
            let mut entry = None;
            if let Some(table) = &table {
                if !starts.contains_key(dir) {
                    starts.insert(dir.to_vec(), self.part_starts(table, dir)?);
                }
                let dir_starts = starts.get(dir).map(Vec::as_slice).unwrap_or_default();
                if !dir_starts.is_empty() {
                    let key = part_key(dir, &dir_starts[part_of(dir_starts, name)]);
                    if !parts.contains_key(&key) {
                        let value = table.get(key.as_slice()).map_err(|e| self.err(e))?;
                        let decoded = value.and_then(|v| sound_row(&key, v.value()).map(owned));
                        parts.insert(key.clone(), decoded.unwrap_or_default());
                    }
                    entry = parts
                        .get(&key)
                        .and_then(|p| p.get(name))
                        .and_then(|e| StatEntry::decode(e));
                }
            }
            if let (None, Some(legacy)) = (entry, &legacy) {
                let value = legacy.get(*path).map_err(|e| self.err(e))?;
                entry = value.and_then(|v| unseal(path, v.value()).and_then(StatEntry::decode));
            }
            if let Some(entry) = entry {
                out.push((path.to_vec(), entry));
            }
        }
        Ok(out)
    }

    /// The whole stat cache, in path order. Malformed entries and damaged rows are left out
    /// (those files are read again).
    pub fn stat_cache(&self) -> Result<Vec<(Vec<u8>, StatEntry)>, StoreError> {
        let txn = self.read()?;
        let mut out = Vec::new();
        if let Some(table) = open_or_none(txn.open_table(STAT_DIRS)).map_err(|e| self.err(e))? {
            for row in table.iter().map_err(|e| self.err(e))? {
                let (k, v) = row.map_err(|e| self.err(e))?;
                let Some(dir) = key_dir(k.value()) else {
                    continue;
                };
                for (name, entry) in sound_row(k.value(), v.value()).unwrap_or_default() {
                    if let Some(entry) = StatEntry::decode(entry) {
                        out.push((join(dir, name), entry));
                    }
                }
            }
        }
        if let Some(legacy) = open_or_none(txn.open_table(STAT_CACHE)).map_err(|e| self.err(e))? {
            out.reserve(capacity_hint(legacy.len().map_err(|e| self.err(e))?));
            for row in legacy.iter().map_err(|e| self.err(e))? {
                let (k, v) = row.map_err(|e| self.err(e))?;
                if let Some(entry) = unseal(k.value(), v.value()).and_then(StatEntry::decode) {
                    out.push((k.value().to_vec(), entry));
                }
            }
        }
        // Rows in key order give paths in order but where a directory's files and its
        // subdirectories' interleave: runs the stable sort merges in about linear time.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|later, first| later.0 == first.0);
        Ok(out)
    }

    /// `verify`'s look at the stat cache: each row must carry a sound check and decode, and
    /// each entry name an object that is `known`. Describes each that fails.
    pub(super) fn audit_stat_dirs(
        &self,
        known: &dyn Fn(&ObjectId) -> bool,
        faults: &mut Vec<String>,
    ) -> Result<(), StoreError> {
        let txn = self.read()?;
        let Some(table) = open_or_none(txn.open_table(STAT_DIRS)).map_err(|e| self.err(e))? else {
            return Ok(());
        };
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let dir = key_dir(k.value()).unwrap_or(k.value());
            let shown = String::from_utf8_lossy(dir);
            let Some(entries) =
                sound_row(k.value(), v.value()).filter(|_| key_dir(k.value()).is_some())
            else {
                faults.push(format!(
                    "the stat cache row of directory {shown:?} is damaged (its check fails); saves ignore it"
                ));
                continue;
            };
            for (name, entry) in entries {
                let path = String::from_utf8_lossy(&join(dir, name)).into_owned();
                match StatEntry::decode(entry) {
                    None => faults.push(format!("the stat cache entry of {path:?} is malformed")),
                    Some(e) if !known(&e.id) => faults.push(format!(
                        "the stat cache entry of {path:?} names object {}, which the store lacks",
                        e.id.short()
                    )),
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}

/// A table, or `None` when it does not exist (an older catalog opened read-only).
fn open_or_none<T>(opened: Result<T, redb::TableError>) -> Result<Option<T>, redb::TableError> {
    match opened {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_the_directory_or_below_it() {
        assert!(within(b"a/b", b""));
        assert!(within(b"a/b", b"a"));
        assert!(within(b"a", b"a"));
        assert!(!within(b"a.b", b"a"));
        assert!(!within(b"ab", b"a"));
        assert!(!within(b"a", b"a/b"));
    }

    #[test]
    fn rows_round_trip_and_refuse_disorder_and_cuts() {
        let long = vec![b'n'; 300];
        let entries = [
            (&b"a"[..], &[1u8, 2][..]),
            (&long, &[3u8; 76][..]),
            (b"z", &[]),
        ];
        let row = encode_row(entries);
        assert_eq!(decode_row(&row), Some(entries.to_vec()));
        for cut in 1..row.len() {
            assert_ne!(decode_row(&row[..cut]), Some(entries.to_vec()), "cut {cut}");
        }
        let swapped = encode_row([entries[1], entries[0]]);
        assert_eq!(decode_row(&swapped), None);
        assert_eq!(decode_row(&encode_row([entries[0], entries[0]])), None);
    }
}

#[cfg(test)]
pub(super) mod catalog_tests {
    use std::collections::HashSet;

    use super::*;
    use crate::{Commit, EntryKind, StatCacheUpdate, StatKey};

    fn entry(n: u64) -> StatEntry {
        let key = StatKey {
            size: n,
            mtime_ns: 10,
            ctime_ns: 11,
            ino: n + 100,
            mode: 0o100644,
        };
        StatEntry::hashed(key, EntryKind::File, ObjectId([n as u8; 32]), 20)
    }

    /// Paths where a directory's files and its subdirectories' interleave in path order,
    /// and a name that sorts before `/` (`a.b` against `a/`).
    fn tricky_paths() -> Vec<Vec<u8>> {
        let mut paths: Vec<Vec<u8>> = [
            "a", "a.b/x", "a/b", "a/b.c", "a/b/c", "a/b/c/d", "a/bz", "a0", "b/a", "b/a/b", "z",
        ]
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
        paths.extend((0..300).map(|n| format!("many/f{n:04}").into_bytes()));
        paths.sort();
        paths
    }

    fn commit(catalog: &Catalog, put: StatRows, remove: Vec<Vec<u8>>) {
        let stat_cache = StatCacheUpdate {
            put,
            remove,
            ..StatCacheUpdate::default()
        };
        let commit = Commit {
            stat_cache,
            ..Commit::default()
        };
        catalog.commit(&commit).unwrap();
    }

    #[test]
    fn entries_come_back_in_path_order_whatever_order_they_were_put_in() {
        for reversed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
            let want: Vec<_> = (tricky_paths().into_iter().enumerate())
                .map(|(n, p)| (p, entry(n as u64)))
                .collect();
            let mut put = StatRows::spilling_at(dir.path(), 200);
            let order: Vec<_> = match reversed {
                false => want.iter().collect(),
                true => want.iter().rev().collect(),
            };
            for (path, e) in order {
                put.push(path, e);
            }
            commit(&catalog, put, Vec::new());
            assert_eq!(catalog.stat_cache().unwrap(), want, "reversed {reversed}");
            let asked: Vec<&[u8]> = [&b"a/b/c"[..], b"missing/x", b"a.b/x", b"z", b"a/bq"].to_vec();
            let got = catalog.stat_entries(&asked).unwrap();
            let got: Vec<&[u8]> = got.iter().map(|(p, _)| p.as_slice()).collect();
            assert_eq!(got, [&b"a/b/c"[..], b"a.b/x", b"z"]);
        }
    }

    #[test]
    fn removes_and_puts_rewrite_only_their_directories_and_empty_rows_go() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
        let put = |paths: &[&str], n: u64| -> StatRows {
            paths
                .iter()
                .map(|p| (p.as_bytes().to_vec(), entry(n)))
                .collect()
        };
        commit(&catalog, put(&["d/a", "d/b", "e/c", "f"], 1), Vec::new());
        commit(
            &catalog,
            put(&["d/b", "g/h"], 2),
            vec![b"e/c".to_vec(), b"d/a".to_vec()],
        );
        let got = catalog.stat_cache().unwrap();
        let want = vec![
            (b"d/b".to_vec(), entry(2)),
            (b"f".to_vec(), entry(1)),
            (b"g/h".to_vec(), entry(2)),
        ];
        assert_eq!(got, want);
        let txn = catalog.read().unwrap();
        let table = txn.open_table(STAT_DIRS).unwrap();
        let e = part_key(b"e", b"c");
        assert!(
            table.get(e.as_slice()).unwrap().is_none(),
            "an empty row goes"
        );
        assert_eq!(table.len().unwrap(), 3);
    }

    #[test]
    fn a_directory_of_many_parts_loses_and_gains_entries_across_them() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
        let path = |n: u64| format!("m/file-{n:05}.txt").into_bytes();
        let put: StatRows = (0..400u64).map(|n| (path(n), entry(n))).collect();
        commit(&catalog, put, Vec::new());
        let parts = |catalog: &Catalog| {
            let txn = catalog.read().unwrap();
            txn.open_table(STAT_DIRS).unwrap().len().unwrap()
        };
        assert!(parts(&catalog) > 10, "{} parts", parts(&catalog));
        let gone: Vec<Vec<u8>> = (0..400u64).filter(|n| n % 3 == 0).map(path).collect();
        let put: StatRows = [(path(1), entry(7))].into_iter().collect();
        commit(&catalog, put, gone);
        let want: Vec<_> = (0..400u64)
            .filter(|n| n % 3 != 0)
            .map(|n| (path(n), entry(if n == 1 { 7 } else { n })))
            .collect();
        assert_eq!(catalog.stat_cache().unwrap(), want);
        let asked = [path(1), path(3), path(398)];
        let asked: Vec<&[u8]> = asked.iter().map(Vec::as_slice).collect();
        let got = catalog.stat_entries(&asked).unwrap();
        assert_eq!(got, vec![(path(1), entry(7)), (path(398), entry(398))]);
        let all_gone: Vec<Vec<u8>> = want.into_iter().map(|(p, _)| p).collect();
        commit(&catalog, StatRows::default(), all_gone);
        assert_eq!(parts(&catalog), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Whatever puts and removes come, in whatever directories and order, the cache
        /// reads back as a map of the same changes would.
        #[test]
        fn the_cache_matches_a_model_of_its_changes(
            steps in proptest::collection::vec(
                proptest::collection::vec((0u8..3, 0u16..120, proptest::prelude::any::<bool>(), 0u64..9), 1..80),
                1..6,
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
            let mut model: BTreeMap<Vec<u8>, StatEntry> = BTreeMap::new();
            for step in steps {
                let mut put = BTreeMap::new();
                let mut gone = Vec::new();
                for (d, n, is_put, v) in step {
                    let path = match d {
                        0 => format!("f{n:03}"),
                        1 => format!("a/f{n:03}"),
                        _ => format!("a/b{}/f{n:03}", n % 2),
                    }
                    .into_bytes();
                    if is_put {
                        put.insert(path.clone(), entry(v + u64::from(n)));
                        gone.retain(|g| *g != path);
                    } else {
                        put.remove(&path);
                        gone.push(path);
                    }
                }
                for path in &gone {
                    model.remove(path);
                }
                model.extend(put.clone());
                commit(&catalog, put.into_iter().collect(), gone);
                let want: Vec<_> = model.iter().map(|(p, e)| (p.clone(), *e)).collect();
                proptest::prop_assert_eq!(catalog.stat_cache().unwrap(), want);
            }
        }
    }

    #[test]
    fn per_path_rows_are_read_then_moved_in_by_the_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        // Rows of the older table, one of them in the older fixed layout.
        let old = [(b"d/x".to_vec(), entry(1)), (b"top".to_vec(), entry(2))];
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut legacy = txn.open_table(STAT_CACHE).unwrap();
            for (p, e) in &old {
                legacy
                    .insert(p.as_slice(), seal(p, e.encode().as_slice()).as_slice())
                    .unwrap();
            }
        }
        txn.commit().unwrap();
        drop(db);
        let catalog = Catalog::open(&path, false).unwrap();
        assert_eq!(catalog.stat_cache().unwrap(), old.to_vec());
        assert_eq!(
            catalog.stat_entries(&[b"top"]).unwrap(),
            vec![old[1].clone()]
        );
        let put: StatRows = [(b"d/y".to_vec(), entry(3))].into_iter().collect();
        commit(&catalog, put, Vec::new());
        let txn = catalog.read().unwrap();
        assert!(txn.open_table(STAT_CACHE).unwrap().is_empty().unwrap());
        let mut want = old.to_vec();
        want.push((b"d/y".to_vec(), entry(3)));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(catalog.stat_cache().unwrap(), want);
    }

    #[test]
    fn per_path_rows_of_interleaved_directories_all_move() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let old: Vec<_> = (tricky_paths().into_iter().enumerate())
            .map(|(n, p)| (p, entry(n as u64)))
            .collect();
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut legacy = txn.open_table(STAT_CACHE).unwrap();
            for (p, e) in &old {
                let row = seal(p, e.encode().as_slice());
                legacy.insert(p.as_slice(), row.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
        drop(db);
        let catalog = Catalog::open(&path, false).unwrap();
        commit(&catalog, StatRows::default(), vec![b"a/b".to_vec()]);
        let want: Vec<_> = old.into_iter().filter(|(p, _)| p != b"a/b").collect();
        assert_eq!(catalog.stat_cache().unwrap(), want);
        let txn = catalog.read().unwrap();
        assert!(txn.open_table(STAT_CACHE).unwrap().is_empty().unwrap());
    }

    #[test]
    fn gc_keeps_only_entries_of_live_objects() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
        let put: StatRows = (1..=4u64)
            .map(|n| (format!("d{}/f{n}", n % 2).into_bytes(), entry(n)))
            .collect();
        commit(&catalog, put, Vec::new());
        let live: HashSet<ObjectId> = [ObjectId([2; 32])].into_iter().collect();
        let stat_cache = StatCacheUpdate {
            only_live: Some(live),
            ..StatCacheUpdate::default()
        };
        catalog
            .commit(&Commit {
                stat_cache,
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(
            catalog.stat_cache().unwrap(),
            vec![(b"d0/f2".to_vec(), entry(2))]
        );
    }

    #[test]
    fn a_damaged_row_is_ignored_whole_and_the_audit_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let catalog = Catalog::create(&path).unwrap();
        let put: StatRows = [(b"d/a".to_vec(), entry(1)), (b"d/b".to_vec(), entry(2))]
            .into_iter()
            .collect();
        commit(&catalog, put, Vec::new());
        let row = {
            let txn = catalog.read().unwrap();
            let table = txn.open_table(STAT_DIRS).unwrap();
            let key = part_key(b"d", b"a");
            table.get(key.as_slice()).unwrap().unwrap().value().to_vec()
        };
        drop(catalog);
        for bit in (0..row.len() * 8).step_by(7) {
            let mut bad = row.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let key = part_key(b"d", b"a");
            let damage = |txn: &WriteTransaction| {
                let mut table = txn.open_table(STAT_DIRS).unwrap();
                table.insert(key.as_slice(), bad.as_slice()).unwrap();
            };
            damage_is_ignored_and_named(&path, damage, b"d/a", bit);
        }
    }

    /// Damages the catalog at `path` with `damage`, then checks, reopening it, that the stat
    /// cache has no entry (`probe` among them), and that `verify`'s audit names the damage.
    pub(in crate::catalog) fn damage_is_ignored_and_named(
        path: &std::path::Path,
        damage: impl FnOnce(&WriteTransaction),
        probe: &[u8],
        bit: usize,
    ) {
        let db = redb::Database::open(path).unwrap();
        let txn = db.begin_write().unwrap();
        damage(&txn);
        txn.commit().unwrap();
        drop(db);
        let catalog = Catalog::open(path, true).unwrap();
        assert!(catalog.stat_cache().unwrap().is_empty(), "bit {bit}");
        assert!(
            catalog.stat_entries(&[probe]).unwrap().is_empty(),
            "bit {bit}"
        );
        let faults = catalog.audit_caches(|_| true).unwrap();
        assert!(faults[0].contains("damaged"), "bit {bit}: {faults:?}");
    }
}
