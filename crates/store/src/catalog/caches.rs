//! The cache tables and memos of the catalog: stat, directory and tree caches and the
//! scan, walk and directory-rule memos. Each row is sealed with its check (`rows::seal`);
//! a row whose check fails reads as absent, and `audit_caches` names it for `verify`.

use redb::{
    ReadOnlyTable, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle,
    WriteTransaction,
};

use super::Catalog;
use super::rows::{capacity_hint, seal, unseal};
use super::tables::{DIR_CACHE, META, STAT_CACHE, TREE_CACHE};
use crate::cache::dir::{DirCache, DirCacheUpdate};
use crate::cache::stat::{ScanMemo, StatCacheUpdate, StatEntry, WalkMemo, WatchMemo};
use crate::cache::untracked::{UntrackedFile, decode_untracked, encode_untracked};
use crate::{ObjectId, PathMap, StoreError};

/// `put` sorted by key. In key order, rows fill redb's leaves; in walk order (threads
/// finishing directories as they go) they split leaves and leave them about half empty.
fn in_key_order<'a, V>(put: impl IntoIterator<Item = (&'a [u8], V)>) -> Vec<(&'a [u8], V)> {
    let mut put: Vec<(&[u8], V)> = put.into_iter().collect();
    put.sort_unstable_by(|a, b| a.0.cmp(b.0));
    put
}

/// A cache table as a read sees it: path bytes to sealed rows.
type CacheTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

impl Catalog {
    pub(super) fn write_stat_cache(
        &self,
        txn: &WriteTransaction,
        update: &StatCacheUpdate,
    ) -> Result<(), StoreError> {
        if let Some(live) = &update.only_live {
            self.retain_live(txn, live)?;
        }
        if let Some(memo) = update.memo {
            self.set_meta(txn, "scan", &memo.encode())?;
        }
        if let Some(walk) = update.walk {
            self.set_meta(txn, "walk", &walk.encode())?;
        }
        if let Some(watch) = update.watch {
            self.set_meta(txn, "watch", &watch.encode())?;
        }
        if let Some(untracked) = &update.untracked {
            self.set_meta(txn, "untracked", &encode_untracked(untracked))?;
        }
        self.write_stat_dirs(txn, &update.remove, &update.put)?;
        // Before the tree cache entries: a new config drops every directory's entries.
        self.write_dir_cache(txn, &update.dirs)?;
        let put = update.trees.iter().map(|(p, m)| (p.as_slice(), m.encode()));
        self.write_rows(txn, TREE_CACHE, [], in_key_order(put))
    }

    /// Drops the stat and tree cache rows and the scan and walk memos that name an object
    /// outside `live`, or whose check fails. All four vouch for objects, which gc may have
    /// just dropped (a memo can name the root of a scan whose snapshot prune removed); an
    /// object in `live` is one gc keeps, and so is everything under a live tree.
    fn retain_live(
        &self,
        txn: &WriteTransaction,
        live: &std::collections::HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        let vouched = |key: &[u8], value: &[u8], id: fn(&[u8]) -> Option<ObjectId>| {
            unseal(key, value)
                .and_then(id)
                .is_some_and(|id| live.contains(&id))
        };
        self.retain_live_stats(txn, live)?;
        let tree_id: fn(&[u8]) -> Option<ObjectId> = |v| WalkMemo::decode(v).map(|m| m.root);
        let mut rows = txn.open_table(TREE_CACHE).map_err(|e| self.err(e))?;
        rows.retain(|k, v| vouched(k, v, tree_id))
            .map_err(|e| self.err(e))?;
        let scan_id: fn(&[u8]) -> Option<ObjectId> = |v| ScanMemo::decode(v).map(|m| m.root);
        let watch_id: fn(&[u8]) -> Option<ObjectId> = |v| WatchMemo::decode(v).map(|m| m.root);
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        for (key, id) in [("scan", scan_id), ("walk", tree_id), ("watch", watch_id)] {
            let keep = match meta.get(key).map_err(|e| self.err(e))? {
                Some(v) => vouched(key.as_bytes(), v.value(), id),
                None => true,
            };
            if !keep {
                meta.remove(key).map_err(|e| self.err(e))?;
            }
        }
        Ok(())
    }

    fn write_dir_cache(
        &self,
        txn: &WriteTransaction,
        update: &DirCacheUpdate,
    ) -> Result<(), StoreError> {
        if update.clear {
            txn.delete_table(DIR_CACHE).map_err(|e| self.err(e))?;
            txn.delete_table(TREE_CACHE).map_err(|e| self.err(e))?;
        }
        if let Some(fingerprint) = update.fingerprint {
            self.set_meta(txn, "dirs", &fingerprint)?;
        }
        let gone = || update.remove.iter().map(Vec::as_slice);
        let put = update.put.iter().map(|(p, r)| (p.as_slice(), r.as_slice()));
        self.write_rows(txn, DIR_CACHE, gone(), in_key_order(put))?;
        self.write_rows(
            txn,
            TREE_CACHE,
            gone(),
            std::iter::empty::<(&[u8], &[u8])>(),
        )
    }

    fn set_meta(&self, txn: &WriteTransaction, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let sealed = seal(key.as_bytes(), value);
        meta.insert(key, sealed.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Removes the `remove` keys from `table`, then inserts the `put` rows, which come in
    /// key order (see [`in_key_order`]).
    fn write_rows<'a, V: AsRef<[u8]>>(
        &self,
        txn: &WriteTransaction,
        table: TableDefinition<&[u8], &[u8]>,
        remove: impl IntoIterator<Item = &'a [u8]>,
        put: impl IntoIterator<Item = (&'a [u8], V)>,
    ) -> Result<(), StoreError> {
        let mut table = txn.open_table(table).map_err(|e| self.err(e))?;
        for key in remove {
            table.remove(key).map_err(|e| self.err(e))?;
        }
        for (key, value) in put {
            self.put_sealed(&mut table, key, value.as_ref())?;
        }
        Ok(())
    }

    /// Inserts `value` under `key`, sealed with its check.
    fn put_sealed(
        &self,
        table: &mut redb::Table<&[u8], &[u8]>,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StoreError> {
        let sealed = seal(key, value);
        table
            .insert(key, sealed.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The directory cache: the fingerprint of the rules it was built under
    /// (`meta["dirs"]`), and every record by directory path, undecoded. Empty in an old
    /// catalog opened read-only, which has no such table.
    pub fn dir_cache(&self) -> Result<DirCache, StoreError> {
        Ok(DirCache {
            fingerprint: self.meta_value("dirs", |v| v.try_into().ok())?,
            records: self.cache_rows(DIR_CACHE, |v| Some(v.to_vec()))?,
        })
    }

    /// The directory cache's records of `dirs` only, each read by its key: what a scan that
    /// re-reads a few directories needs, without reading the whole table. A directory with
    /// no sound record is absent.
    pub fn dir_records(&self, dirs: &[&[u8]]) -> Result<DirCache, StoreError> {
        Ok(DirCache {
            fingerprint: self.meta_value("dirs", |v| v.try_into().ok())?,
            records: self.cache_rows_at(DIR_CACHE, dirs, |v| Some(v.to_vec()))?,
        })
    }

    /// The tree cache's memos of `dirs` only, each read by its key (see [`Self::dir_records`]).
    pub fn tree_memos(&self, dirs: &[&[u8]]) -> Result<PathMap<Vec<u8>, WalkMemo>, StoreError> {
        self.cache_rows_at(TREE_CACHE, dirs, WalkMemo::decode)
    }

    /// The memo of the last committed scan, if any (malformed: none).
    pub fn scan_memo(&self) -> Result<Option<ScanMemo>, StoreError> {
        self.meta_value("scan", ScanMemo::decode)
    }

    /// The tree cache: for each directory, the memo of its subtree as the last scan that
    /// built its tree saw it. Malformed entries are left out; an old catalog opened
    /// read-only has none.
    pub fn tree_cache(&self) -> Result<PathMap<Vec<u8>, WalkMemo>, StoreError> {
        self.cache_rows(TREE_CACHE, WalkMemo::decode)
    }

    /// The files on disk the last save could not keep (malformed or never written: none).
    pub fn untracked(&self) -> Result<Vec<UntrackedFile>, StoreError> {
        Ok(self
            .meta_value("untracked", decode_untracked)?
            .unwrap_or_default())
    }

    /// The memo of the last exact walk, if any (malformed: none).
    pub fn walk_memo(&self) -> Result<Option<WalkMemo>, StoreError> {
        self.meta_value("walk", WalkMemo::decode)
    }

    /// The change source's token of the last capture that a watcher answered, if any
    /// (malformed: none).
    pub fn watch_memo(&self) -> Result<Option<WatchMemo>, StoreError> {
        self.meta_value("watch", WatchMemo::decode)
    }

    /// `meta[key]`, decoded; `None` when absent or malformed.
    fn meta_value<T>(
        &self,
        key: &str,
        decode: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let value = meta.get(key).map_err(|e| self.err(e))?;
        Ok(value.and_then(|v| unseal(key.as_bytes(), v.value()).and_then(&decode)))
    }

    /// A cache table opened for reading; `None` when it does not exist (an old catalog opened
    /// read-only).
    fn cache_table(
        &self,
        table: TableDefinition<&[u8], &[u8]>,
    ) -> Result<Option<CacheTable>, StoreError> {
        match self.read()?.open_table(table) {
            Ok(table) => Ok(Some(table)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Every row of a cache table whose value decodes; empty when the table does not exist
    /// (an old catalog opened read-only).
    fn cache_rows<T>(
        &self,
        table: TableDefinition<&[u8], &[u8]>,
        decode: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<PathMap<Vec<u8>, T>, StoreError> {
        let Some(table) = self.cache_table(table)? else {
            return Ok(PathMap::default());
        };
        let rows = capacity_hint(table.len().map_err(|e| self.err(e))?);
        let mut out = PathMap::with_capacity_and_hasher(rows, Default::default());
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            if let Some(value) = unseal(k.value(), v.value()).and_then(&decode) {
                out.insert(k.value().to_vec(), value);
            }
        }
        Ok(out)
    }

    /// The rows of a cache table at `keys` whose value decodes; empty when the table does not
    /// exist (an old catalog opened read-only).
    fn cache_rows_at<T>(
        &self,
        table: TableDefinition<&[u8], &[u8]>,
        keys: &[&[u8]],
        decode: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<PathMap<Vec<u8>, T>, StoreError> {
        let Some(table) = self.cache_table(table)? else {
            return Ok(PathMap::default());
        };
        let mut out = PathMap::with_capacity_and_hasher(keys.len(), Default::default());
        for key in keys {
            let Some(v) = table.get(*key).map_err(|e| self.err(e))? else {
                continue;
            };
            if let Some(value) = unseal(key, v.value()).and_then(&decode) {
                out.insert(key.to_vec(), value);
            }
        }
        Ok(out)
    }

    /// Checks every cache row and memo for `verify`: each must carry a sound check, and each
    /// object id one vouches for must be `known` (in the catalog). Describes each that fails.
    pub(crate) fn audit_caches(
        &self,
        known: impl Fn(&ObjectId) -> bool,
    ) -> Result<Vec<String>, StoreError> {
        let mut faults = Vec::new();
        let stat = |v: &[u8]| StatEntry::decode(v).map(|e| Some(e.id));
        let tree = |v: &[u8]| WalkMemo::decode(v).map(|m| Some(m.root));
        let listing = |_: &[u8]| Some(None);
        for (table, vouches) in [
            (
                STAT_CACHE,
                &stat as &dyn Fn(&[u8]) -> Option<Option<ObjectId>>,
            ),
            (TREE_CACHE, &tree),
            (DIR_CACHE, &listing),
        ] {
            self.audit_table(table, vouches, &known, &mut faults)?;
        }
        self.audit_stat_dirs(&known, &mut faults)?;
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        for key in ["scan", "walk", "dirs"] {
            let Some(v) = meta.get(key).map_err(|e| self.err(e))? else {
                continue;
            };
            let root = unseal(key.as_bytes(), v.value()).map(|v| match key {
                "scan" => ScanMemo::decode(v).map(|m| m.root),
                "walk" => WalkMemo::decode(v).map(|m| m.root),
                _ => None,
            });
            match root {
                None => faults.push(format!("the {key} memo is damaged (its check fails)")),
                Some(Some(id)) if !known(&id) => faults.push(format!(
                    "the {key} memo names tree {}, which the store lacks",
                    id.short()
                )),
                Some(_) => {}
            }
        }
        Ok(faults)
    }

    fn audit_table(
        &self,
        table: TableDefinition<&[u8], &[u8]>,
        vouches: &dyn Fn(&[u8]) -> Option<Option<ObjectId>>,
        known: &dyn Fn(&ObjectId) -> bool,
        faults: &mut Vec<String>,
    ) -> Result<(), StoreError> {
        let txn = self.read()?;
        let rows = match txn.open_table(table) {
            Ok(rows) => rows,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(self.err(e)),
        };
        for row in rows.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let path = String::from_utf8_lossy(k.value());
            match unseal(k.value(), v.value()).and_then(vouches) {
                None => faults.push(format!(
                    "the {} row of {path:?} is damaged (its check fails); saves ignore it",
                    table.name()
                )),
                Some(Some(id)) if !known(&id) => faults.push(format!(
                    "the {} row of {path:?} names object {}, which the store lacks",
                    table.name(),
                    id.short()
                )),
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::Commit;

    /// A stat row's entry for a file of `size` bytes.
    fn entry_of_size(size: u64) -> StatEntry {
        StatEntry {
            key: crate::StatKey {
                size,
                mtime_ns: 1,
                ctime_ns: 2,
                ino: 3,
                mode: 0o100644,
            },
            kind: crate::EntryKind::File,
            id: ObjectId([7; 32]),
            settled: true,
        }
    }

    /// A point read of the directory cache gives exactly the whole table's records at those
    /// keys: the present ones, and none for a directory it has no record of.
    #[test]
    fn a_point_read_of_the_directory_cache_agrees_with_the_whole_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let catalog = Catalog::open(&path, false).unwrap();
        let put: Vec<(Vec<u8>, Vec<u8>)> = [&b""[..], b"a", b"a/b", b"c"]
            .iter()
            .map(|d| (d.to_vec(), [d, &b"-record"[..]].concat()))
            .collect();
        let dirs = crate::DirCacheUpdate {
            fingerprint: Some([7; 32]),
            put,
            ..crate::DirCacheUpdate::default()
        };
        let stat_cache = StatCacheUpdate {
            dirs,
            ..StatCacheUpdate::default()
        };
        catalog
            .commit(&Commit {
                stat_cache,
                ..Commit::default()
            })
            .unwrap();
        let whole = catalog.dir_cache().unwrap();
        let asked: [&[u8]; 3] = [b"a/b", b"gone", b""];
        let some = catalog.dir_records(&asked).unwrap();
        assert_eq!(some.fingerprint, Some([7; 32]));
        let expected: PathMap<Vec<u8>, Vec<u8>> = (asked.iter())
            .filter_map(|d| Some((d.to_vec(), whole.records.get(*d)?.clone())))
            .collect();
        assert_eq!(some.records, expected);
        assert_eq!(some.records.len(), 2);
        assert!(catalog.tree_memos(&asked).unwrap().is_empty());
    }

    /// One flipped bit anywhere in a cache row makes the row absent (the file is read
    /// again), and the audit names it; a sound row naming a missing object is named too.
    #[test]
    fn a_damaged_cache_row_is_never_trusted_and_the_audit_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let entry = entry_of_size(5);
        let update = StatCacheUpdate {
            put: [(b"f".to_vec(), entry)].into_iter().collect(),
            ..StatCacheUpdate::default()
        };
        let catalog = Catalog::open(&path, false).unwrap();
        catalog
            .commit(&Commit {
                stat_cache: update,
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(catalog.stat_cache().unwrap(), vec![(b"f".to_vec(), entry)]);
        let faults = catalog.audit_caches(|_| false).unwrap();
        assert!(faults[0].contains("names object"), "{faults:?}");
        assert!(catalog.audit_caches(|_| true).unwrap().is_empty());
        drop(catalog);
        let sealed = seal(b"f", entry.encode().as_slice());
        for bit in 0..sealed.len() * 8 {
            let mut bad = sealed.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            // A damaged row of the older per-path table, the entry's only copy.
            let damage = |txn: &WriteTransaction| {
                let mut dirs = txn.open_table(super::super::statdirs::STAT_DIRS).unwrap();
                dirs.retain(|_, _| false).unwrap();
                let mut legacy = txn.open_table(STAT_CACHE).unwrap();
                legacy.insert(b"f".as_slice(), bad.as_slice()).unwrap();
            };
            super::super::statdirs::catalog_tests::damage_is_ignored_and_named(
                &path, damage, b"f", bit,
            );
        }
    }

    fn commit_stat_cache(catalog: &Catalog, stat_cache: StatCacheUpdate) {
        let commit = Commit {
            stat_cache,
            ..Commit::default()
        };
        catalog.commit(&commit).unwrap();
    }

    /// Rows pushed out of path order (a scan pushes them in order) are all written.
    #[test]
    fn stat_rows_out_of_path_order_are_all_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let catalog = Catalog::create(&path).unwrap();
        let entry = entry_of_size;
        let rows = [
            (b"b/z".to_vec(), entry(1)),
            (b"a".to_vec(), entry(2)),
            (b"b".to_vec(), entry(3)),
        ];
        let stat_cache = StatCacheUpdate {
            put: rows.iter().cloned().collect(),
            ..StatCacheUpdate::default()
        };
        commit_stat_cache(&catalog, stat_cache);
        let mut want = rows.to_vec();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(catalog.stat_cache().unwrap(), want);
    }

    /// Rows most of which were spilled to a file are all written, pushed in path order or
    /// not, and the rows the update removes are gone.
    #[test]
    fn spilled_stat_rows_are_all_written() {
        for reversed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
            let mut want: Vec<_> = (0..2000u64)
                .map(|n| (format!("d{}/f{n:05}", n % 7).into_bytes(), entry_of_size(n)))
                .collect();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            let mut put = crate::StatRows::spilling_at(dir.path(), 1000);
            let order: Vec<_> = match reversed {
                false => want.iter().collect(),
                true => want.iter().rev().collect(),
            };
            for (path, entry) in order {
                put.push(path, entry);
            }
            let old = (b"gone".to_vec(), entry_of_size(1));
            for stat_cache in [[old].into_iter().collect(), put].map(|put| StatCacheUpdate {
                put,
                remove: vec![b"gone".to_vec()],
                ..StatCacheUpdate::default()
            }) {
                commit_stat_cache(&catalog, stat_cache);
            }
            assert_eq!(catalog.stat_cache().unwrap(), want, "reversed: {reversed}");
        }
    }
}
