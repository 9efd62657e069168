//! `Store`: the `.snap/` directory as a whole: layout, lock, catalog and object reads (writes
//! go through [`ObjectWriter`], in `writer.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::catalog::{Catalog, Commit, HistoryState};
use crate::fs::lock::{StoreLock, lock_timeout};
use crate::fs::lock_poisoned;
use crate::pack::delta::{DeltaHeader, MAX_DELTA_DEPTH};
use crate::pack::{Compression, PackReader, pack_file_name};
use crate::{ObjectId, ObjectKind, SnapshotRecord, StoreError, Tree};

/// An open store. Holding one means holding the store lock.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    pub(crate) catalog: Catalog,
    readers: Mutex<HashMap<ObjectId, Arc<PackReader>>>,
    /// Trees and blocks read by this command (see `remember`).
    remembered: Mutex<Remembered>,
    /// Store directories that hold nothing durable which opening found missing and made
    /// again (see [`Store::mended`]).
    mended: Vec<PathBuf>,
    _lock: StoreLock,
}

/// The store directories that hold nothing durable: a command that finds one missing (a
/// user's `rm -rf .snap/tmp`) makes it again instead of failing on it.
const SCRATCH_DIRS: &[&str] = &["tmp"];

/// Objects kept by `Store::remember` (kind, bytes, delta depth), and their bytes in all.
#[derive(Debug, Default)]
struct Remembered {
    by_id: HashMap<ObjectId, (ObjectKind, Arc<[u8]>, u8)>,
    bytes: usize,
}

/// An object's raw bytes as a read gives them: its own, or shared with the remembered
/// objects (a block is read once for all its slices, without copying it for each).
#[derive(Debug)]
pub(crate) enum RawBytes {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
}

impl RawBytes {
    fn into_vec(self) -> Vec<u8> {
        match self {
            RawBytes::Owned(v) => v,
            RawBytes::Shared(a) => a.to_vec(),
        }
    }

    fn into_shared(self) -> Arc<[u8]> {
        match self {
            RawBytes::Owned(v) => v.into(),
            RawBytes::Shared(a) => a,
        }
    }
}

impl std::ops::Deref for RawBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RawBytes::Owned(v) => v,
            RawBytes::Shared(a) => a,
        }
    }
}

/// How a slice names the read of its block that failed.
const BLOCK: &str = "its block: ";

/// `Store::remember` forgets everything once it holds this many bytes.
const REMEMBERED_BYTES: usize = 8 << 20;

/// Makes again each of [`SCRATCH_DIRS`] that is missing from `dir`; returns those made.
fn mend_scratch(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut made = Vec::new();
    for name in SCRATCH_DIRS {
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        crate::fs::io::create_private_dir_all(&path)?;
        made.push(path);
    }
    if !made.is_empty() {
        crate::fs::io::sync_dir(dir)?;
    }
    Ok(made)
}

impl Store {
    /// Creates a store in `dir` (which becomes `.snap/`), or opens the one already there.
    ///
    /// `packs/` is what makes a directory a store, so it is made last, under the lock, once
    /// the catalog is durable: a command racing this one (two first saves at once) finds no
    /// store, not one without a catalog, and then waits here for the lock.
    pub fn init(dir: &Path) -> Result<Store, StoreError> {
        if !dir.join("packs").is_dir() {
            crate::fs::io::refuse_foreign_entries(dir)?;
        }
        crate::fs::io::create_private_dir_all(&dir.join("tmp"))?;
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            crate::fs::io::write_atomic(&ignore, b"*\n")?;
        }
        let catalog = dir.join("catalog.redb");
        if !catalog.exists() || !dir.join("packs").is_dir() {
            let _lock = StoreLock::acquire(&dir.join("lock"), lock_timeout()?)?;
            // A store whose catalog is gone still has its history in the packs: an empty
            // catalog in its place would say there is none, and gc would delete the packs.
            if !catalog.exists() && dir.join("packs").is_dir() {
                return Err(StoreError::CatalogUnreadable {
                    path: catalog,
                    why: "it is missing, and packs/ holds the history".into(),
                });
            }
            if !catalog.exists() {
                drop(Catalog::create(&catalog)?);
                crate::fs::io::sync_dir(dir)?;
            }
            let packs = dir.join("packs");
            crate::fs::io::create_private_dir_all(&packs)?;
            crate::fs::io::sync_dir(dir)?;
        }
        Store::open(dir)
    }

    /// Opens the store in `dir`, taking its lock.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        if !dir.join("packs").is_dir() {
            return Err(StoreError::NotFound(dir.to_path_buf()));
        }
        crate::fs::io::refuse_links(dir)?;
        let lock = StoreLock::acquire(&dir.join("lock"), lock_timeout()?)?;
        let catalog = Catalog::open(&dir.join("catalog.redb"), lock.is_read_only())?;
        let mended = if lock.is_read_only() {
            Vec::new()
        } else {
            mend_scratch(dir)?
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            catalog,
            readers: Mutex::new(HashMap::new()),
            remembered: Mutex::default(),
            mended,
            _lock: lock,
        })
    }

    /// The scratch directories this open found missing and made again (`verify` names them).
    pub fn mended(&self) -> &[PathBuf] {
        &self.mended
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when this process can only read the store (its lock could not be written).
    pub fn is_read_only(&self) -> bool {
        self.catalog.is_read_only()
    }

    /// HEAD and the redo stack.
    pub fn history(&self) -> Result<HistoryState, StoreError> {
        self.catalog.history()
    }

    /// Every snapshot, oldest first.
    pub fn snapshots(&self) -> Result<Vec<(ObjectId, SnapshotRecord)>, StoreError> {
        self.catalog.snapshots()
    }

    /// One snapshot record of the store's own history (never a pulled one: an undo must not
    /// walk into another workspace's); a missing one is an error naming it.
    pub fn snapshot(&self, id: &ObjectId) -> Result<SnapshotRecord, StoreError> {
        self.catalog
            .snapshot(id)?
            .ok_or(StoreError::MissingObject { id: *id })
    }

    /// The snapshots pulled from remotes (never part of the store's own history).
    pub fn pulled(&self) -> Result<Vec<crate::Pulled>, StoreError> {
        self.catalog.pulled()
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

    /// The directory cache's records of `dirs` only, each read by its key.
    pub fn dir_records(&self, dirs: &[&[u8]]) -> Result<crate::DirCache, StoreError> {
        self.catalog.dir_records(dirs)
    }

    /// The tree cache's memos of `dirs` only, each read by its key.
    pub fn tree_memos(
        &self,
        dirs: &[&[u8]],
    ) -> Result<crate::PathMap<Vec<u8>, crate::WalkMemo>, StoreError> {
        self.catalog.tree_memos(dirs)
    }

    /// The tree cache: each directory's subtree memo (see [`crate::WalkMemo`]).
    pub fn tree_cache(&self) -> Result<crate::PathMap<Vec<u8>, crate::WalkMemo>, StoreError> {
        self.catalog.tree_cache()
    }

    /// The memo of the last exact walk, if any.
    pub fn walk_memo(&self) -> Result<Option<crate::WalkMemo>, StoreError> {
        self.catalog.walk_memo()
    }

    /// The change source's token of the last capture a watcher answered (FORMAT.md 6.6).
    pub fn watch_memo(&self) -> Result<Option<crate::WatchMemo>, StoreError> {
        self.catalog.watch_memo()
    }

    /// The files on disk the last save could not keep (FORMAT.md 6.10).
    pub fn untracked(&self) -> Result<Vec<crate::UntrackedFile>, StoreError> {
        self.catalog.untracked()
    }

    /// Bytes `id`'s frame takes in its pack (payload as stored); `None` when the catalog
    /// does not know it.
    pub fn stored_len(&self, id: &ObjectId) -> Result<Option<u64>, StoreError> {
        Ok(self
            .catalog
            .locate(id)?
            .map(|l| u64::from(l.frame.stored_len)))
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

    /// The current turn of agent session `session` (0 before its first prompt).
    pub fn turn(&self, session: &str) -> Result<u64, StoreError> {
        self.catalog.turn(session)
    }

    /// Counts a new turn of `session`, durably, and returns its number.
    pub fn start_turn(&self, session: &str) -> Result<u64, StoreError> {
        self.catalog.start_turn(session)
    }

    /// What the hook last told agent session `session` the tree was: `(the session's newest
    /// snapshot then, tree)`.
    pub fn told(&self, session: &str) -> Result<Option<(ObjectId, ObjectId)>, StoreError> {
        self.catalog.told(session)
    }

    /// Records that `session` (newest snapshot `snapshot`) was told the tree is `tree`.
    pub fn set_told(
        &self,
        session: &str,
        snapshot: &ObjectId,
        tree: &ObjectId,
    ) -> Result<(), StoreError> {
        self.catalog.set_told(session, snapshot, tree)
    }

    /// Reads an object, checking its hash.
    pub fn read(&self, id: &ObjectId) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let (kind, raw, _) = self.read_within(id, MAX_DELTA_DEPTH)?;
        Ok((kind, raw.into_vec()))
    }

    /// Reads an object and how deep a delta it is stored as (0: whole), resolving a chain of
    /// at most `depth_left` deltas: each delta must be shallower than the last, so a damaged
    /// or hostile chain ends within [`MAX_DELTA_DEPTH`] reads.
    pub(crate) fn read_within(
        &self,
        id: &ObjectId,
        depth_left: u8,
    ) -> Result<(ObjectKind, RawBytes, u8), StoreError> {
        if let Some((kind, raw, depth)) = lock_poisoned(&self.remembered).by_id.get(id) {
            return Ok((*kind, RawBytes::Shared(Arc::clone(raw)), *depth));
        }
        let loc = self
            .catalog
            .locate(id)?
            .ok_or(StoreError::MissingObject { id: *id })?;
        let (info, payload) = self.reader(&loc.pack)?.read_frame(loc.frame.offset, *id)?;
        let mut depth = 0;
        let slice = info.compression == Compression::Slice;
        let mut broken_base = None;
        let mut base_raw = |h: &DeltaHeader| {
            if h.depth > depth_left {
                return Err(format!("its delta chain is deeper than {depth_left}"));
            }
            depth = h.depth;
            match self.read_within(&h.base, h.depth - 1) {
                Ok((ObjectKind::Block, raw, _)) if slice => Ok(raw.into_shared()),
                Ok((kind, _, _)) if slice => Err(format!("{BLOCK}{} is a {kind:?}", h.base)),
                Ok((_, raw, _)) => Ok(raw.into_shared()),
                Err(e) if slice => Err(format!("{BLOCK}{e}")),
                Err(e) => {
                    let why = e.to_string();
                    broken_base = Some(e);
                    Err(why)
                }
            }
        };
        let raw = crate::pack::decode_payload(&info, payload, &mut base_raw).map_err(|why| {
            match broken_base {
                // Down a chain, name what broke once, not every link above it.
                Some(StoreError::BrokenBase { base, .. }) => {
                    StoreError::BrokenBase { id: *id, base }
                }
                Some(base) => StoreError::BrokenBase {
                    id: *id,
                    base: Box::new(base),
                },
                None => StoreError::CorruptObject { id: *id, why },
            }
        })?;
        if matches!(info.kind, ObjectKind::Tree | ObjectKind::Block) {
            let shared: Arc<[u8]> = raw.into();
            self.remember(*id, info.kind, &shared, depth);
            return Ok((info.kind, RawBytes::Shared(shared), depth));
        }
        Ok((info.kind, RawBytes::Owned(raw), depth))
    }

    /// Keeps a tree's or a block's raw bytes for the rest of the command: a save reads HEAD's
    /// trees on the changed path for its diff, then again as the bases of their new versions,
    /// every link of a delta chain is itself a tree read, and the chunks of one block are
    /// mostly read one after another (a restore, a diff).
    fn remember(&self, id: ObjectId, kind: ObjectKind, raw: &Arc<[u8]>, depth: u8) {
        let mut kept = lock_poisoned(&self.remembered);
        if kept.bytes + raw.len() > REMEMBERED_BYTES {
            *kept = Remembered::default();
        }
        if raw.len() <= REMEMBERED_BYTES {
            kept.bytes += raw.len();
            kept.by_id.insert(id, (kind, Arc::clone(raw), depth));
        }
    }

    pub(crate) fn reader(&self, pack: &ObjectId) -> Result<Arc<PackReader>, StoreError> {
        if let Some(r) = lock_poisoned(&self.readers).get(pack) {
            return Ok(Arc::clone(r));
        }
        let path = self.dir.join("packs").join(pack_file_name(pack));
        let reader = Arc::new(PackReader::open(&path).map_err(|e| match e {
            StoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                StoreError::MissingPack(path.clone())
            }
            e => e,
        })?);
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

    /// Drops cached pack readers (after gc deleted pack files).
    pub(crate) fn forget_readers(&self) {
        lock_poisoned(&self.readers).clear();
        *lock_poisoned(&self.remembered) = Remembered::default();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Location;
    use crate::ObjectWriter;
    use crate::pack::Compression;
    use crate::pack::EncodedObject;
    use std::collections::HashSet;
    use std::sync::{Arc, Barrier};

    /// A tree of `n` files whose ids depend on `version` only for file `changed`.
    pub(crate) fn tree(n: u32, changed: u32, version: u32) -> Vec<u8> {
        let entries = (0..n)
            .map(|i| crate::TreeEntry {
                name: format!("file{i:04}.rs").into_bytes(),
                kind: crate::EntryKind::File,
                size: u64::from(i),
                id: ObjectId::of(
                    ObjectKind::Chunk,
                    format!("{i}:{}", if i == changed { version } else { 0 }).as_bytes(),
                ),
                mode: Some(0o644),
            })
            .collect();
        Tree { entries }.encode()
    }

    /// Seals `writer`'s packs and commits them.
    pub(crate) fn commit_writer(store: &Store, writer: ObjectWriter<'_>) {
        let packs = writer.finish().unwrap();
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
    }

    /// Writes `raw` against `base` and commits it; returns its id and how it was stored.
    fn put_committed(store: &Store, raw: &[u8], base: Option<ObjectId>) -> (ObjectId, Location) {
        let writer = store.writer();
        let id = writer.put_against(ObjectKind::Tree, raw, base).unwrap();
        commit_writer(store, writer);
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
            *lock_poisoned(&store.remembered) = Remembered::default();
            let (_, read, depth) = store.read_within(&id, MAX_DELTA_DEPTH).unwrap();
            assert_eq!(*read, *raw);
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

    /// Source-like text of about `len` bytes, different for each `seed`.
    fn text(seed: u32, len: usize) -> Vec<u8> {
        let words = ["fn", "let", "impl", "match", "self", "pub", "use", "where"];
        (0..len as u32)
            .map(|i| words[(i.wrapping_mul(seed | 1).wrapping_mul(2654435761) >> 29) as usize])
            .flat_map(|w| [w.as_bytes(), b" "].concat())
            .take(len)
            .collect()
    }

    /// Puts `chunks` with one writer and commits them.
    fn put_chunks(store: &Store, chunks: &[Vec<u8>]) -> Vec<ObjectId> {
        let writer = store.writer();
        let ids = chunks
            .iter()
            .map(|c| writer.put(ObjectKind::Chunk, c).unwrap())
            .collect();
        commit_writer(store, writer);
        ids
    }

    #[test]
    fn small_chunks_are_stored_as_slices_of_blocks_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let chunks: Vec<Vec<u8>> = (0..60).map(|i| text(i, 1000 + 97 * i as usize)).collect();
        let ids = put_chunks(&store, &chunks);
        let locs: Vec<Location> = (ids.iter())
            .map(|id| store.catalog.locate(id).unwrap().unwrap())
            .collect();
        assert!(
            locs.iter()
                .all(|l| l.frame.compression == Compression::Slice)
        );
        let payload_bytes: u64 = locs.iter().map(|l| u64::from(l.frame.stored_len)).sum();
        assert_eq!(
            payload_bytes,
            60 * crate::pack::slice::SLICE_PAYLOAD_LEN as u64
        );
        // A fresh process, with nothing remembered, reads every chunk from its block.
        drop(store);
        let store = Store::open(&dir.path().join(".snap")).unwrap();
        for (id, chunk) in ids.iter().zip(&chunks).rev() {
            assert_eq!(store.read_file(id).unwrap(), *chunk);
        }
        // Blocks compress the chunks together: smaller than the chunks one by one.
        let alone: usize = (chunks.iter())
            .map(|c| {
                EncodedObject::encode(ObjectKind::Chunk, c)
                    .unwrap()
                    .payload
                    .len()
            })
            .sum();
        let blocks: HashSet<ObjectId> = (locs.iter())
            .map(|l| {
                let frame = store
                    .reader(&l.pack)
                    .unwrap()
                    .read_frame(l.frame.offset, l.frame.id);
                crate::pack::slice::SliceRef::parse(&frame.unwrap().1)
                    .unwrap()
                    .block
            })
            .collect();
        assert!(blocks.len() > 1, "{} blocks", blocks.len());
        let together: usize = (blocks.iter())
            .map(|b| store.catalog.locate(b).unwrap().unwrap().frame.stored_len as usize)
            .sum();
        assert!(together < alone * 9 / 10, "{together} vs {alone}");
    }

    #[test]
    fn a_lone_small_chunk_and_a_large_one_are_stored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let lone = put_chunks(&store, &[text(1, 3000)])[0];
        let large = put_chunks(&store, &[text(2, 40_000), text(3, 40_000)]);
        for id in [lone].iter().chain(&large) {
            let loc = store.catalog.locate(id).unwrap().unwrap();
            assert_eq!(loc.frame.compression, Compression::Zstd, "{id}");
        }
    }

    #[test]
    fn a_damaged_block_makes_its_slices_errors_that_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let ids = put_chunks(&store, &[text(1, 5000), text(2, 5000)]);
        let slice_payload = {
            let loc = store.catalog.locate(&ids[0]).unwrap().unwrap();
            let reader = store.reader(&loc.pack).unwrap();
            reader.read_frame(loc.frame.offset, ids[0]).unwrap().1
        };
        let block = crate::pack::slice::SliceRef::parse(&slice_payload)
            .unwrap()
            .block;
        let block_loc = store.catalog.locate(&block).unwrap().unwrap();
        assert_eq!(block_loc.frame.kind, ObjectKind::Block);
        drop(store);
        let pack = (dir.path().join(".snap/packs")).join(pack_file_name(&block_loc.pack));
        let mut bytes = std::fs::read(&pack).unwrap();
        let at = (block_loc.frame.offset + crate::pack::FRAME_HEADER_LEN) as usize + 40;
        bytes[at] ^= 0x55;
        std::fs::write(&pack, bytes).unwrap();
        let store = Store::open(&dir.path().join(".snap")).unwrap();
        for id in &ids {
            let err = store.read(id).unwrap_err().to_string();
            assert!(
                err.contains(&id.short()) && err.contains("its block"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_slice_of_something_that_is_not_a_block_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let raw = text(5, 3000);
        let (tree_id, _) = put_committed(&store, &raw, None);
        let id = ObjectId::of(ObjectKind::Chunk, &raw[..100]);
        let writer = store.writer();
        writer
            .append(&EncodedObject::encode_slice(id, 100, tree_id, 0))
            .unwrap();
        commit_writer(&store, writer);
        let err = store.read(&id).unwrap_err().to_string();
        assert!(err.contains("is a Tree"), "{err}");
    }

    /// Two first saves at once: whichever comes second waits for the first's store, and
    /// neither finds a store without its catalog.
    #[test]
    fn stores_created_at_once_by_several_threads_all_open() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(".snap");
            let barrier = Arc::new(Barrier::new(4));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (path.clone(), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        barrier.wait();
                        match Store::open(&path) {
                            Err(StoreError::NotFound(_)) => Store::init(&path).map(drop),
                            other => other.map(drop),
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap().unwrap();
            }
        }
    }
}
