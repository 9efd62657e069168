//! The redb catalog: where each object lives, the snapshot records, HEAD and the redo stack.
//!
//! Tables (keys and values are little-endian byte strings; layouts in docs/FORMAT.md):
//! ```text
//! meta       &str  -> &[u8]  "format" u32 LE | "head" id [32] | "redo" id[32]* (bottom first)
//!                            | "scan" scan memo | "walk" walk memo | "dirs" dir-cache fingerprint
//! objects    &[u8] -> &[u8]  id [32] -> pack id [32] | offset u64 | kind u8 | compression u8
//!                                       | raw_len u32 | stored_len u32            (50 bytes)
//! packs      &[u8] -> u64    pack id [32] -> object count
//! snapshots  u64   -> &[u8]  seq -> snapshot id [32] | encoded SnapshotRecord
//! snap_ids   &[u8] -> u64    snapshot id [32] -> seq
//! stat_cache &[u8] -> &[u8]  path -> StatEntry (77 bytes)
//! dir_cache  &[u8] -> &[u8]  directory path -> DirRecord (its listing)
//! tree_cache &[u8] -> &[u8]  directory path -> subtree memo (72 bytes)
//! ```
//! The cache rows and memos (`stat_cache`, `dir_cache`, `tree_cache`, `meta` "scan", "walk",
//! "dirs") end with an 8-byte check of key and value (`seal`); a row whose check fails is
//! ignored. Every change of a save, undo, redo or restore is one write transaction, committed
//! durably.

use std::path::{Path, PathBuf};

use redb::{
    Database, ReadOnlyDatabase, ReadOnlyTable, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableDefinition, TableHandle, WriteTransaction,
};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::dircache::{DirCache, DirCacheUpdate};
use crate::pack::{Compression, FrameInfo};
use crate::statcache::{ScanMemo, StatCacheUpdate, StatEntry, WalkMemo};
use crate::{ObjectId, ObjectKind, SnapshotRecord, StoreError};

/// Catalog format version stored under `meta["format"]`. Version 2 stores may hold delta
/// frames (compression 2), version 3 stores blocks (kind 5) and slices (compression 3), which
/// older readers would call corrupt; an older catalog is marked current by the first commit
/// that adds packs.
pub const CATALOG_VERSION: u32 = 3;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
const PACKS: TableDefinition<&[u8], u64> = TableDefinition::new("packs");
const SNAPSHOTS: TableDefinition<u64, &[u8]> = TableDefinition::new("snapshots");
const SNAP_IDS: TableDefinition<&[u8], u64> = TableDefinition::new("snap_ids");
const STAT_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("stat_cache");
const DIR_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("dir_cache");
const TREE_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tree_cache");

/// Length of an `objects` value: pack id (32) | offset (8) | kind (1) | compression (1) |
/// raw_len (4) | stored_len (4).
const LOCATION_LEN: usize = 50;

/// Where one object lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The pack holding the object, named by its body hash.
    pub pack: ObjectId,
    /// The object's frame in that pack.
    pub frame: FrameInfo,
}

impl Location {
    /// The 50-byte `objects` value.
    pub fn encode(&self) -> [u8; LOCATION_LEN] {
        let mut v = [0u8; LOCATION_LEN];
        v[0..32].copy_from_slice(&self.pack.0);
        v[32..40].copy_from_slice(&self.frame.offset.to_le_bytes());
        v[40] = self.frame.kind as u8;
        v[41] = self.frame.compression as u8;
        v[42..46].copy_from_slice(&self.frame.raw_len.to_le_bytes());
        v[46..50].copy_from_slice(&self.frame.stored_len.to_le_bytes());
        v
    }

    /// Decodes an `objects` value for object `id`; `None` when malformed.
    pub fn decode(id: ObjectId, v: &[u8]) -> Option<Location> {
        if v.len() != LOCATION_LEN {
            return None;
        }
        let kind = ObjectKind::from_u8(v[40])?;
        let compression = match v[41] {
            0 => Compression::Raw,
            1 => Compression::Zstd,
            2 => Compression::Delta,
            3 => Compression::Slice,
            _ => return None,
        };
        let frame = FrameInfo {
            id,
            kind,
            compression,
            offset: u64::from_le_bytes(v[32..40].try_into().ok()?),
            raw_len: u32::from_le_bytes(v[42..46].try_into().ok()?),
            stored_len: u32::from_le_bytes(v[46..50].try_into().ok()?),
        };
        Some(Location {
            pack: ObjectId::from_slice(&v[0..32])?,
            frame,
        })
    }
}

/// HEAD and the redo stack (top last).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryState {
    /// The snapshot the working tree was last saved as or moved to; `None` when there is none yet.
    pub head: Option<ObjectId>,
    /// Snapshots undo stepped back over; the next redo target is last.
    pub redo: Vec<ObjectId>,
}

impl HistoryState {
    /// Decodes `meta["head"]` (one id) and `meta["redo"]` (ids, bottom first), either absent.
    pub fn decode(head: Option<&[u8]>, redo: Option<&[u8]>) -> Result<HistoryState, String> {
        let head = match head {
            Some(v) => Some(ObjectId::from_slice(v).ok_or("HEAD record is not 32 bytes")?),
            None => None,
        };
        let redo = redo.unwrap_or_default();
        if redo.len() % 32 != 0 {
            return Err("redo record is not a whole number of ids".into());
        }
        let redo = redo
            .chunks_exact(32)
            .filter_map(ObjectId::from_slice)
            .collect();
        Ok(HistoryState { head, redo })
    }

    /// The `meta["redo"]` value: the ids, bottom of the stack first.
    pub fn encode_redo(&self) -> Vec<u8> {
        self.redo.iter().flat_map(|id| id.0).collect()
    }
}

/// Everything one command commits at once.
#[derive(Debug, Default)]
pub struct Commit {
    /// Newly sealed packs, each with the frames it holds.
    pub packs: Vec<(ObjectId, Vec<FrameInfo>)>,
    /// Snapshot records to add, with their ids.
    pub snapshots: Vec<(ObjectId, SnapshotRecord)>,
    /// New HEAD and redo stack; `None` leaves them as they are.
    pub history: Option<HistoryState>,
    /// Snapshots dropped from the catalog (prune).
    pub remove_snapshots: Vec<ObjectId>,
    /// Object locations dropped (gc).
    pub remove_objects: Vec<ObjectId>,
    /// Packs dropped (gc); their files are deleted only after this commit.
    pub remove_packs: Vec<ObjectId>,
    /// Stat cache changes.
    pub stat_cache: StatCacheUpdate,
}

/// Bytes of the check that ends every cache row and memo (FORMAT.md 6): XXH3-64 of the value
/// seeded with XXH3-64 of the key, little-endian. redb checks its commits, not each page's
/// bytes at rest, so without it one flipped bit in a cached id would be trusted and recorded.
/// It guards against damage, not an adversary (whoever can write the catalog can write
/// anything), so a fast checksum does: an undo at a million files checks a million rows, and
/// on a stat row (30-byte path, 77-byte value) BLAKE3 took 203 ns against XXH3's 36 ns
/// (2026-12-01, this project's 2-core machine).
pub const CACHE_CHECK_LEN: usize = 8;

fn cache_check(key: &[u8], value: &[u8]) -> [u8; CACHE_CHECK_LEN] {
    use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};
    xxh3_64_with_seed(value, xxh3_64(key)).to_le_bytes()
}

/// A table's row count, as a capacity to reserve: only a hint, since a damaged catalog can
/// claim any count, and reserving it would abort the process (an allocation failure is no
/// panic that `main` could turn into one error line).
fn capacity_hint(rows: u64) -> usize {
    rows.min(1 << 20) as usize
}

/// `value ‖ check`: a cache row as stored.
fn seal(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + CACHE_CHECK_LEN);
    out.extend_from_slice(value);
    out.extend_from_slice(&cache_check(key, value));
    out
}

/// The value of a stored cache row whose check holds; `None` for a damaged row, or one
/// written before rows were checked (either is ignored, as if absent).
fn unseal<'a>(key: &[u8], stored: &'a [u8]) -> Option<&'a [u8]> {
    let (value, check) = stored.split_at_checked(stored.len().checked_sub(CACHE_CHECK_LEN)?)?;
    (cache_check(key, value) == check).then_some(value)
}

/// A read-only view of the `objects` table.
type ObjectsTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

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
    objects: Mutex<Option<Arc<ObjectsTable>>>,
    /// The format `meta` records (see [`CATALOG_VERSION`]).
    format: AtomicU32,
}

impl Catalog {
    /// Opens the existing catalog at `path`, refusing a newer format. A missing or empty file
    /// is damage, never a reason to start an empty catalog over the packs. With `read_only`,
    /// it is opened without writing anything, and every write is refused.
    pub fn open(path: &Path, read_only: bool) -> Result<Catalog, StoreError> {
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
        let read_only_open = redb::Builder::new().open_read_only(path).map(Db::ReadOnly);
        let opened = match (read_only, read_only_open) {
            (true, opened) => opened,
            (false, Ok(db)) => Ok(db),
            (false, Err(_)) => crate::catalog_file::open_database(path, false).map(Db::ReadWrite),
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
            crate::catalog_file::open_database(path, true).map_err(|e| StoreError::Catalog {
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
        match self.read_only {
            true => Ok(()),
            false => self.upgrade(),
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
        let opened = crate::catalog_file::open_database(&self.path, false);
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
            SNAPSHOTS.name(),
            SNAP_IDS.name(),
            STAT_CACHE.name(),
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
            }
            txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
            txn.open_table(PACKS).map_err(|e| self.err(e))?;
            txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
            txn.open_table(SNAP_IDS).map_err(|e| self.err(e))?;
            txn.open_table(STAT_CACHE).map_err(|e| self.err(e))?;
            txn.open_table(DIR_CACHE).map_err(|e| self.err(e))?;
            txn.open_table(TREE_CACHE).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// Where `id` lives, if the catalog knows it.
    pub fn locate(&self, id: &ObjectId) -> Result<Option<Location>, StoreError> {
        let table = self.objects_table()?;
        let Some(v) = table.get(id.0.as_slice()).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        Location::decode(*id, v.value())
            .map(Some)
            .ok_or_else(|| self.err(format!("bad location record for {id}")))
    }

    /// The `objects` table as of the last commit. Opening a read transaction per lookup costs
    /// more than the lookup; this process holds the store lock, so only its own commits can
    /// change the table, and each of them drops this cached view.
    fn objects_table(&self) -> Result<Arc<ObjectsTable>, StoreError> {
        let mut slot = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(table) = slot.as_ref() {
            return Ok(Arc::clone(table));
        }
        let txn = self.read()?;
        let table = Arc::new(txn.open_table(OBJECTS).map_err(|e| self.err(e))?);
        *slot = Some(Arc::clone(&table));
        Ok(table)
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

    /// Every snapshot record, in sequence order.
    pub fn snapshots(&self) -> Result<Vec<(ObjectId, SnapshotRecord)>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (_, v) = row.map_err(|e| self.err(e))?;
            out.push(decode_snapshot_row(v.value())?);
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

    /// Applies `commit` in one durable write transaction: the point where a save exists.
    /// Removals run before insertions, so a repack may drop a pack and re-add its objects.
    pub fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        *self.objects.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let txn = self.begin_write()?;
        self.write_objects(&txn, commit)?;
        let upgrade =
            !commit.packs.is_empty() && self.format.load(Ordering::Relaxed) < CATALOG_VERSION;
        if upgrade {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert("format", CATALOG_VERSION.to_le_bytes().as_slice())
                .map_err(|e| self.err(e))?;
        }
        self.write_snapshots(&txn, commit)?;
        if let Some(history) = &commit.history {
            self.write_history(&txn, history)?;
        }
        if !commit.stat_cache.is_empty() {
            self.write_stat_cache(&txn, &commit.stat_cache)?;
        }
        crate::failpoint("before-commit");
        txn.commit().map_err(|e| self.err(e))?;
        if upgrade {
            self.format.store(CATALOG_VERSION, Ordering::Relaxed);
        }
        crate::failpoint("after-commit");
        Ok(())
    }

    fn write_stat_cache(
        &self,
        txn: &WriteTransaction,
        update: &StatCacheUpdate,
    ) -> Result<(), StoreError> {
        if update.clear {
            // Both vouch for objects, which gc may have just dropped.
            txn.delete_table(STAT_CACHE).map_err(|e| self.err(e))?;
            txn.delete_table(TREE_CACHE).map_err(|e| self.err(e))?;
        }
        if let Some(memo) = update.memo {
            self.set_meta(txn, "scan", &memo.encode())?;
        }
        if let Some(walk) = update.walk {
            self.set_meta(txn, "walk", &walk.encode())?;
        }
        let put = update.put.iter().map(|(p, e)| (p.as_slice(), e.encode()));
        self.write_rows(
            txn,
            STAT_CACHE,
            update.remove.iter().map(Vec::as_slice),
            put,
        )?;
        // Before the tree cache entries: a new config drops every directory's entries.
        self.write_dir_cache(txn, &update.dirs)?;
        let put = update.trees.iter().map(|(p, m)| (p.as_slice(), m.encode()));
        self.write_rows(txn, TREE_CACHE, [], put)
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
        self.write_rows(txn, DIR_CACHE, gone(), put)?;
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

    /// Removes the `remove` keys from `table`, then inserts the `put` rows.
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
        // In key order, rows fill redb's leaves; in walk order (threads finishing directories
        // as they go) they split leaves and leave them about half empty.
        let mut put: Vec<(&[u8], V)> = put.into_iter().collect();
        put.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (key, value) in put {
            let sealed = seal(key, value.as_ref());
            table
                .insert(key, sealed.as_slice())
                .map_err(|e| self.err(e))?;
        }
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

    /// The memo of the last committed scan, if any (malformed: none).
    pub fn scan_memo(&self) -> Result<Option<ScanMemo>, StoreError> {
        self.meta_value("scan", ScanMemo::decode)
    }

    /// The tree cache: for each directory, the memo of its subtree as the last scan that
    /// built its tree saw it. Malformed entries are left out; an old catalog opened
    /// read-only has none.
    pub fn tree_cache(&self) -> Result<HashMap<Vec<u8>, WalkMemo>, StoreError> {
        self.cache_rows(TREE_CACHE, WalkMemo::decode)
    }

    /// The memo of the last exact walk, if any (malformed: none).
    pub fn walk_memo(&self) -> Result<Option<WalkMemo>, StoreError> {
        self.meta_value("walk", WalkMemo::decode)
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

    /// Every row of a cache table whose value decodes; empty when the table does not exist
    /// (an old catalog opened read-only).
    fn cache_rows<T>(
        &self,
        table: TableDefinition<&[u8], &[u8]>,
        decode: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<HashMap<Vec<u8>, T>, StoreError> {
        let txn = self.read()?;
        let table = match txn.open_table(table) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = HashMap::with_capacity(capacity_hint(table.len().map_err(|e| self.err(e))?));
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            if let Some(value) = unseal(k.value(), v.value()).and_then(&decode) {
                out.insert(k.value().to_vec(), value);
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

    /// The stat cache entries of `paths` (in their order, those that have one), read one by
    /// one: for a scan that needs a few, not the whole table.
    pub fn stat_entries(&self, paths: &[&[u8]]) -> Result<Vec<(Vec<u8>, StatEntry)>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(STAT_CACHE).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for path in paths {
            let value = table.get(*path).map_err(|e| self.err(e))?;
            let entry = value.and_then(|v| unseal(path, v.value()).and_then(StatEntry::decode));
            if let Some(entry) = entry {
                out.push((path.to_vec(), entry));
            }
        }
        Ok(out)
    }

    /// The whole stat cache. Malformed entries are left out (those files are rehashed).
    pub fn stat_cache(&self) -> Result<Vec<(Vec<u8>, StatEntry)>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(STAT_CACHE).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(capacity_hint(table.len().map_err(|e| self.err(e))?));
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            if let Some(entry) = unseal(k.value(), v.value()).and_then(StatEntry::decode) {
                out.push((k.value().to_vec(), entry));
            }
        }
        Ok(out)
    }

    fn write_objects(&self, txn: &WriteTransaction, commit: &Commit) -> Result<(), StoreError> {
        let mut objects = txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
        let mut packs = txn.open_table(PACKS).map_err(|e| self.err(e))?;
        for id in &commit.remove_objects {
            objects.remove(id.0.as_slice()).map_err(|e| self.err(e))?;
        }
        for pack in &commit.remove_packs {
            packs.remove(pack.0.as_slice()).map_err(|e| self.err(e))?;
        }
        let mut located = Vec::new();
        for (pack, frames) in &commit.packs {
            packs
                .insert(pack.0.as_slice(), frames.len() as u64)
                .map_err(|e| self.err(e))?;
            located.extend(frames.iter().map(|frame| Location {
                pack: *pack,
                frame: *frame,
            }));
        }
        // In key order, the B-tree fills its pages instead of splitting them at random: a
        // first save's catalog of 100k files is 21 MB instead of 36.
        located.sort_unstable_by_key(|loc| loc.frame.id);
        for loc in located {
            objects
                .insert(loc.frame.id.0.as_slice(), loc.encode().as_slice())
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn write_snapshots(&self, txn: &WriteTransaction, commit: &Commit) -> Result<(), StoreError> {
        let mut snapshots = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let mut ids = txn.open_table(SNAP_IDS).map_err(|e| self.err(e))?;
        for id in &commit.remove_snapshots {
            if let Some(seq) = ids
                .remove(id.0.as_slice())
                .map_err(|e| self.err(e))?
                .map(|v| v.value())
            {
                snapshots.remove(seq).map_err(|e| self.err(e))?;
            }
        }
        for (id, record) in &commit.snapshots {
            let mut row = id.0.to_vec();
            row.extend_from_slice(&record.encode());
            snapshots
                .insert(record.seq, row.as_slice())
                .map_err(|e| self.err(e))?;
            ids.insert(id.0.as_slice(), record.seq)
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn write_history(
        &self,
        txn: &WriteTransaction,
        history: &HistoryState,
    ) -> Result<(), StoreError> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        match history.head {
            Some(head) => meta.insert("head", head.0.as_slice()).map(drop),
            None => meta.remove("head").map(drop),
        }
        .map_err(|e| self.err(e))?;
        meta.insert("redo", history.encode_redo().as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every object location, by object id.
    pub fn locations(&self) -> Result<HashMap<ObjectId, Location>, StoreError> {
        let txn = self.read()?;
        let table = txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let id = ObjectId::from_slice(k.value())
                .ok_or_else(|| self.err("object key is not 32 bytes"))?;
            let location = Location::decode(id, v.value())
                .ok_or_else(|| self.err(format!("bad location record for {id}")))?;
            out.insert(id, location);
        }
        Ok(out)
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

/// Decodes a `snapshots` value: the snapshot id, then its encoded record.
pub fn decode_snapshot_row(row: &[u8]) -> Result<(ObjectId, SnapshotRecord), StoreError> {
    let id = ObjectId::from_slice(row.get(..32).unwrap_or_default()).ok_or_else(|| {
        StoreError::CorruptObject {
            id: ObjectId([0; 32]),
            why: "short snapshot row".into(),
        }
    })?;
    Ok((id, SnapshotRecord::decode(id, &row[32..])?))
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// One flipped bit anywhere in a cache row makes the row absent (the file is read
    /// again), and the audit names it; a sound row naming a missing object is named too.
    #[test]
    fn a_damaged_cache_row_is_never_trusted_and_the_audit_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let entry = StatEntry {
            key: crate::StatKey {
                size: 5,
                mtime_ns: 1,
                ctime_ns: 2,
                ino: 3,
                mode: 0o100644,
            },
            kind: crate::EntryKind::File,
            id: ObjectId([7; 32]),
            written_ns: 9,
        };
        let update = StatCacheUpdate {
            put: vec![(b"f".to_vec(), entry)],
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
        let sealed = seal(b"f", &entry.encode());
        for bit in 0..sealed.len() * 8 {
            let mut bad = sealed.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(STAT_CACHE)
                .unwrap()
                .insert(b"f".as_slice(), bad.as_slice())
                .unwrap();
            txn.commit().unwrap();
            drop(db);
            let catalog = Catalog::open(&path, true).unwrap();
            assert!(catalog.stat_cache().unwrap().is_empty(), "bit {bit}");
            assert!(
                catalog.stat_entries(&[b"f"]).unwrap().is_empty(),
                "bit {bit}"
            );
            let faults = catalog.audit_caches(|_| true).unwrap();
            assert!(faults[0].contains("damaged"), "bit {bit}: {faults:?}");
        }
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

    #[test]
    fn locations_round_trip() {
        let frame = FrameInfo {
            id: ObjectId([3; 32]),
            kind: ObjectKind::Tree,
            compression: Compression::Delta,
            offset: 1 << 40,
            raw_len: 77,
            stored_len: 55,
        };
        let loc = Location {
            pack: ObjectId([9; 32]),
            frame,
        };
        assert_eq!(Location::decode(frame.id, &loc.encode()), Some(loc));
        assert_eq!(Location::decode(frame.id, &loc.encode()[..49]), None);
    }
}
