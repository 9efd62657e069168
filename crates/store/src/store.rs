//! `Store`: the `.snap/` directory as a whole: layout, lock, catalog, object reads and writes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::catalog::{Catalog, Commit, HistoryState};
use crate::lock::{StoreLock, lock_timeout};
use crate::pack::{
    EncodedObject, FrameInfo, PACK_TARGET_SIZE, PackReader, PackWriter, pack_file_name,
};
use crate::{ChunkList, ObjectId, ObjectKind, SnapshotRecord, StoreError, Tree};

/// An open store. Holding one means holding the store lock.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    pub(crate) catalog: Catalog,
    readers: Mutex<HashMap<ObjectId, Arc<PackReader>>>,
    _lock: StoreLock,
}

fn lock_poisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these maps leaves it consistent (inserts are atomic).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Store {
    /// Creates a store in `dir` (which becomes `.snap/`), or opens the one already there.
    pub fn init(dir: &Path) -> Result<Store, StoreError> {
        for sub in ["packs", "tmp"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| StoreError::io(dir, e))?;
        }
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            crate::fsio::write_atomic(&ignore, b"*\n")?;
        }
        let catalog = dir.join("catalog.redb");
        if !catalog.exists() {
            let _lock = StoreLock::acquire(&dir.join("lock"), lock_timeout())?;
            if !catalog.exists() {
                drop(Catalog::create(&catalog)?);
                crate::fsio::sync_dir(dir)?;
            }
        }
        Store::open(dir)
    }

    /// Opens the store in `dir`, taking its lock.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        if !dir.join("packs").is_dir() {
            return Err(StoreError::NotFound(dir.to_path_buf()));
        }
        let lock = StoreLock::acquire(&dir.join("lock"), lock_timeout())?;
        let catalog = Catalog::open(&dir.join("catalog.redb"), lock.is_read_only())?;
        Ok(Store {
            dir: dir.to_path_buf(),
            catalog,
            readers: Mutex::new(HashMap::new()),
            _lock: lock,
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// HEAD and the redo stack.
    pub fn history(&self) -> Result<HistoryState, StoreError> {
        self.catalog.history()
    }

    /// Every snapshot, oldest first.
    pub fn snapshots(&self) -> Result<Vec<(ObjectId, SnapshotRecord)>, StoreError> {
        self.catalog.snapshots()
    }

    /// One snapshot record; a missing one is an error naming it.
    pub fn snapshot(&self, id: &ObjectId) -> Result<SnapshotRecord, StoreError> {
        self.catalog
            .snapshot(id)?
            .ok_or(StoreError::MissingObject { id: *id })
    }

    /// The stat cache: path -> the stat and id it had when last hashed, in path byte order.
    pub fn stat_cache(&self) -> Result<Vec<(Vec<u8>, crate::StatEntry)>, StoreError> {
        self.catalog.stat_cache()
    }

    /// The stat cache entries of `paths`, in their order (those that have one).
    pub fn stat_entries(
        &self,
        paths: &[&[u8]],
    ) -> Result<Vec<(Vec<u8>, crate::StatEntry)>, StoreError> {
        self.catalog.stat_entries(paths)
    }

    /// The directory cache (see [`crate::DirRecord`]).
    pub fn dir_cache(&self) -> Result<crate::DirCache, StoreError> {
        self.catalog.dir_cache()
    }

    /// The tree cache: each directory's subtree memo (see [`crate::WalkMemo`]).
    pub fn tree_cache(
        &self,
    ) -> Result<std::collections::HashMap<Vec<u8>, crate::WalkMemo>, StoreError> {
        self.catalog.tree_cache()
    }

    /// The memo of the last exact walk, if any.
    pub fn walk_memo(&self) -> Result<Option<crate::WalkMemo>, StoreError> {
        self.catalog.walk_memo()
    }

    /// The memo of the last committed scan, if any.
    pub fn scan_memo(&self) -> Result<Option<crate::ScanMemo>, StoreError> {
        self.catalog.scan_memo()
    }

    /// How many snapshots the catalog holds.
    pub fn snapshot_count(&self) -> Result<u64, StoreError> {
        self.catalog.snapshot_count()
    }

    /// The sequence number the next snapshot gets.
    pub fn next_seq(&self) -> Result<u64, StoreError> {
        self.catalog.next_seq()
    }

    /// Commits packs, snapshots and history in one durable transaction.
    pub fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        self.catalog.commit(commit)
    }

    /// Moves HEAD and the redo stack, nothing else.
    pub fn set_history(&self, history: HistoryState) -> Result<(), StoreError> {
        self.catalog.commit(&Commit {
            history: Some(history),
            ..Commit::default()
        })
    }

    /// True if the catalog knows `id`.
    pub fn contains(&self, id: &ObjectId) -> Result<bool, StoreError> {
        Ok(self.catalog.locate(id)?.is_some())
    }

    /// Reads an object, checking its hash.
    pub fn read(&self, id: &ObjectId) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let loc = self
            .catalog
            .locate(id)?
            .ok_or(StoreError::MissingObject { id: *id })?;
        let reader = self.reader(&loc.pack)?;
        reader.read_object(loc.frame.offset, *id)
    }

    fn reader(&self, pack: &ObjectId) -> Result<Arc<PackReader>, StoreError> {
        if let Some(r) = lock_poisoned(&self.readers).get(pack) {
            return Ok(Arc::clone(r));
        }
        let reader = Arc::new(PackReader::open(
            &self.dir.join("packs").join(pack_file_name(pack)),
        )?);
        lock_poisoned(&self.readers).insert(*pack, Arc::clone(&reader));
        Ok(reader)
    }

    /// Reads an object that must be of `kind`.
    pub fn read_kind(&self, id: &ObjectId, kind: ObjectKind) -> Result<Vec<u8>, StoreError> {
        let (found, bytes) = self.read(id)?;
        if found != kind {
            return Err(StoreError::WrongKind {
                id: *id,
                expected: kind,
                found,
            });
        }
        Ok(bytes)
    }

    /// Reads and validates a tree.
    pub fn read_tree(&self, id: &ObjectId) -> Result<Tree, StoreError> {
        Tree::decode(*id, &self.read_kind(id, ObjectKind::Tree)?)
    }

    /// A file's whole content, whether stored as one chunk or a chunk list.
    pub fn read_file(&self, id: &ObjectId) -> Result<Vec<u8>, StoreError> {
        let (kind, bytes) = self.read(id)?;
        match kind {
            ObjectKind::Chunk => Ok(bytes),
            ObjectKind::ChunkList => {
                let list = ChunkList::decode(*id, &bytes)?;
                // The lengths are only a hint: a damaged list must not make us reserve unbounded memory.
                let hint = list
                    .chunks
                    .iter()
                    .fold(0u64, |n, c| n.saturating_add(c.len))
                    .min(64 << 20);
                let mut out = Vec::with_capacity(hint as usize);
                for chunk in &list.chunks {
                    out.extend_from_slice(&self.read_kind(&chunk.id, ObjectKind::Chunk)?);
                }
                Ok(out)
            }
            found => Err(StoreError::WrongKind {
                id: *id,
                expected: ObjectKind::Chunk,
                found,
            }),
        }
    }

    /// Drops cached pack readers (after gc deleted pack files).
    pub(crate) fn forget_readers(&self) {
        lock_poisoned(&self.readers).clear();
    }

    /// Starts writing objects into new packs. Safe to share between threads.
    pub fn writer(&self) -> ObjectWriter<'_> {
        ObjectWriter::new(self, false)
    }

    /// A writer that only computes ids and writes nothing: for status and previews.
    pub fn dry_writer(&self) -> ObjectWriter<'_> {
        ObjectWriter::new(self, true)
    }
}

/// Writes new objects into packs, skipping those the store or this writer already has.
///
/// Threads append to one of a few open packs ("lanes"), each under its own lock, so that
/// hashing and copying a frame into one pack never makes another thread wait. A thread takes
/// the first lane it finds free, so a writer used by one thread at a time fills lane 0 only
/// and a small save still makes one pack.
#[derive(Debug)]
pub struct ObjectWriter<'s> {
    store: &'s Store,
    /// Ids this writer stored or is storing: an object met twice in one save is written once.
    seen: Mutex<HashSet<ObjectId>>,
    lanes: Vec<Mutex<Option<PackWriter>>>,
    /// Full packs sealed so far, with their frames.
    sealed: Mutex<Vec<(ObjectId, Vec<FrameInfo>)>>,
    dry_run: bool,
}

/// At most this many packs are open at once. A lane no thread needed stays empty and costs
/// nothing, so this is not sized from the CPU count (asking the kernel for it costs more than
/// a small save's hashing).
const MAX_LANES: usize = 4;

impl<'s> ObjectWriter<'s> {
    fn new(store: &'s Store, dry_run: bool) -> ObjectWriter<'s> {
        ObjectWriter {
            store,
            seen: Mutex::default(),
            lanes: (0..MAX_LANES).map(|_| Mutex::default()).collect(),
            sealed: Mutex::default(),
            dry_run,
        }
    }

    /// Stores `raw` as an object of `kind` unless it is already there; returns its id.
    pub fn put(&self, kind: ObjectKind, raw: &[u8]) -> Result<ObjectId, StoreError> {
        let id = ObjectId::of(kind, raw);
        if self.dry_run || !lock_poisoned(&self.seen).insert(id) || self.store.contains(&id)? {
            return Ok(id);
        }
        // Compression runs outside any lock so that callers on several threads overlap.
        let encoded = EncodedObject::encode_with_id(kind, id, raw)?;
        self.append(&encoded)?;
        Ok(id)
    }

    /// Appends an already-encoded object as it is (gc copying live objects out of a pack).
    pub fn copy(&self, encoded: &EncodedObject) -> Result<(), StoreError> {
        if lock_poisoned(&self.seen).insert(encoded.id) {
            self.append(encoded)?;
        }
        Ok(())
    }

    fn append(&self, encoded: &EncodedObject) -> Result<(), StoreError> {
        let mut lane = self.free_lane();
        let mut current = match lane.take() {
            Some(w) => w,
            None if self.store.catalog.is_read_only() => {
                return Err(StoreError::ReadOnly(self.store.dir.clone()));
            }
            None => PackWriter::create(&self.store.dir.join("tmp"))?,
        };
        current.add(encoded)?;
        if current.len() < PACK_TARGET_SIZE {
            *lane = Some(current);
            return Ok(());
        }
        // Sealing fsyncs a full pack (tens of milliseconds); the lane is free meanwhile.
        drop(lane);
        let sealed = current.finish(&self.store.dir.join("packs"))?;
        lock_poisoned(&self.sealed).push(sealed);
        Ok(())
    }

    /// The first lane no other thread holds, or lane 0 once all are busy.
    fn free_lane(&self) -> MutexGuard<'_, Option<PackWriter>> {
        for lane in &self.lanes {
            match lane.try_lock() {
                Ok(guard) => return guard,
                Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        lock_poisoned(&self.lanes[0])
    }

    /// True for a writer that only computes ids.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Seals the open packs. The returned packs are durable in `packs/` and must now be named
    /// in a catalog commit; until then they are garbage that gc may sweep.
    ///
    /// The catalog is opened for that commit meanwhile, on this thread: its open syncs the
    /// catalog file while another thread fsyncs the packs, instead of one sync after the other
    /// (a save after a small change spends most of what it adds to the walk on syncs).
    pub fn finish(self) -> Result<Vec<(ObjectId, Vec<FrameInfo>)>, StoreError> {
        let mut sealed = self.sealed.into_inner().unwrap_or_else(|p| p.into_inner());
        let open: Vec<PackWriter> = (self.lanes.into_iter())
            .filter_map(|lane| lane.into_inner().unwrap_or_else(|p| p.into_inner()))
            .filter(|w| !w.is_empty())
            .collect();
        if open.is_empty() {
            return Ok(sealed);
        }
        let packs = self.store.dir.join("packs");
        let (sealing, prepared) = std::thread::scope(|s| {
            let sealing = s.spawn(|| {
                (open.into_iter())
                    .map(|w| w.finish(&packs))
                    .collect::<Result<Vec<_>, _>>()
            });
            let prepared = self.store.catalog.prepare_write();
            let sealing = sealing
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (sealing, prepared)
        });
        sealed.extend(sealing?);
        prepared?;
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(i: u32) -> Vec<u8> {
        format!("object {i} ")
            .repeat(1 + i as usize % 50)
            .into_bytes()
    }

    #[test]
    fn objects_written_from_many_threads_all_land_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let writer = store.writer();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let writer = &writer;
                // Every thread writes every object: each must land in exactly one pack.
                s.spawn(move || {
                    for i in 0..500 {
                        writer
                            .put(ObjectKind::Chunk, &blob((i + t * 7) % 500))
                            .unwrap();
                    }
                });
            }
        });
        let packs = writer.finish().unwrap();
        let frames: Vec<ObjectId> = packs
            .iter()
            .flat_map(|(_, f)| f.iter().map(|f| f.id))
            .collect();
        assert_eq!(frames.len(), 500);
        assert_eq!(frames.iter().collect::<HashSet<_>>().len(), 500);
        assert!(packs.len() <= MAX_LANES);
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
        for i in 0..500 {
            let raw = blob(i);
            let id = ObjectId::of(ObjectKind::Chunk, &raw);
            assert_eq!(store.read(&id).unwrap(), (ObjectKind::Chunk, raw));
        }
    }

    #[test]
    fn one_thread_writes_one_pack() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let writer = store.writer();
        for i in 0..100 {
            writer.put(ObjectKind::Chunk, &blob(i)).unwrap();
        }
        assert_eq!(writer.finish().unwrap().len(), 1);
    }
}
