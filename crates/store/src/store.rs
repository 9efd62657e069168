//! `Store`: the `.snap/` directory as a whole: layout, lock, catalog, object reads and writes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::catalog::{Catalog, Commit, HistoryState};
use crate::delta::{DeltaHeader, MAX_DELTA_DEPTH};
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
    /// Trees read by this command, with their delta depth (see `remember_tree`).
    trees: Mutex<RememberedTrees>,
    _lock: StoreLock,
}

/// Trees kept by `Store::remember_tree`, and their bytes in all.
#[derive(Debug, Default)]
struct RememberedTrees {
    by_id: HashMap<ObjectId, (Vec<u8>, u8)>,
    bytes: usize,
}

/// How a delta names the read of its base that failed.
const DELTA_BASE: &str = "its delta base: ";

/// `Store::remember_tree` forgets everything once it holds this many bytes of trees.
const REMEMBERED_TREE_BYTES: usize = 8 << 20;

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
            trees: Mutex::default(),
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
        let (kind, raw, _) = self.read_within(id, MAX_DELTA_DEPTH)?;
        Ok((kind, raw))
    }

    /// Reads an object and how deep a delta it is stored as (0: whole), resolving a chain of
    /// at most `depth_left` deltas: each delta must be shallower than the last, so a damaged
    /// or hostile chain ends within [`MAX_DELTA_DEPTH`] reads.
    fn read_within(
        &self,
        id: &ObjectId,
        depth_left: u8,
    ) -> Result<(ObjectKind, Vec<u8>, u8), StoreError> {
        if let Some(hit) = lock_poisoned(&self.trees).by_id.get(id) {
            return Ok((ObjectKind::Tree, hit.0.clone(), hit.1));
        }
        let loc = self
            .catalog
            .locate(id)?
            .ok_or(StoreError::MissingObject { id: *id })?;
        let (info, payload) = self.reader(&loc.pack)?.read_frame(loc.frame.offset, *id)?;
        let mut depth = 0;
        let mut base_raw = |h: &DeltaHeader| {
            if h.depth > depth_left {
                return Err(format!("its delta chain is deeper than {depth_left}"));
            }
            depth = h.depth;
            (self.read_within(&h.base, h.depth - 1))
                .map(|(_, raw, _)| raw)
                .map_err(|e| match e {
                    // Down a chain, name what broke once, not every link above it.
                    StoreError::CorruptObject { why, .. } if why.starts_with(DELTA_BASE) => why,
                    e => format!("{DELTA_BASE}{e}"),
                })
        };
        let raw = crate::pack::decode_payload(&info, payload, &mut base_raw)
            .map_err(|why| StoreError::CorruptObject { id: *id, why })?;
        if info.kind == ObjectKind::Tree {
            self.remember_tree(*id, &raw, depth);
        }
        Ok((info.kind, raw, depth))
    }

    /// Keeps a tree's raw bytes for the rest of the command: a save reads HEAD's trees on the
    /// changed path for its diff, then again as the bases of their new versions, and every
    /// link of a delta chain is itself a tree read.
    fn remember_tree(&self, id: ObjectId, raw: &[u8], depth: u8) {
        let mut trees = lock_poisoned(&self.trees);
        if trees.bytes + raw.len() > REMEMBERED_TREE_BYTES {
            *trees = RememberedTrees::default();
        }
        if raw.len() <= REMEMBERED_TREE_BYTES {
            trees.bytes += raw.len();
            trees.by_id.insert(id, (raw.to_vec(), depth));
        }
    }

    pub(crate) fn reader(&self, pack: &ObjectId) -> Result<Arc<PackReader>, StoreError> {
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
        *lock_poisoned(&self.trees) = RememberedTrees::default();
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
        self.put_against(kind, raw, None)
    }

    /// As [`ObjectWriter::put`], storing `raw` as a delta against `base` (an object already
    /// in the catalog, typically the version it replaces) when that is much smaller. A base
    /// that cannot be read, or is at the end of a chain as long as allowed, is not used.
    pub fn put_against(
        &self,
        kind: ObjectKind,
        raw: &[u8],
        base: Option<ObjectId>,
    ) -> Result<ObjectId, StoreError> {
        let id = ObjectId::of(kind, raw);
        if self.dry_run || !lock_poisoned(&self.seen).insert(id) || self.store.contains(&id)? {
            return Ok(id);
        }
        // Compression runs outside any lock so that callers on several threads overlap.
        let plain = EncodedObject::encode_with_id(kind, id, raw)?;
        let delta = base
            .and_then(|base| Some((base, self.store.read_within(&base, MAX_DELTA_DEPTH).ok()?)))
            .filter(|(_, (_, _, depth))| *depth < MAX_DELTA_DEPTH)
            .and_then(|(base, (_, base_raw, depth))| {
                let header = DeltaHeader {
                    base,
                    depth: depth + 1,
                };
                EncodedObject::encode_delta(kind, id, raw, header, (&base_raw, plain.payload.len()))
            });
        self.append(delta.as_ref().unwrap_or(&plain))?;
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
    use crate::Location;
    use crate::pack::Compression;

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

    /// A tree of `n` files whose ids depend on `version` only for file `changed`.
    fn tree(n: u32, changed: u32, version: u32) -> Vec<u8> {
        let entries = (0..n)
            .map(|i| crate::TreeEntry {
                name: format!("file{i:04}.rs").into_bytes(),
                kind: crate::EntryKind::File,
                size: u64::from(i),
                id: ObjectId::of(
                    ObjectKind::Chunk,
                    format!("{i}:{}", if i == changed { version } else { 0 }).as_bytes(),
                ),
            })
            .collect();
        Tree { entries }.encode()
    }

    /// Writes `raw` against `base` and commits it; returns its id and how it was stored.
    fn put_committed(store: &Store, raw: &[u8], base: Option<ObjectId>) -> (ObjectId, Location) {
        let writer = store.writer();
        let id = writer.put_against(ObjectKind::Tree, raw, base).unwrap();
        let packs = writer.finish().unwrap();
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
        (id, store.catalog.locate(&id).unwrap().unwrap())
    }

    #[test]
    fn a_new_version_of_a_tree_is_stored_against_the_old_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let (old, _) = put_committed(&store, &tree(100, 7, 1), None);
        let new_raw = tree(100, 7, 2);
        let (new, loc) = put_committed(&store, &new_raw, Some(old));
        assert_eq!(loc.frame.compression, Compression::Delta);
        assert!(loc.frame.stored_len < 200, "{}", loc.frame.stored_len);
        assert_eq!(
            store.read(&new).unwrap(),
            (ObjectKind::Tree, new_raw.clone())
        );
        // And from a fresh process, with no tree remembered.
        drop(store);
        let store = Store::open(&dir.path().join(".snap")).unwrap();
        assert_eq!(store.read_tree(&new).unwrap().encode(), new_raw);
    }

    #[test]
    fn delta_chains_stop_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let mut base = None;
        let mut depths = Vec::new();
        for version in 0..u32::from(MAX_DELTA_DEPTH) * 2 + 3 {
            let raw = tree(100, 3, version);
            let (id, _) = put_committed(&store, &raw, base);
            *lock_poisoned(&store.trees) = RememberedTrees::default();
            let (_, read, depth) = store.read_within(&id, MAX_DELTA_DEPTH).unwrap();
            assert_eq!(read, raw);
            depths.push(depth);
            base = Some(id);
        }
        let whole = [0, MAX_DELTA_DEPTH + 1, 2 * (MAX_DELTA_DEPTH + 1)];
        for (i, depth) in depths.iter().enumerate() {
            assert_eq!(
                *depth as usize,
                i % (MAX_DELTA_DEPTH as usize + 1),
                "{depths:?}"
            );
            assert_eq!(*depth == 0, whole.contains(&(i as u8)));
        }
    }

    #[test]
    fn a_damaged_base_makes_its_delta_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let (old, old_loc) = put_committed(&store, &tree(100, 7, 1), None);
        let (new, _) = put_committed(&store, &tree(100, 7, 2), Some(old));
        drop(store);
        let pack = dir
            .path()
            .join(".snap/packs")
            .join(pack_file_name(&old_loc.pack));
        let mut bytes = std::fs::read(&pack).unwrap();
        let at = (old_loc.frame.offset + crate::pack::FRAME_HEADER_LEN) as usize + 10;
        bytes[at] ^= 0x55;
        std::fs::write(&pack, bytes).unwrap();
        let store = Store::open(&dir.path().join(".snap")).unwrap();
        let err = store.read(&new).unwrap_err().to_string();
        assert!(
            err.contains(&new.short()) && err.contains("delta base"),
            "{err}"
        );
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
