//! What leaves: the objects some snapshots reach that the other side lacks, with the bases
//! their frames are stored against, copied frame by frame (never re-encoded) into new packs.
//!
//! Planning reads trees under the store's lock; the plan keeps the pack files it needs open,
//! so the copying can run after the store is closed: an open descriptor outlives a gc that
//! deletes the file, and hook saves need not wait for an upload.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::{Location, Locations};
use crate::pack::{EncodedObject, PackReader, PackWriter};
use crate::{ChunkList, EntryKind, ObjectId, ObjectKind, Store, StoreError};

/// The objects to send and the open packs holding them.
#[derive(Debug)]
pub struct Outgoing {
    /// Frames to copy, in pack and offset order (each pack read front to back).
    frames: Vec<Location>,
    /// Objects encoded anew, whole: their frames' bases are not sent (see `open_outgoing`).
    whole: Vec<EncodedObject>,
    readers: HashMap<ObjectId, Arc<PackReader>>,
    /// The snapshot records to send, with their ids, as stored (kind 4 bytes).
    pub records: Vec<(ObjectId, Vec<u8>)>,
}

/// One pack an [`Outgoing`] wrote.
#[derive(Debug)]
pub struct SealedPack {
    /// The pack's id (the BLAKE3 of its body), also its file name.
    pub id: ObjectId,
    /// The sealed file.
    pub path: PathBuf,
    /// The objects in it, in frame order, each with the base or block its frame is stored
    /// against (`None`: stored whole).
    pub objects: Vec<PackedObject>,
    /// The file's length.
    pub bytes: u64,
}

impl Store {
    /// Plans sending `snapshots`: their records, and every object they reach (with the bases
    /// and blocks of the frames holding them, and theirs) for which `have` is false: `have`
    /// says the other side holds a readable copy of the object itself (not of what it
    /// reaches).
    pub fn outgoing(
        &self,
        snapshots: &[ObjectId],
        have: &dyn Fn(&ObjectId) -> bool,
    ) -> Result<Outgoing, StoreError> {
        let locations = self.catalog.locations()?;
        let mut records = Vec::with_capacity(snapshots.len());
        let mut roots = Vec::with_capacity(snapshots.len());
        for id in snapshots {
            roots.push(self.snapshot(id)?.root);
            records.push((*id, self.read_kind(id, ObjectKind::Snapshot)?));
        }
        let send = self.closure_within(&locations, &roots, have)?;
        self.open_outgoing(&locations, send, records)
    }

    /// As [`Store::outgoing`] for the trees `roots` alone, with no record: a remote's packs
    /// that held expunged bytes are rewritten from these (snap-remote's repack). The trees
    /// may be a pulled snapshot's, which [`Store::snapshot`] does not name.
    pub fn outgoing_trees(
        &self,
        roots: &[ObjectId],
        have: &dyn Fn(&ObjectId) -> bool,
    ) -> Result<Outgoing, StoreError> {
        let locations = self.catalog.locations()?;
        let send = self.closure_within(&locations, roots, have)?;
        self.open_outgoing(&locations, send, Vec::new())
    }

    /// Every object the trees `roots` reach, with the bases and blocks of the frames holding
    /// them and theirs: what another store needs to read those trees whole (a remote's gc
    /// keeps exactly this of its packs).
    pub fn closure(&self, roots: &[ObjectId]) -> Result<HashSet<ObjectId>, StoreError> {
        self.closure_within(&self.catalog.locations()?, roots, &|_| false)
    }

    /// As [`Store::closure`], leaving out what `have` holds. Every tree is read, those `have`
    /// holds too: the other side may hold a tree without all it reaches (a push killed
    /// between two of its packs, a remote gc that kept a pack for another object), and what
    /// is missing under it must go.
    fn closure_within(
        &self,
        locations: &Locations,
        roots: &[ObjectId],
        have: &dyn Fn(&ObjectId) -> bool,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        let mut seen = HashSet::new();
        let mut send = HashSet::new();
        let mut trees = Vec::new();
        let mut reach = |id: ObjectId, send: &mut HashSet<ObjectId>| {
            let first = seen.insert(id);
            if first && !have(&id) {
                send.insert(id);
            }
            first
        };
        for root in roots {
            if reach(*root, &mut send) {
                trees.push(*root);
            }
        }
        while let Some(tree) = trees.pop() {
            for entry in self.read_tree(&tree)?.entries {
                if !reach(entry.id, &mut send) {
                    continue;
                }
                match entry.kind {
                    EntryKind::Dir => trees.push(entry.id),
                    EntryKind::Symlink => {}
                    EntryKind::File | EntryKind::Executable => {
                        self.add_chunks(&entry.id, locations, have, &mut send)?
                    }
                }
            }
        }
        self.add_bases(locations, have, &mut send)?;
        Ok(send)
    }

    /// Adds the chunks of a file stored as a chunk list.
    fn add_chunks(
        &self,
        id: &ObjectId,
        locations: &Locations,
        have: &dyn Fn(&ObjectId) -> bool,
        send: &mut HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        let loc = locations
            .get(id)
            .ok_or(StoreError::MissingObject { id: *id })?;
        if loc.frame.kind == ObjectKind::ChunkList {
            let list = ChunkList::decode(*id, &self.read_kind(id, ObjectKind::ChunkList)?)?;
            send.extend(list.chunks.iter().map(|c| c.id).filter(|c| !have(c)));
        }
        Ok(())
    }

    /// Adds the base or block of every frame sent that is stored against one, down each chain:
    /// a frame copied verbatim is readable only beside its base.
    fn add_bases(
        &self,
        locations: &Locations,
        have: &dyn Fn(&ObjectId) -> bool,
        send: &mut HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        let mut pending: Vec<ObjectId> = send.iter().copied().collect();
        while let Some(id) = pending.pop() {
            let loc = locations.get(&id).ok_or(StoreError::MissingObject { id })?;
            if !loc.frame.compression.has_base() {
                continue;
            }
            let base = self.base_of(&loc)?;
            if !have(&base) && send.insert(base) {
                pending.push(base);
            }
        }
        Ok(())
    }

    /// Locates every object of `send` and opens the packs holding them.
    /// Locates every object of `send` and opens the packs holding them. A frame stored
    /// against a base that is not sent (the other side has it) is encoded whole instead:
    /// the objects one push sends then depend only on one another, so a remote gc can free a
    /// push's packs once nothing reaches their objects, instead of keeping an old pack for a
    /// tree a later push's delta was stored against.
    fn open_outgoing(
        &self,
        locations: &Locations,
        send: HashSet<ObjectId>,
        records: Vec<(ObjectId, Vec<u8>)>,
    ) -> Result<Outgoing, StoreError> {
        let mut frames = Vec::with_capacity(send.len());
        let mut whole = Vec::new();
        let mut readers = HashMap::new();
        for id in &send {
            let loc = locations
                .get(id)
                .ok_or(StoreError::MissingObject { id: *id })?;
            if loc.frame.compression.has_base() && !send.contains(&self.base_of(&loc)?) {
                let (kind, raw) = self.read(id)?;
                whole.push(EncodedObject::encode(kind, &raw)?);
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(v) = readers.entry(loc.pack) {
                v.insert(self.reader(&loc.pack)?);
            }
            frames.push(loc);
        }
        frames.sort_by_key(|l| (l.pack, l.frame.offset));
        whole.sort_by_key(|o| o.id);
        Ok(Outgoing {
            frames,
            whole,
            readers,
            records,
        })
    }
}

impl Outgoing {
    /// How many objects (frames) go.
    pub fn objects(&self) -> usize {
        self.frames.len() + self.whole.len()
    }

    /// Their bytes as stored (frame headers and payloads).
    pub fn frame_bytes(&self) -> u64 {
        let header = crate::pack::FRAME_HEADER_LEN;
        let copied: u64 = (self.frames.iter())
            .map(|l| header + u64::from(l.frame.stored_len))
            .sum();
        let whole: u64 = (self.whole.iter())
            .map(|o| header + o.payload.len() as u64)
            .sum();
        copied + whole
    }

    /// Copies the frames verbatim into packs in `dir` (created if absent), each sealed once it
    /// passes `target` bytes, and hands each to `sealed` as soon as it is: a caller uploads
    /// one pack while the next is written. The caller removes the files it was handed.
    pub fn write_packs<E: From<StoreError>>(
        &self,
        dir: &Path,
        target: u64,
        sealed: &mut dyn FnMut(SealedPack) -> Result<(), E>,
    ) -> Result<(), E> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let mut open: Option<(PackWriter, Vec<PackedObject>)> = None;
        let mut add = |object: &EncodedObject| -> Result<(), E> {
            let (writer, ids) = match &mut open {
                Some(o) => o,
                None => open.insert((PackWriter::create(dir)?, Vec::new())),
            };
            writer.add(object)?;
            ids.push((object.id, base_named(object)?));
            if writer.len() >= target
                && let Some((writer, ids)) = open.take()
            {
                sealed(seal(writer, ids, dir)?)?;
            }
            Ok(())
        };
        for loc in &self.frames {
            let reader = &self.readers[&loc.pack];
            let (info, payload) = reader.read_frame(loc.frame.offset, loc.frame.id)?;
            add(&EncodedObject::stored(info, payload))?;
        }
        for object in &self.whole {
            add(object)?;
        }
        if let Some((writer, ids)) = open.take() {
            sealed(seal(writer, ids, dir)?)?;
        }
        Ok(())
    }
}

/// An object written into an outgoing pack, with the base its frame is stored against.
type PackedObject = (ObjectId, Option<ObjectId>);

/// The base a delta's or slice's payload names (both start with its id, FORMAT.md 5.2).
fn base_named(object: &EncodedObject) -> Result<Option<ObjectId>, StoreError> {
    if !object.compression.has_base() {
        return Ok(None);
    }
    let base = object.payload.get(..32).and_then(ObjectId::from_slice);
    base.map(Some).ok_or(StoreError::CorruptObject {
        id: object.id,
        why: "its payload is too short to name its base".into(),
    })
}

fn seal(
    writer: PackWriter,
    objects: Vec<PackedObject>,
    dir: &Path,
) -> Result<SealedPack, StoreError> {
    let (id, _) = writer.finish(dir)?;
    let path = dir.join(crate::pack::pack_file_name(&id));
    let bytes = std::fs::metadata(&path)
        .map_err(|e| StoreError::io(&path, e))?
        .len();
    Ok(SealedPack {
        id,
        path,
        objects,
        bytes,
    })
}
