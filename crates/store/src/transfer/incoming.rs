//! What arrives: sealed packs another store's objects were copied into, and the snapshot
//! records a command chose to take, named in two commits.
//!
//! A pack is taken only whole and sound: its trailer reads, its body hashes to its name,
//! every frame stored whole decodes to its id, and every delta or slice frame's base is in
//! the store or in the packs taken with it. Packs are moved into `packs/` (directory synced)
//! and named by a first commit; then every object the incoming records reach is checked to
//! be located (a gc refuses to run on a mark it cannot finish, so a record naming a missing
//! tree would stop every gc), and only then does a second commit name the records and move
//! HEAD. A kill before the first commit leaves packs no catalog names, which hold no
//! snapshot record and which gc deletes (docs/FORMAT.md 7.4); a kill or a missing object
//! between the two leaves named objects no snapshot reaches, which gc drops.
//!
//! Expunged stays gone: a snapshot whose id an expunge here renamed away (the `expunged`
//! table, FORMAT.md 6.7) is refused and counted, never named; and in a store that has
//! expunged, the packs are named with a pending purge ([`Store::purge`]) that then runs, so
//! no object only a refused snapshot (or nothing) reaches is kept: a kill in between leaves
//! the purge to the next writing command, as an expunge's does. A command that knows of
//! expunges elsewhere (a remote listing expunged ids) asks for the purge in any store
//! ([`IncomingPurge::Always`]): the packs it downloaded may hold what only a refused
//! snapshot reached.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::catalog::{Commit, HistoryState, Pulled, PulledChange, PurgeRow};
use crate::pack::delta::DeltaHeader;
use crate::pack::slice::SliceRef;
use crate::pack::{Compression, FrameInfo, PackReader, decode_payload, pack_file_name};
use crate::{EntryKind, ObjectId, ObjectKind, SnapshotRecord, Store, StoreError};

/// What a command takes into the store at once.
#[derive(Debug, Default)]
pub struct Incoming {
    /// Sealed pack files, each named `<id>.pack`, on the store's filesystem (its `tmp/`).
    pub packs: Vec<PathBuf>,
    /// Snapshot records (kind 4 bytes as stored) to add to the store's own history; their
    /// ids are computed here.
    pub records: Vec<Vec<u8>>,
    /// Snapshots to keep apart, as pulled from a remote.
    pub pulled: Vec<Pulled>,
    /// HEAD and the redo stack to set with them; `None` leaves them.
    pub history: Option<HistoryState>,
    /// Whether the packs taken are purged after.
    pub purge: IncomingPurge,
}

/// When [`Store::take_incoming`] purges the packs it took (FORMAT.md 7.5), so that no object
/// only a refused snapshot, or none, reaches stays in the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncomingPurge {
    /// Only in a store that has expunged (its `expunged` table has rows).
    #[default]
    IfExpungedHere,
    /// Whenever packs are taken: the sender listed expunged ids of its own.
    Always,
}

/// What [`Store::take_incoming`] added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncomingReport {
    /// Packs named (packs the catalog already named are not counted).
    pub packs: usize,
    /// Frames in them.
    pub objects: usize,
    /// Snapshot records added to the store's own history.
    pub snapshots: usize,
    /// Pulled snapshots added.
    pub pulled: usize,
    /// Snapshots refused: their ids are ones an expunge here renamed away.
    pub refused: usize,
}

/// One pack checked and ready to be named.
struct Checked {
    id: ObjectId,
    path: PathBuf,
    frames: Vec<FrameInfo>,
    bases: Vec<(ObjectId, ObjectId)>,
}

impl Store {
    /// Checks `incoming`'s packs, names them, checks that every object its records reach is
    /// in the store, then names the records (and pulled snapshots) and sets the history (see
    /// the module's documentation). Nothing is named that cannot be read.
    pub fn take_incoming(&self, mut incoming: Incoming) -> Result<IncomingReport, StoreError> {
        let expunged = self.expunged_ids()?;
        let refused = refuse_expunged(&mut incoming, &expunged);
        let wanted = !expunged.is_empty() || incoming.purge == IncomingPurge::Always;
        let purge = match !wanted || incoming.packs.is_empty() {
            true => None,
            false => Some(self.purge_allowed()?),
        };
        let named: HashSet<ObjectId> = self.catalog.packs()?.into_iter().map(|p| p.0).collect();
        let mut checked = Vec::new();
        for path in &incoming.packs {
            let pack = check_pack(path)?;
            if named.contains(&pack.id) {
                crate::fs::remove_if_present(path)?;
            } else {
                checked.push(pack);
            }
        }
        self.check_bases(&checked)?;
        let snapshots = decode_records(&incoming.records)?;
        check_history(&incoming.history, &snapshots)?;
        let report = IncomingReport {
            packs: checked.len(),
            objects: checked.iter().map(|p| p.frames.len()).sum(),
            snapshots: snapshots.len(),
            pulled: incoming.pulled.len(),
            refused,
        };
        // From the first pack moved in to the commit of the records: a kill between leaves
        // packs no catalog names, which the next writing command deletes.
        self.begin_pack_intent()?;
        self.commit(&Commit {
            packs: self.move_in(checked)?,
            purge: purge.clone(),
            ..Commit::default()
        })?;
        let roots = (snapshots.iter().map(|(_, r)| r.root))
            .chain(incoming.pulled.iter().map(|p| p.record.root));
        self.check_reach(&roots.collect::<Vec<_>>())?;
        let writer = self.writer();
        for raw in &incoming.records {
            writer.put(ObjectKind::Snapshot, raw)?;
        }
        let packs = writer.finish()?;
        crate::failpoint!("incoming-before-commit");
        self.commit(&Commit {
            packs,
            snapshots,
            history: incoming.history,
            pulled: PulledChange::Add(incoming.pulled),
            ..Commit::default()
        })?;
        self.end_pack_intent()?;
        if purge.is_some() {
            self.purge()?;
        }
        Ok(report)
    }

    /// The ids an expunge renamed away (the `expunged` table's old ids): never taken again.
    pub fn expunged_ids(&self) -> Result<HashSet<ObjectId>, StoreError> {
        Ok(self
            .catalog
            .renamed()?
            .into_iter()
            .map(|(old, _)| old)
            .collect())
    }

    /// The `expunged` table: each old id with the id its snapshot has now (what a push
    /// records on a remote, so other workspaces never bring the old ones back).
    pub fn expunged_renames(&self) -> Result<HashMap<ObjectId, ObjectId>, StoreError> {
        Ok(self.catalog.renamed()?.into_iter().collect())
    }

    /// A pending purge, for packs arriving in a store that has expunged; refused while an
    /// unnamed pack gc would keep is there (the purge could not finish: see `expunge`).
    fn purge_allowed(&self) -> Result<PurgeRow, StoreError> {
        match self.unnamed_packs_kept()?.first() {
            None => Ok(PurgeRow::Pending),
            Some(path) => Err(StoreError::io(
                path,
                std::io::Error::other(
                    "an unnamed pack may hold history, and this store has expunged: run `snap repair` first",
                ),
            )),
        }
    }

    /// Every base a taken frame names must be in the store or among the frames taken.
    fn check_bases(&self, packs: &[Checked]) -> Result<(), StoreError> {
        let taken: HashSet<ObjectId> = packs
            .iter()
            .flat_map(|p| p.frames.iter().map(|f| f.id))
            .collect();
        for pack in packs {
            for (id, base) in &pack.bases {
                if !taken.contains(base) && !self.contains(base)? {
                    return Err(StoreError::CorruptPack {
                        path: pack.path.clone(),
                        why: format!("{id} is stored against {base}, which is absent"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every object the trees `roots` reach is located. Every tree is read, those the store
    /// held before too: a tree can be there without all it reaches (a pull that failed here
    /// after naming its packs; gc keeps dead frames in the packs it keeps).
    fn check_reach(&self, roots: &[ObjectId]) -> Result<(), StoreError> {
        let mut seen = HashSet::new();
        let mut trees = Vec::new();
        for root in roots {
            self.located(root)?;
            if seen.insert(*root) {
                trees.push(*root);
            }
        }
        while let Some(tree) = trees.pop() {
            for entry in self.read_tree(&tree)?.entries {
                let kind = self.located(&entry.id)?;
                if !seen.insert(entry.id) {
                    continue;
                }
                match entry.kind {
                    EntryKind::Dir => trees.push(entry.id),
                    EntryKind::File | EntryKind::Executable if kind == ObjectKind::ChunkList => {
                        let raw = self.read_kind(&entry.id, ObjectKind::ChunkList)?;
                        for chunk in crate::ChunkList::decode(entry.id, &raw)?.chunks {
                            self.located(&chunk.id)?;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The kind of a located object; an error naming it when the catalog lacks it.
    fn located(&self, id: &ObjectId) -> Result<ObjectKind, StoreError> {
        let loc = self.catalog.locate(id)?;
        loc.map(|l| l.frame.kind)
            .ok_or(StoreError::MissingObject { id: *id })
    }

    /// Renames each pack into `packs/` (one already there by that name is the same bytes),
    /// made 0600 first as every pack a save writes (whoever downloaded it, with whatever
    /// mode), then syncs the directory once.
    fn move_in(&self, packs: Vec<Checked>) -> Result<Vec<(ObjectId, Vec<FrameInfo>)>, StoreError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.dir().join("packs");
        let mut out = Vec::with_capacity(packs.len());
        for pack in packs {
            let private = std::fs::Permissions::from_mode(crate::fs::PRIVATE_FILE_MODE);
            std::fs::set_permissions(&pack.path, private)
                .map_err(|e| StoreError::io(&pack.path, e))?;
            let to = dir.join(pack_file_name(&pack.id));
            std::fs::rename(&pack.path, &to).map_err(|e| StoreError::io(&to, e))?;
            out.push((pack.id, pack.frames));
        }
        crate::fs::io::sync_dir(&dir)?;
        Ok(out)
    }
}

/// Checks one arrived pack whole (see the module's documentation).
fn check_pack(path: &Path) -> Result<Checked, StoreError> {
    let corrupt = |why: String| StoreError::CorruptPack {
        path: path.to_path_buf(),
        why,
    };
    let named = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(ObjectId::from_hex)
        .ok_or_else(|| corrupt("name is not a pack id".into()))?;
    let reader = PackReader::open(path)?;
    let (_, body_hash, end) = reader.read_trailer()?;
    if body_hash != named || reader.hash_body(end)? != named {
        return Err(corrupt("its body does not hash to its name".into()));
    }
    let frames = reader.scan_frames(end)?;
    let mut bases = Vec::new();
    for info in &frames {
        if info.kind == ObjectKind::Snapshot {
            return Err(corrupt("it holds a snapshot record".into()));
        }
        let (_, payload) = reader.read_frame(info.offset, info.id)?;
        let base = match info.compression {
            Compression::Delta => Some(DeltaHeader::parse(&payload).map(|h| h.base)),
            Compression::Slice => Some(SliceRef::parse(&payload).map(|r| r.block)),
            Compression::Raw | Compression::Zstd => None,
        };
        match base {
            Some(Ok(base)) => bases.push((info.id, base)),
            Some(Err(why)) => return Err(corrupt(why)),
            None => {
                let mut no_base = |_: &DeltaHeader| Err("no base".to_string());
                decode_payload(info, payload, &mut no_base).map_err(corrupt)?;
            }
        }
    }
    Ok(Checked {
        id: named,
        path: path.to_path_buf(),
        frames,
        bases,
    })
}

/// Drops the records and pulled snapshots whose ids are in `expunged`; returns how many.
fn refuse_expunged(incoming: &mut Incoming, expunged: &HashSet<ObjectId>) -> usize {
    let before = incoming.records.len() + incoming.pulled.len();
    (incoming.records).retain(|raw| !expunged.contains(&ObjectId::of(ObjectKind::Snapshot, raw)));
    incoming.pulled.retain(|p| !expunged.contains(&p.id));
    before - incoming.records.len() - incoming.pulled.len()
}

/// HEAD and every redo entry a clone is to take must be among the records it takes: the
/// history may name only snapshots the catalog holds.
fn check_history(
    history: &Option<HistoryState>,
    snapshots: &[(ObjectId, SnapshotRecord)],
) -> Result<(), StoreError> {
    let Some(history) = history else {
        return Ok(());
    };
    let named = history.head.iter().chain(&history.redo);
    match named
        .into_iter()
        .find(|id| !snapshots.iter().any(|(s, _)| s == *id))
    {
        Some(id) => Err(StoreError::MissingObject { id: *id }),
        None => Ok(()),
    }
}

fn decode_records(records: &[Vec<u8>]) -> Result<Vec<(ObjectId, SnapshotRecord)>, StoreError> {
    records
        .iter()
        .map(|raw| {
            let id = ObjectId::of(ObjectKind::Snapshot, raw);
            SnapshotRecord::decode(id, raw).map(|r| (id, r))
        })
        .collect()
}
