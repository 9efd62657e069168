//! `repair`: a lost or corrupt catalog rebuilt from the packs alone. The old catalog is kept
//! aside, never deleted; HEAD and the redo stack stay its own where it still reads.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::catalog::{Catalog, Commit, HistoryState};
use crate::fs::lock::{StoreLock, lock_timeout};
use crate::fs::remove_if_present;
use crate::pack::delta::DeltaHeader;
use crate::pack::slice::SliceRef;
use crate::pack::{Compression, FrameInfo, HEADER_LEN, PackReader, decode_payload};
use crate::{ObjectId, ObjectKind, SnapshotRecord, Store, StoreError};

/// Paths listed per damaged object, at most.
/// The outcome of `repair`.
#[derive(Clone, Debug, Default)]
pub struct RepairReport {
    /// Pack files found in `packs/`.
    pub packs: usize,
    /// Pack files that could not be opened, left out of the new catalog.
    pub damaged_packs: Vec<PathBuf>,
    /// Packs whose header alone had rotted, rewritten (see [`crate::pack::heal_header`]).
    pub headers_rewritten: Vec<PathBuf>,
    /// Frames recovered into the new catalog.
    pub objects: usize,
    /// Unreadable frames skipped, plus snapshot objects whose record does not decode.
    pub damaged_objects: usize,
    /// Snapshot records recovered, one per id.
    pub snapshots: usize,
    /// The new HEAD with its sequence number: the old catalog's HEAD when that could be
    /// read and its snapshot was recovered, else the newest snapshot recovered.
    pub head: Option<(ObjectId, u64)>,
    /// True when HEAD and the redo stack are the old catalog's (less what was not
    /// recovered); false when HEAD is the newest snapshot and the redo stack empty.
    pub history_kept: bool,
    /// Snapshots on the new redo stack.
    pub redo: usize,
    /// Where the old catalog was moved, if there was one.
    pub old_catalog: Option<PathBuf>,
    /// Snapshot records found only in packs the old catalog named (or a gc of it dropped)
    /// while it listed no such snapshot: prune or `delete --all` had dropped them, and they
    /// stay dropped (their trees and files may be gone).
    pub snapshots_left_dropped: usize,
}

impl Store {
    /// Rebuilds `catalog.redb` in `dir` from the packs alone. The old catalog (if any) is
    /// moved aside, never deleted. HEAD and the redo stack stay the old catalog's where it
    /// still reads and its HEAD was recovered; otherwise HEAD becomes the newest snapshot
    /// found and the redo stack is empty. Damaged frames are skipped and counted.
    pub fn repair(dir: &Path) -> Result<RepairReport, StoreError> {
        if !dir.join("packs").is_dir() {
            return Err(StoreError::NotFound(dir.to_path_buf()));
        }
        let _lock = StoreLock::acquire(&dir.join("lock"), lock_timeout()?)?;
        let mut report = RepairReport::default();
        let catalog_path = dir.join("catalog.redb");
        let OldCatalog {
            history: old_history,
            known: old_known,
        } = read_old_catalog(dir, &catalog_path);
        // A catalog that read whole is kept as old, not called damaged.
        let aside = match old_history.is_some() && old_known.is_some() {
            true => Aside::Replaced,
            false => Aside::Damaged,
        };
        // Built under another name and swapped in whole: a repair killed midway must leave
        // the old catalog in place, never an empty one that says there is no history (and
        // lets gc delete every pack as an orphan).
        let building = dir.join(REPAIRING);
        remove_if_present(&building)?;
        let catalog = Catalog::create(&building)?;
        let mut commit = Commit::default();
        let mut based = Vec::new();
        for path in pack_files(&dir.join("packs"))? {
            report.packs += 1;
            if crate::pack::heal_header(&path).unwrap_or(false) {
                report.headers_rewritten.push(path.clone());
            }
            match recover_pack(&path, &mut report) {
                Ok(mut recovered) => {
                    if let Some(known) = &old_known {
                        report.snapshots_left_dropped += known.forget_dropped(&mut recovered);
                    }
                    commit.snapshots.extend(recovered.snapshots);
                    let pack = commit.packs.len();
                    based.extend(
                        recovered
                            .based
                            .into_iter()
                            .map(|(f, base)| ((pack, f), base)),
                    );
                    commit.packs.push((recovered.pack, recovered.frames));
                }
                Err(_) => report.damaged_packs.push(path),
            }
        }
        let dropped = drop_baseless(&mut commit.packs, &based);
        report.objects -= dropped;
        report.damaged_objects += dropped;
        commit
            .snapshots
            .sort_by_key(|(id, r)| (r.seq, r.time_ns, *id));
        commit.snapshots.dedup_by_key(|(id, _)| *id);
        // The first snapshot of each number is keyed by it, and any other made as the same
        // number (two lines of history joined) only after every number is taken, so that
        // none is keyed past its number for another's sake (`Catalog::free_key`).
        let (mut firsts, mut others): (Vec<(ObjectId, SnapshotRecord)>, Vec<_>) =
            (Vec::new(), Vec::new());
        for snapshot in std::mem::take(&mut commit.snapshots) {
            match firsts.last() {
                Some((_, last)) if last.seq == snapshot.1.seq => others.push(snapshot),
                _ => firsts.push(snapshot),
            }
        }
        commit.snapshots = firsts;
        commit.snapshots.append(&mut others);
        report.snapshots = commit.snapshots.len();
        let history = history_after_repair(old_history, &commit.snapshots);
        report.history_kept = history.is_some();
        let history = history.unwrap_or_else(|| HistoryState {
            head: (commit.snapshots.iter())
                .max_by_key(|(_, r)| (r.seq, r.time_ns))
                .map(|(id, _)| *id),
            redo: Vec::new(),
        });
        report.head = (commit.snapshots.iter())
            .find(|(id, _)| Some(*id) == history.head)
            .map(|(id, r)| (*id, r.seq));
        report.redo = history.redo.len();
        commit.history = Some(history);
        catalog.commit(&commit)?;
        drop(catalog);
        report.old_catalog = swap_in(dir, &building, &catalog_path, aside)?;
        Ok(report)
    }
}

/// What the old catalog was, as the name it is kept under says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aside {
    /// It did not read whole: `catalog.redb.damaged-PID`.
    Damaged,
    /// It read, and was rebuilt anyway: `catalog.redb.old-PID`.
    Replaced,
}

impl Aside {
    fn prefix(self) -> &'static str {
        match self {
            Aside::Damaged => "catalog.redb.damaged-",
            Aside::Replaced => "catalog.redb.old-",
        }
    }
}

/// Links (or copies, synced) the catalog at `path` to a new `catalog.redb.damaged-PID[-N]`
/// (or `.old-` when it read), never over an older one (a pid comes round again). Anything
/// there but a file or a link (a directory) is moved aside whole: it is no catalog, and the
/// new one needs its name.
fn keep_aside(
    dir: &Path,
    path: &Path,
    file_or_link: bool,
    label: Aside,
) -> Result<PathBuf, StoreError> {
    let pid = std::process::id();
    let prefix = label.prefix();
    let mut n = 0u64;
    loop {
        let aside = match n {
            0 => dir.join(format!("{prefix}{pid}")),
            n => dir.join(format!("{prefix}{pid}-{n}")),
        };
        n += 1;
        if std::fs::symlink_metadata(&aside).is_ok() {
            continue;
        }
        if !file_or_link {
            std::fs::rename(path, &aside).map_err(|e| StoreError::io(path, e))?;
            return Ok(aside);
        }
        match std::fs::hard_link(path, &aside) {
            Ok(()) => return Ok(aside),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        let io = |e| StoreError::io(&aside, e);
        let mut copy = match std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&aside)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(e)),
        };
        let mut old = std::fs::File::open(path).map_err(|e| StoreError::io(path, e))?;
        std::io::copy(&mut old, &mut copy).map_err(io)?;
        copy.sync_all().map_err(io)?;
        return Ok(aside);
    }
}

/// The name a repair builds the new catalog under, in the store directory.
pub const REPAIRING: &str = "catalog.redb.repairing";

/// Puts the catalog built at `new` in place of the one at `path`, keeping the old one under
/// `catalog.redb.damaged-PID` or `.old-PID` (returned). `path` names a whole catalog at
/// every instant: the old one is linked to its new name before the rename replaces it.
fn swap_in(
    dir: &Path,
    new: &Path,
    path: &Path,
    label: Aside,
) -> Result<Option<PathBuf>, StoreError> {
    crate::failpoint!("repair-built");
    let kept = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(keep_aside(dir, path, !m.is_dir(), label)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(StoreError::io(path, e)),
    };
    crate::fs::io::sync_dir(dir)?;
    crate::failpoint!("repair-linked");
    std::fs::rename(new, path).map_err(|e| StoreError::io(path, e))?;
    crate::fs::io::sync_dir(dir)?;
    Ok(kept)
}

/// What repair takes from the old catalog, each part only when it reads.
#[derive(Default)]
struct OldCatalog {
    history: Option<HistoryState>,
    known: Option<KnownToOldCatalog>,
}

/// Reads the old catalog at `path`. One that a killed command left unclean does not open
/// read-only: redb must repair it first, which writes, so that is done on a copy in `tmp/`
/// (named `.tmp*`, which gc sweeps), and the old catalog is kept as it was. A catalog damaged
/// enough that redb panics on it counts as unreadable: repair is what it needs.
fn read_old_catalog(dir: &Path, path: &Path) -> OldCatalog {
    let read = |at: &Path, read_only: bool| {
        std::panic::catch_unwind(|| {
            Catalog::open(at, read_only).map(|catalog| OldCatalog {
                history: catalog.history().ok(),
                known: known_to(&catalog).ok(),
            })
        })
        .ok()
        .and_then(Result::ok)
    };
    if let Some(old) = read(path, true) {
        return old;
    }
    let copy = tempfile::Builder::new()
        .prefix(".tmp-catalog-")
        .tempfile_in(dir.join("tmp"))
        .ok()
        .filter(|copy| std::fs::copy(path, copy.path()).is_ok());
    copy.and_then(|copy| read(copy.path(), false))
        .unwrap_or_default()
}

/// What a readable old catalog knew: the packs it named or a gc of it dropped, and its
/// snapshots. A snapshot record in one of those packs was committed with it (or copied by a
/// merge from packs the catalog named), so the catalog knew that snapshot; if it no longer
/// lists it, prune or `delete --all` dropped it. A catalog put back from an older copy names
/// none of the newer history's packs, so that history is still taken back.
struct KnownToOldCatalog {
    packs: HashSet<ObjectId>,
    snapshots: HashSet<ObjectId>,
}

impl KnownToOldCatalog {
    /// Leaves out of `recovered` the snapshots the old catalog had dropped; returns how many.
    fn forget_dropped(&self, recovered: &mut RecoveredPack) -> usize {
        if !self.packs.contains(&recovered.pack) {
            return 0;
        }
        let before = recovered.snapshots.len();
        (recovered.snapshots).retain(|(id, _)| self.snapshots.contains(id));
        before - recovered.snapshots.len()
    }
}

/// The catalog's packs and snapshots; an error when any of them does not read (then every
/// snapshot found is taken back, as nothing can be ruled out).
fn known_to(catalog: &Catalog) -> Result<KnownToOldCatalog, StoreError> {
    let named = catalog.packs()?.into_iter().map(|(pack, _)| pack);
    Ok(KnownToOldCatalog {
        packs: named.chain(catalog.dropped_packs()?).collect(),
        snapshots: (catalog.snapshots()?.into_iter())
            .map(|(id, _)| id)
            .collect(),
    })
}

/// The old catalog's history, kept when its HEAD was recovered (a repair after objects
/// rotted, the catalog being sound, must not move HEAD to a snapshot a refused move left in
/// a pack), with the redo entries that were recovered too.
fn history_after_repair(
    old: Option<HistoryState>,
    recovered: &[(ObjectId, SnapshotRecord)],
) -> Option<HistoryState> {
    let found = |id: &ObjectId| recovered.iter().any(|(r, _)| r == id);
    let old = old?;
    let head = old.head.filter(|id| found(id))?;
    Some(HistoryState {
        head: Some(head),
        redo: old.redo.into_iter().filter(|id| found(id)).collect(),
    })
}

fn pack_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))? {
        let path = entry.map_err(|e| StoreError::io(dir, e))?.path();
        if path.extension().is_some_and(|e| e == "pack") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// What [`recover_pack`] finds in one pack.
struct RecoveredPack {
    pack: ObjectId,
    /// Its good frames, in pack order.
    frames: Vec<FrameInfo>,
    /// The snapshot records among them.
    snapshots: Vec<(ObjectId, SnapshotRecord)>,
    /// Each delta or slice frame (its index in `frames`) with the base or block it needs.
    based: Vec<(usize, ObjectId)>,
}

/// A frame of the repaired catalog: the pack's index in the commit, the frame's in the pack.
type FrameAt = (usize, usize);

/// Drops every delta and slice frame whose base or block no kept frame holds, until none is
/// left (a chain loses every link above a lost one); returns how many. A frame the catalog
/// names must be readable: a save takes what the catalog names for stored.
fn drop_baseless(packs: &mut [(ObjectId, Vec<FrameInfo>)], based: &[(FrameAt, ObjectId)]) -> usize {
    let mut held: HashMap<ObjectId, usize> = HashMap::new();
    for frame in packs.iter().flat_map(|(_, frames)| frames) {
        *held.entry(frame.id).or_default() += 1;
    }
    let mut dropped: HashSet<FrameAt> = HashSet::new();
    loop {
        let before = dropped.len();
        for &((pack, at), base) in based {
            if held.get(&base).is_some_and(|n| *n > 0) || dropped.contains(&(pack, at)) {
                continue;
            }
            dropped.insert((pack, at));
            let id = packs.get(pack).and_then(|(_, frames)| frames.get(at));
            if let Some(n) = id.and_then(|frame| held.get_mut(&frame.id)) {
                *n -= 1;
            }
        }
        if dropped.len() == before {
            break;
        }
    }
    for (pack, (_, frames)) in packs.iter_mut().enumerate() {
        let mut at = 0;
        frames.retain(|_| {
            at += 1;
            !dropped.contains(&(pack, at - 1))
        });
    }
    dropped.len()
}

/// The good frames of one pack, and the snapshot records among them. The pack keeps its name
/// (catalog locations name packs by file name) even when its body hash no longer matches.
fn recover_pack(path: &Path, report: &mut RepairReport) -> Result<RecoveredPack, StoreError> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(ObjectId::from_hex);
    let pack = name.ok_or_else(|| StoreError::CorruptPack {
        path: path.to_path_buf(),
        why: "name is not a pack id".into(),
    })?;
    let reader = PackReader::open(path)?;
    let end = reader
        .read_trailer()
        .map(|(_, _, end)| end)
        .unwrap_or(reader.file_len());
    let mut frames = Vec::new();
    let mut snapshots = Vec::new();
    let mut based = Vec::new();
    let mut offset = HEADER_LEN;
    while offset < end {
        let Ok(header) = reader.read_at(offset, crate::pack::FRAME_HEADER_LEN) else {
            break;
        };
        let Ok(info) = crate::pack::decode_frame_header(offset, &header) else {
            break;
        };
        offset += crate::pack::FRAME_HEADER_LEN + u64::from(info.stored_len);
        // A delta's base or a slice's block may lie in a pack not scanned yet: its frame is
        // taken on the strength of its header, and its content is checked when it is read.
        let mut base_unknown = |_: &DeltaHeader| Err("base not at hand".to_string());
        let mut base = None;
        let raw = reader
            .read_at(
                info.offset + crate::pack::FRAME_HEADER_LEN,
                u64::from(info.stored_len),
            )
            .ok()
            .and_then(|p| match info.compression {
                Compression::Delta => DeltaHeader::parse(&p).ok().map(|h| {
                    base = Some(h.base);
                    Vec::new()
                }),
                Compression::Slice => SliceRef::parse(&p).ok().map(|r| {
                    base = Some(r.block);
                    Vec::new()
                }),
                _ => decode_payload(&info, p, &mut base_unknown).ok(),
            });
        let Some(raw) = raw else {
            report.damaged_objects += 1;
            continue;
        };
        if let Some(base) = base {
            based.push((frames.len(), base));
        }
        if info.kind == ObjectKind::Snapshot {
            match SnapshotRecord::decode(info.id, &raw) {
                Ok(record) => snapshots.push((info.id, record)),
                Err(_) => report.damaged_objects += 1,
            }
        }
        report.objects += 1;
        frames.push(info);
    }
    Ok(RecoveredPack {
        pack,
        frames,
        snapshots,
        based,
    })
}
