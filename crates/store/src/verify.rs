//! Integrity: `verify` checks the catalog against the packs (and, with `read_data`, every
//! object's bytes against its id) and names what is damaged down to snapshot and path.
//! Rebuilding a lost or corrupt catalog is [`crate::repair`]'s.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::catalog::Locations;
use crate::lifecycle::Orphan;
use crate::pack::{PackReader, pack_file_name};
use crate::{ChunkList, EntryKind, ObjectId, ObjectKind, SnapshotRecord, Store, StoreError, Tree};

/// Paths listed per damaged object, at most.
const MAX_PATHS: usize = 20;

/// One damaged thing, and what it takes with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong, for people.
    pub what: String,
    /// The pack involved, when known.
    pub pack: Option<ObjectId>,
    /// The damaged or missing object, when the damage is tied to one.
    pub object: Option<ObjectId>,
    /// Sequence numbers of the snapshots that reference it.
    pub snapshots: BTreeSet<u64>,
    /// Paths (in those snapshots) that reference it; at most 20.
    pub paths: BTreeSet<Vec<u8>>,
}

/// The outcome of `verify`.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Packs checked.
    pub packs: usize,
    /// Objects the catalog locates.
    pub objects: usize,
    /// Snapshot records walked.
    pub snapshots: usize,
    /// Bytes of pack files read, plus object payloads with `read_data`.
    pub bytes_read: u64,
    /// Everything found damaged; empty when the store is intact.
    pub problems: Vec<Problem>,
}

/// Damage found so far, keyed by object (None: not tied to one object).
#[derive(Default)]
struct Damage {
    by_object: BTreeMap<ObjectId, Problem>,
    other: Vec<Problem>,
}

impl Damage {
    fn object(&mut self, id: ObjectId, pack: Option<ObjectId>, what: String) {
        self.by_object.entry(id).or_insert(Problem {
            what,
            pack,
            object: Some(id),
            ..Problem::default()
        });
    }
}

impl Store {
    /// Checks every pack's trailer and body hash, that every catalogued object's pack exists,
    /// that every snapshot's objects are present, that every cache row's check holds and
    /// every object a cache vouches for is catalogued, and with `read_data` that every object
    /// decompresses to bytes matching its id.
    pub fn verify(&self, read_data: bool) -> Result<VerifyReport, StoreError> {
        self.verify_with_progress(read_data, &|_, _| {})
    }

    /// As [`Store::verify`], calling `progress(done, total)` per pack and per object read.
    pub fn verify_with_progress(
        &self,
        read_data: bool,
        progress: &dyn Fn(u64, u64),
    ) -> Result<VerifyReport, StoreError> {
        let locations = self.catalog.locations()?;
        let mut report = VerifyReport {
            objects: locations.len(),
            ..VerifyReport::default()
        };
        let mut damage = Damage::default();
        let mut bad_packs = BTreeSet::new();
        let packs = self.catalog.packs()?;
        damage.other.extend(self.unreadable_orphans()?);
        let total = packs.len() as u64 + if read_data { locations.len() as u64 } else { 0 };
        let mut done = 0;
        for (pack, count) in packs {
            done += 1;
            progress(done, total);
            report.packs += 1;
            match self.check_pack(&pack, count) {
                Ok(bytes) => report.bytes_read += bytes,
                Err(e) => {
                    bad_packs.insert(pack);
                    damage.other.push(Problem {
                        what: e.to_string(),
                        pack: Some(pack),
                        ..Problem::default()
                    });
                }
            }
        }
        for loc in locations.iter() {
            if bad_packs.contains(&loc.pack) {
                damage.object(
                    loc.frame.id,
                    Some(loc.pack),
                    format!(
                        "object {} is in damaged pack {}",
                        loc.frame.id.short(),
                        loc.pack.short()
                    ),
                );
            } else if read_data {
                done += 1;
                progress(done, total);
                report.bytes_read += u64::from(loc.frame.stored_len);
                if let Err(e) = self.read(&loc.frame.id) {
                    damage.object(loc.frame.id, Some(loc.pack), e.to_string());
                }
            }
        }
        let faults = self.catalog.audit_caches(|id| locations.contains_key(id))?;
        damage.other.extend(faults.into_iter().map(|what| Problem {
            what,
            ..Problem::default()
        }));
        let snapshots = self.snapshots()?;
        report.snapshots = snapshots.len();
        self.check_history(&snapshots, &mut damage)?;
        let mut walker = Walker {
            store: self,
            locations: &locations,
            damage: &mut damage,
            healthy: HashMap::new(),
        };
        for (id, record) in &snapshots {
            walker.snapshot(*id, record);
        }
        report.problems = damage.other;
        report.problems.extend(damage.by_object.into_values());
        Ok(report)
    }

    /// The pack file exists, its trailer parses, indexes as many frames as the catalog says,
    /// agrees with a forward scan, and the body hashes to the pack's name. Returns bytes read.
    fn check_pack(&self, pack: &ObjectId, count: u64) -> Result<u64, StoreError> {
        let path = self.dir().join("packs").join(pack_file_name(pack));
        let reader = PackReader::open(&path)?;
        let (index, body_hash, index_offset) = reader.read_trailer()?;
        let corrupt = |why: String| StoreError::CorruptPack {
            path: path.clone(),
            why,
        };
        if index.len() as u64 != count {
            return Err(corrupt(format!(
                "trailer indexes {} objects, the catalog {count}",
                index.len()
            )));
        }
        let scanned = reader.scan_frames(index_offset)?;
        if scanned
            .iter()
            .map(|f| (f.id, f.offset))
            .ne(index.iter().copied())
        {
            return Err(corrupt("trailer index disagrees with the frames".into()));
        }
        if body_hash != *pack || reader.hash_body(index_offset)? != *pack {
            return Err(corrupt("body does not hash to the pack's name".into()));
        }
        Ok(reader.file_len())
    }

    /// A problem for each pack file the catalog does not name that does not read: a repair
    /// skipped it, and it may hold the only copy of history (gc keeps it; FORMAT.md 7.4). A
    /// readable one is a crashed save's leftover, which gc deletes unless another orphan may
    /// hold history, and no problem.
    fn unreadable_orphans(&self) -> Result<Vec<Problem>, StoreError> {
        // A pack a commit dropped is no orphan to report: gc deletes it (FORMAT.md 7.4).
        let (_, orphans) = self.orphans_by_drop()?;
        let problem = |orphan: Orphan| {
            let e = orphan.trailer.err()?;
            let what = format!(
                "{} is not in the catalog and does not read ({e}); it is kept, as it may hold \
                 history",
                orphan.path.display()
            );
            Some(Problem {
                what,
                ..Problem::default()
            })
        };
        let mut problems: Vec<Problem> = orphans.into_iter().filter_map(problem).collect();
        problems.sort_by(|a, b| a.what.cmp(&b.what));
        Ok(problems)
    }

    fn check_history(
        &self,
        snapshots: &[(ObjectId, SnapshotRecord)],
        damage: &mut Damage,
    ) -> Result<(), StoreError> {
        let known: BTreeSet<ObjectId> = snapshots.iter().map(|(id, _)| *id).collect();
        let history = self.history()?;
        for id in history.head.iter().chain(&history.redo) {
            if !known.contains(id) {
                damage.other.push(Problem {
                    what: format!(
                        "HEAD or redo names snapshot {} which is not in the catalog",
                        id.short()
                    ),
                    object: Some(*id),
                    ..Problem::default()
                });
            }
        }
        Ok(())
    }
}

/// Walks snapshot trees, skipping subtrees already known healthy, attributing damage to
/// snapshots and paths.
struct Walker<'a> {
    store: &'a Store,
    locations: &'a Locations,
    damage: &'a mut Damage,
    healthy: HashMap<ObjectId, bool>,
}

impl Walker<'_> {
    fn snapshot(&mut self, id: ObjectId, record: &SnapshotRecord) {
        if !self.locations.contains_key(&id) {
            self.damage.object(
                id,
                None,
                format!("snapshot object #{} is missing from the packs", record.seq),
            );
            self.attribute(&id, record.seq, b"");
        }
        self.tree(&record.root, record.seq, Vec::new());
    }

    /// Returns whether the tree and everything under it is intact.
    fn tree(&mut self, id: &ObjectId, seq: u64, path: Vec<u8>) -> bool {
        if let Some(&ok) = self.healthy.get(id).filter(|ok| **ok) {
            return ok;
        }
        let tree = match self
            .present(id)
            .and_then(|()| self.store.read_tree(id).map_err(|e| e.to_string()))
        {
            Ok(t) => t,
            Err(why) => {
                self.damage
                    .object(*id, self.locations.get(id).map(|l| l.pack), why);
                self.attribute(id, seq, &path);
                return false;
            }
        };
        let known_bad = self.damage.by_object.contains_key(id);
        if known_bad {
            self.attribute(id, seq, &path);
        }
        let ok = self.entries(&tree, seq, &path) && !known_bad;
        self.healthy.insert(*id, ok);
        ok
    }

    fn entries(&mut self, tree: &Tree, seq: u64, prefix: &[u8]) -> bool {
        let mut ok = true;
        for entry in &tree.entries {
            let path = if prefix.is_empty() {
                entry.name.clone()
            } else {
                [prefix, b"/", &entry.name].concat()
            };
            ok &= match entry.kind {
                EntryKind::Dir => self.tree(&entry.id, seq, path),
                _ => self.file(&entry.id, seq, &path),
            };
        }
        ok
    }

    fn file(&mut self, id: &ObjectId, seq: u64, path: &[u8]) -> bool {
        let mut ids = vec![*id];
        if self
            .locations
            .get(id)
            .is_some_and(|l| l.frame.kind == ObjectKind::ChunkList)
        {
            match self
                .store
                .read_kind(id, ObjectKind::ChunkList)
                .and_then(|b| ChunkList::decode(*id, &b))
            {
                Ok(list) => ids.extend(list.chunks.iter().map(|c| c.id)),
                Err(e) => {
                    self.damage
                        .object(*id, self.locations.get(id).map(|l| l.pack), e.to_string())
                }
            }
        }
        let mut ok = true;
        for id in ids {
            if let Err(why) = self.present(&id) {
                self.damage.object(id, None, why);
            }
            if self.damage.by_object.contains_key(&id) {
                self.attribute(&id, seq, path);
                ok = false;
            }
        }
        ok
    }

    fn present(&self, id: &ObjectId) -> Result<(), String> {
        match self.locations.get(id) {
            Some(_) => Ok(()),
            None => Err(format!("object {} is missing from the catalog", id.short())),
        }
    }

    fn attribute(&mut self, id: &ObjectId, seq: u64, path: &[u8]) {
        if let Some(p) = self.damage.by_object.get_mut(id) {
            p.snapshots.insert(seq);
            if p.paths.len() < MAX_PATHS {
                p.paths.insert(path.to_vec());
            }
        }
    }
}
