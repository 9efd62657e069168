//! `ObjectWriter`: new objects into packs, from many threads at once, each stored once;
//! small chunks gathered into blocks, trees stored against their previous version.
//!
//! The layer owns the path from an object's bytes to a sealed pack: [`seen`] keeps the ids
//! one save has stored, and the writer hands the sealed packs, their frames and the save's
//! stat rows to the store's commit. Which packs exist afterwards is the catalog's record.

mod seen;

use std::sync::{Mutex, MutexGuard};

use crate::Store;
use crate::cache::rows::StatRows;
use crate::fs::lock_poisoned;
use crate::pack::delta::DeltaHeader;
use crate::pack::delta::MAX_DELTA_DEPTH;
use crate::pack::frames::PackFrames;
use crate::pack::slice::{PendingBlock, SLICE_MAX};
use crate::pack::{EncodedObject, FrameInfo, PACK_TARGET_SIZE, PackWriter};
use crate::{ObjectId, ObjectKind, StoreError};
use seen::SeenIds;

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
    seen: SeenIds,
    lanes: Vec<Mutex<Option<PackWriter>>>,
    /// Full packs sealed so far, with their frames.
    sealed: Mutex<Vec<(ObjectId, PackFrames)>>,
    /// Seals full packs off the threads that store (started with the first full pack).
    sealer: Mutex<Option<Sealer>>,
    /// A pack this long is full: [`PACK_TARGET_SIZE`], smaller in tests.
    pack_target: u64,
    /// Small chunks gathered for the next blocks (see [`crate::pack::slice`]), one block per
    /// thread (by a hash of its id), so that a block holds files stored one after another:
    /// a restore, which reads in the same order, then needs each block on one thread only.
    blocks: Vec<Mutex<PendingBlock>>,
    /// What this writer writes.
    writes: Writes,
    /// Set when an append failed: the open pack it was writing, and the frames in it, are
    /// gone, so [`ObjectWriter::finish`] refuses, whatever the caller made of the error.
    failed: std::sync::atomic::AtomicBool,
}

thread_local! {
    /// A number per thread, in the order threads first write: the worker threads of one
    /// process get consecutive numbers, so their pending blocks differ.
    static THREAD_NUMBER: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    };
}

/// What a writer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writes {
    /// Objects neither the store nor this writer has yet.
    New,
    /// Also objects the catalog already names, as new frames that the commit then locates
    /// instead (see [`Store::rewriting_writer`]).
    Rewrite,
    /// Nothing: ids are computed, no byte is written (status and previews).
    Nothing,
}

/// At most this many packs are open at once. A lane no thread needed stays empty and costs
/// nothing, so this is not sized from the CPU count (asking the kernel for it costs more than
/// a small save's hashing).
pub(crate) const MAX_LANES: usize = 4;

impl Store {
    /// Starts writing objects into new packs. Safe to share between threads.
    pub fn writer(&self) -> ObjectWriter<'_> {
        ObjectWriter::new(self, Writes::New)
    }

    /// As [`Store::writer`], also writing the objects the catalog already names: for content
    /// whose named copy cannot be read back ([`Store::check_file`]) while its bytes are still
    /// at hand. Committed, the new frames are the ones the catalog locates.
    pub fn rewriting_writer(&self) -> ObjectWriter<'_> {
        ObjectWriter::new(self, Writes::Rewrite)
    }

    /// A writer that only computes ids and writes nothing: for status and previews.
    pub fn dry_writer(&self) -> ObjectWriter<'_> {
        ObjectWriter::new(self, Writes::Nothing)
    }
}

impl<'s> ObjectWriter<'s> {
    fn new(store: &'s Store, writes: Writes) -> ObjectWriter<'s> {
        ObjectWriter {
            store,
            seen: SeenIds::default(),
            lanes: (0..MAX_LANES).map(|_| Mutex::default()).collect(),
            sealed: Mutex::default(),
            sealer: Mutex::default(),
            pack_target: PACK_TARGET_SIZE,
            blocks: (0..MAX_LANES).map(|_| Mutex::default()).collect(),
            writes,
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// True when `id` need not be written: the catalog names it, and this writer does not
    /// rewrite what it names.
    fn in_store(&self, id: &ObjectId) -> Result<bool, StoreError> {
        Ok(self.writes != Writes::Rewrite && self.store.contains(id)?)
    }

    /// Makes room for `objects` more ids in the set of those seen, ahead of storing them.
    /// Grown as it fills, the set holds its old and new tables at once, and a first save of a
    /// million files does that at its peak.
    pub fn expect(&self, objects: usize) {
        if !self.is_dry_run() {
            self.seen.expect(objects);
        }
    }

    /// Forgets the ids stored so far, giving their set's room back; a later put of one of
    /// them stores it again (a second frame of the same object, never a missing one). A scan
    /// calls it once its files are stored: what it puts after is trees and a snapshot, whose
    /// ids no file's content shares (the kind is hashed into every id).
    pub fn forget_seen(&self) {
        self.seen.clear();
    }

    /// Stat cache rows for a scan storing through this writer, spilled past a few MiB to an
    /// unnamed file in the store's `tmp/` (see [`StatRows`]).
    pub fn stat_rows(&self) -> StatRows {
        StatRows::spilling_into(&self.store.dir().join("tmp"))
    }

    /// Stores `raw` as an object of `kind` unless it is already there; returns its id.
    pub fn put(&self, kind: ObjectKind, raw: &[u8]) -> Result<ObjectId, StoreError> {
        self.put_against(kind, raw, None)
    }

    /// As [`ObjectWriter::put`], storing `raw` as a delta against `base` (an object already
    /// in the catalog, typically the version it replaces: a tree's, or a file's at the same
    /// path) when that is much smaller. A base that cannot be read, is of another kind, or is
    /// at the end of a chain as long as allowed, is not used; the object is then stored as
    /// `put` would (a small chunk gathered into a block).
    pub fn put_against(
        &self,
        kind: ObjectKind,
        raw: &[u8],
        base: Option<ObjectId>,
    ) -> Result<ObjectId, StoreError> {
        let id = ObjectId::of(kind, raw);
        if self.is_dry_run() || !self.seen.insert(id) || self.in_store(&id)? {
            return Ok(id);
        }
        // Compression runs outside any lock so that callers on several threads overlap.
        let plain = match base {
            Some(_) => EncodedObject::encode_with_id(kind, id, raw)?,
            None if kind == ObjectKind::Chunk && raw.len() <= SLICE_MAX => {
                return self.gather(id, raw).map(|()| id);
            }
            None => {
                return self
                    .append(&EncodedObject::encode_with_id(kind, id, raw)?)
                    .map(|()| id);
            }
        };
        match base.and_then(|base| self.encode_delta(kind, id, raw, base, plain.payload.len())) {
            Some(delta) => self.append(&delta)?,
            None if kind == ObjectKind::Chunk && raw.len() <= SLICE_MAX => self.gather(id, raw)?,
            None => self.append(&plain)?,
        }
        Ok(id)
    }

    /// `raw` (of `kind`, hashing to `id`) as a delta against `base`, when that is under half
    /// of `plain_len`, the size of its plain payload.
    fn encode_delta(
        &self,
        kind: ObjectKind,
        id: ObjectId,
        raw: &[u8],
        base: ObjectId,
        plain_len: usize,
    ) -> Option<EncodedObject> {
        let (base_kind, base_raw, depth) = self.store.read_within(&base, MAX_DELTA_DEPTH).ok()?;
        if base_kind != kind || depth >= MAX_DELTA_DEPTH {
            return None;
        }
        let header = DeltaHeader {
            base,
            depth: depth + 1,
        };
        EncodedObject::encode_delta(kind, id, raw, header, (&base_raw, plain_len))
    }

    /// Adds a small chunk to the pending block; the thread that fills the block stores it.
    fn gather(&self, id: ObjectId, raw: &[u8]) -> Result<(), StoreError> {
        let full = {
            let mut block = lock_poisoned(self.thread_block());
            if !block.push(id, raw) {
                return Ok(());
            }
            std::mem::take(&mut *block)
        };
        self.store_block(full)
    }

    /// The pending block of the calling thread.
    fn thread_block(&self) -> &Mutex<PendingBlock> {
        &self.blocks[THREAD_NUMBER.with(|n| *n) % self.blocks.len()]
    }

    /// Stores a gathered block, then a slice of it per chunk. A block of one chunk is stored
    /// as that chunk: a save that changed one small file reads and writes it as before.
    fn store_block(&self, block: PendingBlock) -> Result<(), StoreError> {
        match block.members[..] {
            [] => return Ok(()),
            [(id, _, _)] => {
                let plain = EncodedObject::encode_with_id(ObjectKind::Chunk, id, &block.raw)?;
                return self.append(&plain);
            }
            _ => {}
        }
        let block_id = ObjectId::of(ObjectKind::Block, &block.raw);
        if self.seen.insert(block_id) && !self.in_store(&block_id)? {
            let encoded = EncodedObject::encode_with_id(ObjectKind::Block, block_id, &block.raw)?;
            self.append(&encoded)?;
        }
        for (id, offset, len) in block.members {
            self.append(&EncodedObject::encode_slice(id, len, block_id, offset))?;
        }
        Ok(())
    }

    /// Appends an already-encoded object as it is (gc copying live objects out of a pack).
    pub fn copy(&self, encoded: &EncodedObject) -> Result<(), StoreError> {
        if self.seen.insert(encoded.id) {
            self.append(encoded)?;
        }
        Ok(())
    }

    pub(crate) fn append(&self, encoded: &EncodedObject) -> Result<(), StoreError> {
        let appended = self.append_to_a_lane(encoded);
        if appended.is_err() {
            self.failed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        appended
    }

    fn append_to_a_lane(&self, encoded: &EncodedObject) -> Result<(), StoreError> {
        let mut lane = self.free_lane();
        let mut current = match lane.take() {
            Some(w) => w,
            None if self.store.catalog.is_read_only() => {
                return Err(StoreError::ReadOnly(self.store.dir().to_path_buf()));
            }
            None => PackWriter::create(&self.store.dir().join("tmp"))?,
        };
        current.add(encoded)?;
        if current.len() < self.pack_target {
            *lane = Some(current);
            return Ok(());
        }
        drop(lane);
        self.seal_later(current)
    }

    /// Hands a full pack to the sealer thread, starting it if need be; seals it here when
    /// no thread can be started or the sealer has stopped on an error (which
    /// [`ObjectWriter::finish`] then reports).
    fn seal_later(&self, pack: PackWriter) -> Result<(), StoreError> {
        let packs = self.store.dir().join("packs");
        let mut sealer = lock_poisoned(&self.sealer);
        if sealer.is_none() {
            *sealer = Sealer::spawn(packs.clone());
        }
        let pack = match sealer.as_ref() {
            Some(s) => match s.send(pack) {
                None => return Ok(()),
                Some(pack) => pack,
            },
            None => pack,
        };
        drop(sealer);
        let sealed = pack.finish(&packs)?;
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
        self.writes == Writes::Nothing
    }

    /// Seals the open packs. The returned packs are durable in `packs/` and must now be named
    /// in a catalog commit; until then they are garbage that gc may sweep.
    ///
    /// The catalog is opened for that commit meanwhile, on this thread: its open syncs the
    /// catalog file while another thread fsyncs the packs, instead of one sync after the other
    /// (a save after a small change spends most of what it adds to the walk on syncs).
    pub fn finish(self) -> Result<Vec<(ObjectId, Vec<FrameInfo>)>, StoreError> {
        for block in &self.blocks {
            self.store_block(std::mem::take(&mut *lock_poisoned(block)))?;
        }
        if self.failed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StoreError::WriterFailed(self.store.dir().to_path_buf()));
        }
        let mut sealed = self.sealed.into_inner().unwrap_or_else(|p| p.into_inner());
        let sealer = self.sealer.into_inner().unwrap_or_else(|p| p.into_inner());
        let open: Vec<PackWriter> = (self.lanes.into_iter())
            .filter_map(|lane| lane.into_inner().unwrap_or_else(|p| p.into_inner()))
            .filter(|w| !w.is_empty())
            .collect();
        if open.is_empty() {
            sealed.extend(sealer.map_or(Ok(Vec::new()), Sealer::join)?);
            return frames_of(sealed);
        }
        let packs = self.store.dir().join("packs");
        let (sealing, prepared) = std::thread::scope(|s| {
            let sealing = s.spawn(|| {
                let mut done = sealer.map_or(Ok(Vec::new()), Sealer::join)?;
                for w in open {
                    done.push(w.finish(&packs)?);
                }
                Ok::<_, StoreError>(done)
            });
            let prepared = self.store.catalog.prepare_write();
            let sealing = sealing
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (sealing, prepared)
        });
        sealed.extend(sealing?);
        prepared?;
        frames_of(sealed)
    }
}

/// Packs sealed by this thread, or the first error that stopped it.
type SealerResult = Result<Vec<(ObjectId, PackFrames)>, StoreError>;

/// A thread that seals full packs in the order it is handed them. A seal fsyncs a whole
/// pack; on the thread that filled the pack, it held one of the scan's workers idle that long.
#[derive(Debug)]
struct Sealer {
    queue: Option<std::sync::mpsc::Sender<PackWriter>>,
    thread: Option<std::thread::JoinHandle<SealerResult>>,
}

impl Sealer {
    /// A sealer into `packs`, or `None` when no thread can be started.
    fn spawn(packs: std::path::PathBuf) -> Option<Sealer> {
        let (queue, full) = std::sync::mpsc::channel::<PackWriter>();
        let thread = std::thread::Builder::new()
            .name("snap-seal".into())
            .spawn(move || full.into_iter().map(|w| w.finish(&packs)).collect())
            .ok()?;
        Some(Sealer {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    /// Queues `pack`; gives it back when the thread has stopped (on an error).
    fn send(&self, pack: PackWriter) -> Option<PackWriter> {
        match &self.queue {
            Some(queue) => queue.send(pack).err().map(|e| e.0),
            None => Some(pack),
        }
    }

    /// Waits for every queued pack to be sealed.
    fn join(mut self) -> SealerResult {
        match self.stop() {
            Some(done) => done.unwrap_or_else(|p| std::panic::resume_unwind(p)),
            None => Ok(Vec::new()),
        }
    }

    /// Closes the queue, which ends the thread once it has sealed what it holds, and waits
    /// for it; `None` when it was already waited for.
    fn stop(&mut self) -> Option<std::thread::Result<SealerResult>> {
        self.queue = None;
        self.thread.take().map(std::thread::JoinHandle::join)
    }
}

impl Drop for Sealer {
    /// A writer dropped without `finish` still waits for its seals, so that no thread of
    /// it writes into the store after it is gone (the packs are garbage that gc sweeps).
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The frames of each pack, read back from where they were spilled for the commit.
fn frames_of(
    packs: Vec<(ObjectId, PackFrames)>,
) -> Result<Vec<(ObjectId, Vec<FrameInfo>)>, StoreError> {
    (packs.into_iter())
        .map(|(pack, frames)| Ok((pack, frames.to_vec()?)))
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::Commit;

    #[test]
    fn full_packs_sealed_by_the_sealer_are_all_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let mut writer = store.writer();
        writer.pack_target = 16 << 10;
        let ids: Vec<ObjectId> = std::thread::scope(|s| {
            let writer = &writer;
            let halves = [0..200u32, 200..400].map(|r| {
                s.spawn(move || r.map(|i| writer.put(ObjectKind::ChunkList, &raw(i)).unwrap()))
            });
            halves
                .into_iter()
                .flat_map(|h| h.join().unwrap().collect::<Vec<_>>())
                .collect()
        });
        let packs = writer.finish().unwrap();
        assert!(packs.len() > 10, "{} packs", packs.len());
        let sealed = std::fs::read_dir(dir.path().join(".snap/packs"))
            .unwrap()
            .count();
        assert_eq!(sealed, packs.len());
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(
                store.read(id).unwrap(),
                (ObjectKind::ChunkList, raw(i as u32))
            );
        }
    }

    #[test]
    fn a_writer_dropped_unfinished_leaves_no_thread_writing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let mut writer = store.writer();
        writer.pack_target = 4 << 10;
        for i in 0..100 {
            writer.put(ObjectKind::ChunkList, &raw(i)).unwrap();
        }
        drop(writer);
        // Every full pack was sealed before the drop returned; nothing is left in tmp/.
        let packs = std::fs::read_dir(dir.path().join(".snap/packs"))
            .unwrap()
            .count();
        assert!(packs > 5, "{packs} packs");
        let tmp = std::fs::read_dir(dir.path().join(".snap/tmp"))
            .unwrap()
            .count();
        assert_eq!(tmp, 0);
    }

    /// 2 KiB that zstd cannot shrink, different for each `i`.
    fn raw(i: u32) -> Vec<u8> {
        let mut out = vec![0; 2048];
        blake3::Hasher::new()
            .update(&i.to_le_bytes())
            .finalize_xof()
            .fill(&mut out);
        out
    }

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
        let frames: Vec<ObjectId> = (packs.iter())
            .flat_map(|(_, f)| f.iter().filter(|f| f.kind == ObjectKind::Chunk))
            .map(|f| f.id)
            .collect();
        assert_eq!(frames.len(), 500);
        assert_eq!(
            frames
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            500
        );
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
