//! The redb catalog: where each object lives, the snapshot records, HEAD and the redo stack.
//!
//! Tables (keys and values are little-endian byte strings; layouts in docs/FORMAT.md):
//! ```text
//! meta       &str  -> &[u8]  "format" u32 LE | "head" id [32] | "redo" id[32]* (bottom first)
//!                            | "scan" scan memo | "walk" walk memo | "dirs" dir-cache fingerprint
//!                            | "created" i64 LE | "pack_next" u32 LE (the next pack number)
//!                            | "dropped" pack id [32]* (dropped packs whose files may remain)
//! objects    &[u8] -> &[u8]  id [32] -> pack number u32 | offset u64 | kind u8 | compression u8
//!                                       | raw_len u32 | stored_len u32            (22 bytes)
//!                                       (before version 5: pack id [32] in place of the number)
//! packs      &[u8] -> u64    pack id [32] -> object count
//! pack_ids   u32   -> &[u8]  pack number -> pack id [32]
//! pack_numbers &[u8] -> u32  pack id [32] -> pack number
//! snapshots  u64   -> &[u8]  seq -> snapshot id [32] | encoded SnapshotRecord (past the
//!                            largest key when two snapshots share a number: `free_key`)
//! snap_ids   &[u8] -> u64    snapshot id [32] -> seq
//! stat_cache &[u8] -> &[u8]  path -> StatEntry (before version 5; emptied by its first write)
//! stat_dirs  &[u8] -> &[u8]  directory | 0x00 | first name -> entries (statdirs.rs)
//! dir_cache  &[u8] -> &[u8]  directory path -> DirRecord (its listing)
//! tree_cache &[u8] -> &[u8]  directory path -> subtree memo (72 bytes)
//! ```
//! The cache rows and memos (`stat_cache`, `dir_cache`, `tree_cache`, `meta` "scan", "walk",
//! "dirs") end with an 8-byte check of key and value (`seal`); a row whose check fails is
//! ignored. Every change of a save, undo, redo or restore is one write transaction, committed
//! durably.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use redb::{
    Database, ReadOnlyDatabase, ReadOnlyTable, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableHandle, WriteTransaction,
};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::{ObjectId, SnapshotRecord, StoreError};

mod caches;
mod commit;
mod expunged;
pub(crate) mod file;
mod locations;
mod pulled;
mod rows;
mod statdirs;
mod tables;
mod turns;

pub use commit::Commit;
pub use expunged::{ExpungeRows, PurgeRow};
pub(crate) use locations::Locations;
pub use pulled::{Pulled, PulledChange};
pub use rows::{HistoryState, Location, decode_snapshot_row, encode_location};
pub use tables::CATALOG_VERSION;
use tables::{
    DIR_CACHE, META, OBJECTS, PACK_IDS, PACK_NUMBERS, PACKS, SNAP_IDS, SNAPSHOTS, STAT_CACHE,
    TREE_CACHE,
};

/// A read-only view of the `objects` table, with the pack each number stands for.
#[derive(Debug)]
struct ObjectsView {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
    packs: HashMap<u32, ObjectId>,
}

/// The database: read-only until the first write (or for good, on a store the process cannot
/// write), then opened for writing.
enum Db {
    ReadWrite(Database),
    ReadOnly(ReadOnlyDatabase),
    /// Between closing the read-only handle and opening for writing; left so if that fails.
    Closed,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::ReadWrite(_) => "Db::ReadWrite",
            Db::ReadOnly(_) => "Db::ReadOnly",
            Db::Closed => "Db::Closed",
        })
    }
}

impl Db {
    fn begin_read(&self) -> Result<redb::ReadTransaction, String> {
        match self {
            Db::ReadWrite(db) => db.begin_read().map_err(|e| e.to_string()),
            Db::ReadOnly(db) => db.begin_read().map_err(|e| e.to_string()),
            Db::Closed => Err("the catalog was closed after a failed reopen".into()),
        }
    }
}

/// The open catalog.
#[derive(Debug)]
pub struct Catalog {
    db: RwLock<Db>,
    /// The store cannot be written: every write is refused.
    read_only: bool,
    path: PathBuf,
    objects: Mutex<Option<Arc<ObjectsView>>>,
    /// The format `meta` records (see [`CATALOG_VERSION`]).
    format: AtomicU32,
}

impl Catalog {
    /// Opens the existing catalog at `path`, refusing a newer format. A missing or empty file
    /// is damage, never a reason to start an empty catalog over the packs. With `read_only`,
    /// it is opened without writing anything, and every write is refused.
    pub fn open(path: &Path, read_only: bool) -> Result<Catalog, StoreError> {
        // redb can panic on a damaged file (an allocator state it cannot parse, an
        // `unreachable!`): that is damage to name, not a crash.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Catalog::open_unguarded(path, read_only)
        }));
        opened.unwrap_or_else(|panic| {
            Err(StoreError::CatalogUnreadable {
                path: path.to_path_buf(),
                why: panic_text(panic.as_ref()),
            })
        })
    }

    fn open_unguarded(path: &Path, read_only: bool) -> Result<Catalog, StoreError> {
        let unreadable = |why: String| StoreError::CatalogUnreadable {
            path: path.to_path_buf(),
            why,
        };
        match std::fs::metadata(path) {
            Ok(m) if m.len() == 0 => return Err(unreadable("the file is empty".into())),
            Ok(_) => {}
            Err(e) => return Err(unreadable(e.to_string())),
        }
        // A writable catalog is also opened read-only first (see `upgrade`); one that was
        // not shut down cleanly cannot be, and is opened for writing, which repairs it.
        let read_only_open = crate::catalog::file::builder()
            .open_read_only(path)
            .map(Db::ReadOnly);
        let opened = match (read_only, read_only_open) {
            (true, opened) => opened,
            (false, Ok(db)) => Ok(db),
            (false, Err(_)) => crate::catalog::file::open_database(path, false).map(Db::ReadWrite),
        };
        let db = opened.map_err(|e| open_error(path, e))?;
        let catalog = Catalog {
            db: RwLock::new(db),
            read_only,
            path: path.to_path_buf(),
            objects: Mutex::new(None),
            format: AtomicU32::new(CATALOG_VERSION),
        };
        catalog.check_format()?;
        Ok(catalog)
    }

    /// Creates a new, empty catalog at `path`.
    pub fn create(path: &Path) -> Result<Catalog, StoreError> {
        let db =
            crate::catalog::file::open_database(path, true).map_err(|e| StoreError::Catalog {
                path: path.to_path_buf(),
                why: e.to_string(),
            })?;
        let catalog = Catalog {
            db: RwLock::new(Db::ReadWrite(db)),
            read_only: false,
            path: path.to_path_buf(),
            objects: Mutex::new(None),
            format: AtomicU32::new(CATALOG_VERSION),
        };
        catalog.check_format()?;
        Ok(catalog)
    }

    /// Whether every write is refused.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn read(&self) -> Result<redb::ReadTransaction, StoreError> {
        let db = self.db.read().unwrap_or_else(|p| p.into_inner());
        db.begin_read().map_err(|e| self.err(e))
    }

    fn begin_write(&self) -> Result<WriteTransaction, StoreError> {
        if self.read_only {
            return Err(StoreError::ReadOnly(self.path.clone()));
        }
        self.upgrade()?;
        match &*self.db.read().unwrap_or_else(|p| p.into_inner()) {
            Db::ReadWrite(db) => db.begin_write().map_err(|e| self.err(e)),
            _ => Err(self.err("the catalog is not open for writing")),
        }
    }

    /// Opens the catalog for writing now, ahead of a commit that will follow. A store that
    /// cannot be written is left as it is: the commit then names the problem.
    pub fn prepare_write(&self) -> Result<(), StoreError> {
        if self.read_only {
            Ok(())
        } else {
            self.upgrade()
        }
    }

    /// Reopens a read-only handle for writing. redb syncs the file when it opens it for
    /// writing and commits when it closes it, so a command that writes nothing (a save that
    /// finds nothing changed, `log`, `diff`) costs no sync at all by never getting here. The
    /// store lock keeps other processes out between the two opens; read transactions still
    /// open on the old handle fail from here on, and the cached `objects` view is dropped.
    fn upgrade(&self) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(|p| p.into_inner());
        if matches!(*db, Db::ReadWrite(_)) {
            return Ok(());
        }
        *self.objects.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Db::ReadOnly(old) = std::mem::replace(&mut *db, Db::Closed) {
            old.close().map_err(|e| open_error(&self.path, e))?;
        }
        let opened = crate::catalog::file::open_database(&self.path, false);
        *db = Db::ReadWrite(opened.map_err(|e| open_error(&self.path, e))?);
        Ok(())
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Catalog {
            path: self.path.clone(),
            why: e.to_string(),
        }
    }

    /// Refuses a newer format. A new catalog (or one from before a table was added) gets its
    /// format record and every table in one write; an existing one is only read, so opening
    /// costs no commit.
    fn check_format(&self) -> Result<(), StoreError> {
        let found = self.read_format()?;
        if let Some(found) = found {
            self.format.store(found, Ordering::Relaxed);
        }
        match found {
            Some(found) if found > CATALOG_VERSION => Err(StoreError::NewerFormat {
                path: self.path.clone(),
                found,
                supported: CATALOG_VERSION,
            }),
            Some(_) if self.has_every_table()? || self.is_read_only() => Ok(()),
            _ => self.set_up(found.is_none()),
        }
    }

    fn read_format(&self) -> Result<Option<u32>, StoreError> {
        let txn = self.read()?;
        let meta = match txn.open_table(META) {
            Ok(meta) => meta,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.err(e)),
        };
        let Some(v) = meta.get("format").map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let bytes: [u8; 4] = v
            .value()
            .try_into()
            .map_err(|_| self.err("bad format record"))?;
        Ok(Some(u32::from_le_bytes(bytes)))
    }

    fn has_every_table(&self) -> Result<bool, StoreError> {
        let txn = self.read()?;
        let names: Vec<String> = txn
            .list_tables()
            .map_err(|e| self.err(e))?
            .map(|t| t.name().to_string())
            .collect();
        let want = [
            META.name(),
            OBJECTS.name(),
            PACKS.name(),
            PACK_IDS.name(),
            PACK_NUMBERS.name(),
            SNAPSHOTS.name(),
            SNAP_IDS.name(),
            STAT_CACHE.name(),
            statdirs::STAT_DIRS.name(),
            DIR_CACHE.name(),
            TREE_CACHE.name(),
        ];
        Ok(want.iter().all(|n| names.iter().any(|m| m == n)))
    }

    fn set_up(&self, write_format: bool) -> Result<(), StoreError> {
        let txn = self.begin_write()?;
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            if write_format {
                meta.insert("format", CATALOG_VERSION.to_le_bytes().as_slice())
                    .map_err(|e| self.err(e))?;
                // A pack file older than this catalog that it does not name held history
                // before it (a lost catalog's), never a crashed save's: gc keeps those.
                meta.insert(
                    "created",
                    unix_ns(SystemTime::now()).to_le_bytes().as_slice(),
                )
                .map_err(|e| self.err(e))?;
            }
            txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
            txn.open_table(PACKS).map_err(|e| self.err(e))?;
            txn.open_table(PACK_IDS).map_err(|e| self.err(e))?;
            txn.open_table(PACK_NUMBERS).map_err(|e| self.err(e))?;
            txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
            txn.open_table(SNAP_IDS).map_err(|e| self.err(e))?;
            txn.open_table(STAT_CACHE).map_err(|e| self.err(e))?;
            txn.open_table(statdirs::STAT_DIRS)
                .map_err(|e| self.err(e))?;
            txn.open_table(DIR_CACHE).map_err(|e| self.err(e))?;
            txn.open_table(TREE_CACHE).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// When this catalog was made (nanoseconds since the Unix epoch, see [`unix_ns`]); `None` for catalogs
    /// made before it was recorded.
    pub fn created_ns(&self) -> Result<Option<i64>, StoreError> {
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let value = meta.get("created").map_err(|e| self.err(e))?;
        Ok(value.and_then(|v| v.value().try_into().ok().map(i64::from_le_bytes)))
    }

    /// Where `id` lives, if the catalog knows it.
    pub fn locate(&self, id: &ObjectId) -> Result<Option<Location>, StoreError> {
        let view = self.objects_view()?;
        let Some(v) = view.table.get(id.0.as_slice()).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        Location::decode(*id, v.value(), |n| view.packs.get(&n).copied())
            .map(Some)
            .ok_or_else(|| self.err(format!("bad location record for {id}")))
    }

    /// The `objects` table as of the last commit. Opening a read transaction per lookup costs
    /// more than the lookup; this process holds the store lock, so only its own commits can
    /// change the table, and each of them drops this cached view.
    fn objects_view(&self) -> Result<Arc<ObjectsView>, StoreError> {
        let mut slot = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(view) = slot.as_ref() {
            return Ok(Arc::clone(view));
        }
        let txn = self.read()?;
        let view = Arc::new(ObjectsView {
            table: txn.open_table(OBJECTS).map_err(|e| self.err(e))?,
            packs: self.pack_ids(&txn)?,
        });
        *slot = Some(Arc::clone(&view));
        Ok(view)
    }

    /// The `pack_ids` table whole: each pack number and the pack it stands for. A catalog
    /// opened read-only before version 5 has no such table, and no numbered rows.
    fn pack_ids(&self, txn: &redb::ReadTransaction) -> Result<HashMap<u32, ObjectId>, StoreError> {
        let table = match txn.open_table(PACK_IDS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = HashMap::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (number, pack) = row.map_err(|e| self.err(e))?;
            let pack = ObjectId::from_slice(pack.value()).ok_or_else(|| {
                self.err(format!(
                    "pack number {} names no 32-byte id",
                    number.value()
                ))
            })?;
            out.insert(number.value(), pack);
        }
        Ok(out)
    }

    /// HEAD and the redo stack.
    pub fn history(&self) -> Result<HistoryState, StoreError> {
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let head = meta.get("head").map_err(|e| self.err(e))?;
        let redo = meta.get("redo").map_err(|e| self.err(e))?;
        HistoryState::decode(
            head.as_ref().map(|v| v.value()),
            redo.as_ref().map(|v| v.value()),
        )
        .map_err(|why| self.err(why))
    }

    /// Every snapshot record, in sequence order (numbers two snapshots share, by time).
    pub fn snapshots(&self) -> Result<Vec<(ObjectId, SnapshotRecord)>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        let mut in_order = true;
        for row in table.iter().map_err(|e| self.err(e))? {
            let (key, v) = row.map_err(|e| self.err(e))?;
            let snapshot = decode_snapshot_row(v.value())?;
            in_order &= key.value() == snapshot.1.seq;
            out.push(snapshot);
        }
        // Rows keyed past their number (`free_key`) sort among the rest by number.
        if !in_order {
            out.sort_by_key(|(_, r)| (r.seq, r.time_ns));
        }
        Ok(out)
    }

    /// One snapshot by id.
    pub fn snapshot(&self, id: &ObjectId) -> Result<Option<SnapshotRecord>, StoreError> {
        let txn = self.read()?;
        let ids = txn.open_table(SNAP_IDS).map_err(|e| self.err(e))?;
        let Some(seq) = ids
            .get(id.0.as_slice())
            .map_err(|e| self.err(e))?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let row = table
            .get(seq)
            .map_err(|e| self.err(e))?
            .ok_or_else(|| self.err(format!("snapshot #{seq} indexed but missing")))?;
        Ok(Some(decode_snapshot_row(row.value())?.1))
    }

    /// The sequence number the next snapshot gets.
    pub fn next_seq(&self) -> Result<u64, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let last = table
            .last()
            .map_err(|e| self.err(e))?
            .map(|(k, _)| k.value());
        Ok(last.map_or(1, |s| s + 1))
    }

    /// Every pack the catalog names, with its object count.
    pub fn packs(&self) -> Result<Vec<(ObjectId, u64)>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(PACKS).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            out.push((
                ObjectId::from_slice(k.value())
                    .ok_or_else(|| self.err("pack key is not 32 bytes"))?,
                v.value(),
            ));
        }
        Ok(out)
    }

    /// How many packs the catalog names, without reading them (redb keeps a table's length).
    pub fn pack_count(&self) -> Result<u64, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(PACKS).map_err(|e| self.err(e))?;
        table.len().map_err(|e| self.err(e))
    }

    /// The snapshot with the lowest sequence number, decoding only that one.
    pub fn oldest_snapshot(&self) -> Result<Option<SnapshotRecord>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let Some((_, row)) = table.first().map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        Ok(Some(decode_snapshot_row(row.value())?.1))
    }

    /// How many snapshots there are, without decoding them.
    pub fn snapshot_count(&self) -> Result<u64, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        table.len().map_err(|e| self.err(e))
    }
}

/// The reason a catalog is unreadable when reading it panicked: its pages are damaged. The
/// library's own words ("entered unreachable code") are left out: they say nothing to a
/// person, and `snap repair` is the answer whatever they are.
pub(crate) fn panic_text(_panic: &(dyn std::any::Any + Send)) -> String {
    "its pages are damaged (the database's reader stopped on them)".to_string()
}

/// The error of opening the catalog at `path`.
fn open_error(path: &Path, e: redb::DatabaseError) -> StoreError {
    match e {
        // A disk that fails to read or write is not a damaged catalog: repair won't help.
        redb::DatabaseError::Storage(redb::StorageError::Io(e)) if e.raw_os_error().is_some() => {
            StoreError::io(path, e)
        }
        e => StoreError::CatalogUnreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
        },
    }
}

/// Nanoseconds since the Unix epoch (0 before it, saturated far after).
pub(crate) fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectKind;
    use crate::cache::stat::ScanMemo;
    use crate::cache::stat::StatCacheUpdate;
    use crate::pack::Compression;
    use crate::pack::FrameInfo;

    /// A new catalog at `path` whose format record then says `format`.
    fn catalog_of_format(path: &Path, format: u32) {
        drop(Catalog::create(path).unwrap());
        let db = Database::open(path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format", format.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }

    /// Two snapshots made as the same number (two lines of history a repair joins) both
    /// get a row; the second is keyed past the largest key, and each goes with its own id.
    #[test]
    fn snapshots_sharing_a_number_both_keep_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
        let record = |seq, time_ns| SnapshotRecord {
            seq,
            root: ObjectId([0; 32]),
            parent: None,
            time_ns,
            kind: crate::SnapshotKind::Save,
            message: String::new(),
            step: None,
            session: None,
            meta: Vec::new(),
            stats: crate::ChangeStats::default(),
        };
        let snapshot = |seq, time_ns| {
            let r = record(seq, time_ns);
            (ObjectId::of(ObjectKind::Snapshot, &r.encode()), r)
        };
        let (one, two, other_two) = (snapshot(1, 1), snapshot(2, 2), snapshot(2, 3));
        let all = vec![one.clone(), two.clone(), other_two.clone()];
        let commit = |snapshots, remove_snapshots| Commit {
            snapshots,
            remove_snapshots,
            ..Commit::default()
        };
        // Each twice, as a repair finds a snapshot in every pack that holds a copy of it.
        let twice = [all.clone(), all.clone()].concat();
        catalog.commit(&commit(twice, Vec::new())).unwrap();
        catalog
            .commit(&commit(vec![two.clone()], Vec::new()))
            .unwrap();
        assert_eq!(
            catalog.snapshots().unwrap(),
            all,
            "a commit again keeps its key"
        );
        assert_eq!(catalog.next_seq().unwrap(), 4);
        catalog.commit(&commit(Vec::new(), vec![two.0])).unwrap();
        assert_eq!(catalog.snapshots().unwrap(), vec![one, other_two]);
    }

    #[test]
    fn a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        catalog_of_format(&path, 99);
        let err = Catalog::open(&path, false).unwrap_err();
        assert!(
            matches!(err, StoreError::NewerFormat { found: 99, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_version_1_catalog_is_marked_current_by_its_first_commit_of_packs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        catalog_of_format(&path, 1);
        let catalog = Catalog::open(&path, false).unwrap();
        catalog
            .commit(&Commit {
                history: Some(HistoryState::default()),
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(catalog.read_format().unwrap(), Some(1));
        let frame = FrameInfo {
            id: ObjectId([3; 32]),
            kind: ObjectKind::Tree,
            compression: Compression::Delta,
            offset: 16,
            raw_len: 77,
            stored_len: 55,
        };
        catalog
            .commit(&Commit {
                packs: vec![(ObjectId([9; 32]), vec![frame])],
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(catalog.read_format().unwrap(), Some(CATALOG_VERSION));
        drop(catalog);
        let catalog = Catalog::open(&path, false).unwrap();
        assert_eq!(catalog.locate(&frame.id).unwrap().unwrap().frame, frame);
    }

    fn frame_of(n: u8) -> FrameInfo {
        FrameInfo {
            id: ObjectId([n; 32]),
            kind: ObjectKind::Chunk,
            compression: Compression::Zstd,
            offset: 16 + u64::from(n),
            raw_len: 10,
            stored_len: 8,
        }
    }

    #[test]
    fn packs_get_numbers_never_given_again_and_rows_name_their_pack_by_them() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::create(&dir.path().join("catalog.redb")).unwrap();
        let (a, b, c) = (
            ObjectId([0xa; 32]),
            ObjectId([0xb; 32]),
            ObjectId([0xc; 32]),
        );
        let add = |pack: ObjectId, frames: Vec<FrameInfo>, remove_packs: Vec<ObjectId>| {
            let commit = Commit {
                packs: vec![(pack, frames)],
                remove_packs,
                ..Commit::default()
            };
            catalog.commit(&commit).unwrap();
        };
        add(a, vec![frame_of(1)], vec![]);
        add(b, vec![frame_of(2)], vec![]);
        // The highest number's pack goes and another comes: the number is not reused.
        add(c, vec![frame_of(2), frame_of(3)], vec![b]);
        let txn = catalog.read().unwrap();
        let ids = catalog.pack_ids(&txn).unwrap();
        assert_eq!(ids, HashMap::from([(0, a), (2, c)]));
        let located = |n: u8| catalog.locate(&ObjectId([n; 32])).unwrap().unwrap();
        assert_eq!((located(1).pack, located(1).frame), (a, frame_of(1)));
        assert_eq!((located(2).pack, located(3).pack), (c, c));
        let all = catalog.locations().unwrap();
        assert_eq!(all.get(&ObjectId([2; 32])).map(|l| l.pack), Some(c));
        // A row names the pack by number, in the compact layout: pack 0 | offset 17 |
        // kind and compression | raw_len 10 | stored_len 8.
        let objects = txn.open_table(OBJECTS).unwrap();
        let row = objects.get([1u8; 32].as_slice()).unwrap().unwrap();
        assert_eq!(row.value(), [0, 17, 0x11, 10, 8]);
    }

    #[test]
    fn a_row_naming_its_pack_by_id_is_read_beside_numbered_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let catalog = Catalog::create(&path).unwrap();
        catalog
            .commit(&Commit {
                packs: vec![(ObjectId([0xa; 32]), vec![frame_of(1)])],
                ..Commit::default()
            })
            .unwrap();
        drop(catalog);
        // A version 4 row: pack id [32] | the same 18 bytes of frame.
        let db = Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut objects = txn.open_table(OBJECTS).unwrap();
            let row = [
                [0xbu8; 32].as_slice(),
                &rows::encode_frame_part(&frame_of(2)),
            ]
            .concat();
            objects
                .insert([2u8; 32].as_slice(), row.as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
        drop(db);
        let catalog = Catalog::open(&path, true).unwrap();
        let old = catalog.locate(&ObjectId([2; 32])).unwrap().unwrap();
        assert_eq!((old.pack, old.frame), (ObjectId([0xb; 32]), frame_of(2)));
        let new = catalog.locate(&ObjectId([1; 32])).unwrap().unwrap();
        assert_eq!(new.pack, ObjectId([0xa; 32]));
    }

    #[test]
    fn a_missing_or_empty_catalog_is_damage_not_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        assert!(matches!(
            Catalog::open(&path, false),
            Err(StoreError::CatalogUnreadable { .. })
        ));
        std::fs::write(&path, b"").unwrap();
        let err = Catalog::open(&path, false).unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
        std::fs::write(&path, b"garbage garbage garbage").unwrap();
        assert!(matches!(
            Catalog::open(&path, false),
            Err(StoreError::CatalogUnreadable { .. })
        ));
    }

    /// Opening for reading writes nothing (so costs no sync); the first write reopens the
    /// file for writing, and what it commits is there for the next open.
    #[test]
    fn a_catalog_is_written_only_from_its_first_write_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let before = std::fs::read(&path).unwrap();
        let catalog = Catalog::open(&path, false).unwrap();
        assert_eq!(catalog.history().unwrap(), HistoryState::default());
        assert!(catalog.stat_cache().unwrap().is_empty());
        drop(catalog);
        assert!(
            std::fs::read(&path).unwrap() == before,
            "a read changed the file"
        );
        let catalog = Catalog::open(&path, false).unwrap();
        let memo = ScanMemo {
            digest: ObjectId([1; 32]),
            root: ObjectId([2; 32]),
        };
        let commit = Commit {
            stat_cache: StatCacheUpdate {
                memo: Some(memo),
                ..StatCacheUpdate::default()
            },
            ..Commit::default()
        };
        catalog.commit(&commit).unwrap();
        assert_eq!(catalog.scan_memo().unwrap(), Some(memo));
        drop(catalog);
        let catalog = Catalog::open(&path, false).unwrap();
        assert_eq!(catalog.scan_memo().unwrap(), Some(memo));
    }
}
