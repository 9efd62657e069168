//! Store lifecycle: retention (prune), mark-and-sweep garbage collection with repacking,
//! store statistics, and deleting every snapshot. Which pack files the catalog does not
//! name, and whether they may hold history, is [`crate::lifecycle::orphans`]'s.
//!
//! Every command holds the store lock for its whole run, so gc never races a save: a pack
//! that a save sealed is named in the catalog before that save releases the lock, and a pack
//! a crashed save left unnamed is garbage. gc writes new packs, commits the catalog, and only
//! then deletes old pack files, so a crash at any point loses nothing committed.
//!
//! Retention lives in [`prune`], collection in [`gc`], the packs the catalog does not name in
//! [`orphans`], the size budget in [`budget`] and the merging of small packs in [`merge`].

mod budget;
mod gc;
mod intent;
mod merge;
mod orphans;
mod prune;
mod purge;

pub use budget::{BUDGET_KEEPS_UNDO, BUDGET_ROUNDS, BudgetReport};
pub use merge::{
    AUTO_MERGE_BYTES, AUTO_MERGE_PACKS, MERGE_MAX_OBJECTS, MERGE_MAX_PACK_OBJECTS, MergeReport,
};
pub(crate) use orphans::Orphan;
pub use purge::PurgeReport;

use crate::catalog::{Commit, HistoryState};
use crate::pack::pack_file_name;
use std::path::PathBuf;

use crate::{ObjectId, SnapshotRecord, Store, StoreError};

/// A pack whose live bytes fall below this share of its size is rewritten by gc.
pub const REPACK_LIVE_SHARE: f64 = 0.5;
/// Packs under this size are small: each save seals its own, so gc merges them...
pub const SMALL_PACK: u64 = 4 << 20;
/// ...once there are more than this many.
pub const MAX_SMALL_PACKS: usize = 16;

/// Which snapshots prune keeps (HEAD, the undo chain and the redo stack are always kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Keep the newest N snapshots.
    pub keep_last: u64,
    /// Keep every snapshot younger than this many nanoseconds.
    pub keep_within_ns: Option<i64>,
}

/// What prune removed (or would remove).
#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    /// Snapshots dropped from the catalog (or that would be, in a dry run), oldest first.
    pub removed: Vec<(ObjectId, SnapshotRecord)>,
    /// Snapshots left in the catalog.
    pub kept: usize,
}

/// What gc did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Size of the catalogued pack files before gc.
    pub bytes_before: u64,
    /// Size of the catalogued pack files after gc.
    pub bytes_after: u64,
    /// Packs with no live object, deleted whole.
    pub packs_deleted: usize,
    /// Sparse or small packs whose live objects were copied out before deletion.
    pub packs_repacked: usize,
    /// Dead objects dropped from the catalog.
    pub objects_removed: usize,
    /// Pack files the catalog does not name, deleted: left by a crash before a commit, or
    /// dropped by a commit of a gc or merge that stopped before deleting them.
    pub orphan_packs_deleted: usize,
    /// Pack files the catalog does not name that were kept, as they may hold history: those
    /// that do not read or are older than the catalog (unless a commit dropped them), and
    /// every one while the catalog names no pack, or a pack it names is missing, or one of
    /// them does not read or holds a snapshot the catalog lacks (see `delete_orphan_packs`).
    pub orphan_packs_kept: Vec<PathBuf>,
    /// Leftover files swept from `tmp/`.
    pub tmp_files_removed: usize,
    /// True when gc dropped nothing the catalog names, because packs it does not name may
    /// hold history it lacks: what the catalog calls dead may be that history's (see
    /// [`Store::history_may_be_outside`]). `snap repair` takes the history back.
    pub held_back: bool,
}

/// Sizes, for `snap log --stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Snapshot records in the catalog.
    pub snapshots: u64,
    /// Packs the catalog names.
    pub packs: usize,
    /// Total size of those pack files.
    pub pack_bytes: u64,
    /// Size of `catalog.redb`.
    pub catalog_bytes: u64,
    /// Bytes gc would give back now.
    pub reclaimable_bytes: u64,
}

impl Store {
    pub(crate) fn pack_path(&self, pack: &ObjectId) -> std::path::PathBuf {
        self.dir().join("packs").join(pack_file_name(pack))
    }

    /// Removes every snapshot and clears HEAD and the redo stack, then collects the garbage.
    pub fn delete_all(&self) -> Result<(usize, GcReport), StoreError> {
        let all = self.snapshots()?;
        let remove_snapshots = all.iter().map(|(id, _)| *id).collect();
        self.commit(&Commit {
            remove_snapshots,
            history: Some(HistoryState::default()),
            pulled: crate::PulledChange::Forget,
            ..Commit::default()
        })?;
        Ok((all.len(), self.gc()?))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::prune::kept_snapshots;
    use super::*;
    use crate::{ChangeStats, SnapshotKind};
    use crate::{EntryKind, ObjectKind};

    fn chain(n: u64) -> Vec<(ObjectId, SnapshotRecord)> {
        let mut out: Vec<(ObjectId, SnapshotRecord)> = Vec::new();
        for seq in 1..=n {
            let record = SnapshotRecord {
                seq,
                root: ObjectId([0; 32]),
                parent: out.last().map(|(id, _)| *id),
                time_ns: seq as i64 * 1_000,
                kind: SnapshotKind::Save,
                message: String::new(),
                step: None,
                session: None,
                meta: Vec::new(),
                stats: ChangeStats::default(),
            };
            out.push((record.id(), record));
        }
        out
    }

    fn seqs(all: &[(ObjectId, SnapshotRecord)], keep: &HashSet<ObjectId>) -> Vec<u64> {
        all.iter()
            .filter(|(id, _)| keep.contains(id))
            .map(|(_, r)| r.seq)
            .collect()
    }

    #[test]
    fn keeps_the_newest_and_the_undo_chain() {
        let all = chain(10);
        let history = HistoryState {
            head: Some(all[9].0),
            redo: Vec::new(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 3,
                keep_within_ns: None,
            },
            0,
        );
        assert_eq!(seqs(&all, &keep), vec![8, 9, 10]);
    }

    #[test]
    fn never_drops_head_or_the_redo_stack() {
        let all = chain(10);
        // After `undo 7`: HEAD is #3, the redo stack holds #10..#4.
        let history = HistoryState {
            head: Some(all[2].0),
            redo: all[3..].iter().rev().map(|(id, _)| *id).collect(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 1,
                keep_within_ns: None,
            },
            0,
        );
        assert_eq!(seqs(&all, &keep), vec![3, 4, 5, 6, 7, 8, 9, 10]);
    }

    /// `keep_last` counts HEAD's line: abandoned snapshots newer than the line's oldest kept
    /// one stay beside it and take none of its places.
    #[test]
    fn keep_last_counts_heads_line_not_abandoned_snapshots() {
        let mut all = chain(6);
        // #4..#6 were undone and abandoned by #7 and #8, saved on #3.
        for seq in 7..=8u64 {
            let parent = match seq {
                7 => all[2].0,
                _ => all.last().map(|(id, _)| *id).unwrap(),
            };
            let mut record = all[0].1.clone();
            (record.seq, record.parent, record.time_ns) = (seq, Some(parent), seq as i64 * 1_000);
            all.push((record.id(), record));
        }
        let history = HistoryState {
            head: Some(all[7].0),
            redo: Vec::new(),
        };
        let policy = |keep_last| Retention {
            keep_last,
            keep_within_ns: None,
        };
        let keep = kept_snapshots(&all, &history, &policy(5), 0);
        assert_eq!(seqs(&all, &keep), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        // Two on HEAD's line: #7 and #8, and nothing older than #7 on any line.
        let keep = kept_snapshots(&all, &history, &policy(2), 0);
        assert_eq!(seqs(&all, &keep), vec![7, 8]);
        // Three: the line reaches #3, so the abandoned #4..#6 after it stay.
        let keep = kept_snapshots(&all, &history, &policy(3), 0);
        assert_eq!(seqs(&all, &keep), vec![3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn prune_is_due_only_when_a_snapshot_could_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let all = chain(10);
        store
            .commit(&Commit {
                snapshots: all.clone(),
                history: Some(HistoryState {
                    head: Some(all[9].0),
                    redo: Vec::new(),
                }),
                ..Commit::default()
            })
            .unwrap();
        let policy = |keep_last, keep_within_ns| Retention {
            keep_last,
            keep_within_ns,
        };
        // #1 is at 1 us: inside a 10 us window at 10.5 us, outside a 2.5 us window at 10 us.
        let cases = [
            (policy(3, Some(10_000)), 10_500, false),
            (policy(3, Some(2_500)), 10_000, true),
            (policy(10, None), 10_000, false),
            (policy(9, None), 10_000, true),
        ];
        for (policy, now, due) in cases {
            assert_eq!(store.prune_due(&policy, now).unwrap(), due, "{policy:?}");
            let removed = store.prune(&policy, now, true).unwrap().removed;
            assert_eq!(!removed.is_empty(), due, "{policy:?}");
        }
    }

    /// A pack holding one chunk, committed: the catalog then names a pack.
    fn commit_chunk(store: &Store, content: &[u8]) {
        let writer = store.writer();
        writer.put(ObjectKind::Chunk, content).unwrap();
        crate::store::tests::commit_writer(store, writer);
    }

    /// Packs written and never committed.
    fn orphan_pack(store: &Store, content: &[u8]) -> PathBuf {
        orphan_pack_of(store, ObjectKind::Chunk, content)
    }

    /// gc deletes a crashed save's pack, but keeps a pack that does not read (it may be the
    /// only copy of history a repair skipped) and, beside it, every other orphan (they may
    /// hold that history's trees and chunks), every orphan when the catalog names no pack as
    /// it begins (a lost catalog looks like that), and a pack older than the catalog.
    #[test]
    fn gc_keeps_the_orphans_that_may_be_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let first = orphan_pack(&store, b"a save that crashed before its commit");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_kept, vec![first.clone()]);
        assert!(first.exists(), "the catalog names no pack: kept");
        // (Each gc drops the committed pack, which no snapshot needs.)
        commit_chunk(&store, b"committed");
        let rotten = store
            .dir()
            .join("packs")
            .join(format!("{}.pack", "0".repeat(64)));
        std::fs::write(&rotten, b"SNAPPACK and then nothing a pack has").unwrap();
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 0);
        let mut both = vec![first.clone(), rotten.clone()];
        both.sort();
        assert_eq!(report.orphan_packs_kept, both);
        let problems = store.verify(false).unwrap().problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .what
                .contains("is not in the catalog and does not read")
        );
        std::fs::remove_file(&rotten).unwrap();
        commit_chunk(&store, b"committed again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1);
        assert!(
            !first.exists(),
            "a readable orphan is a crashed save's: deleted"
        );
        assert!(report.orphan_packs_kept.is_empty());
        // A readable orphan written before the catalog was made held a lost catalog's history.
        let old = orphan_pack(&store, b"history from before this catalog");
        let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(then)
            .unwrap();
        commit_chunk(&store, b"committed a third time");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_kept, vec![old.clone()]);
        assert!(old.exists());
    }

    /// A gc killed after its commit and before it deleted the packs it dropped leaves the
    /// snapshots prune dropped in unnamed packs. The commit recorded those packs, so the
    /// next gc deletes them rather than keep them (and every other orphan) as history.
    #[test]
    fn gc_deletes_the_packs_a_commit_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"kept");
        let pruned = orphan_pack_of(&store, ObjectKind::Snapshot, b"a snapshot prune dropped");
        let id = ObjectId::of(ObjectKind::Snapshot, b"a snapshot prune dropped");
        let name = pruned.file_name().unwrap().to_string_lossy().into_owned();
        let pack = ObjectId::from_hex(name.trim_end_matches(".pack")).unwrap();
        store
            .commit(&Commit {
                remove_packs: vec![pack],
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(store.catalog.dropped_packs().unwrap(), vec![pack]);
        assert!(store.catalog.snapshot(&id).unwrap().is_none());
        // Beside an orphan that may be history, it is kept too: that history may be a line
        // a repair took back and saved on from, reusing what the dropped pack holds.
        let newer = orphan_pack_of(
            &store,
            ObjectKind::Snapshot,
            b"a snapshot the catalog lacks",
        );
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 0, "{report:?}");
        assert_eq!(report.orphan_packs_kept.len(), 2);
        // (That gc dropped the committed pack, which no snapshot needs; a catalog naming no
        // pack would keep every orphan.)
        std::fs::remove_file(&newer).unwrap();
        commit_chunk(&store, b"kept again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1, "{report:?}");
        assert!(report.orphan_packs_kept.is_empty());
        assert!(!pruned.exists());
    }

    /// A catalog put back from an older copy may name packs a later merge replaced by one it
    /// does not name: the frames it locates in the missing packs are in that one. gc keeps
    /// every unnamed pack while a named one is missing.
    #[test]
    fn gc_keeps_the_orphans_while_a_named_pack_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"kept");
        let merged = orphan_pack(&store, b"the merged copy of a pack the catalog names");
        let writer = store.writer();
        writer
            .put(ObjectKind::Chunk, b"named, then merged away")
            .unwrap();
        let packs = writer.finish().unwrap();
        let named = store.pack_path(&packs[0].0);
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
        std::fs::remove_file(named).unwrap();
        let report = store.delete_orphan_packs(false).unwrap();
        assert_eq!(report, (0, vec![merged.clone()]));
        assert!(merged.exists());
    }

    /// A pack id is a hash of the pack's bytes: a pack a commit dropped and a later commit
    /// names again (written again byte for byte) holds history, and leaves the list.
    #[test]
    fn a_pack_named_again_is_no_longer_listed_as_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let writer = store.writer();
        writer.put(ObjectKind::Chunk, b"one pack").unwrap();
        let packs = writer.finish().unwrap();
        let pack = packs[0].0;
        let commit = |packs, remove_packs| Commit {
            packs,
            remove_packs,
            ..Commit::default()
        };
        store.commit(&commit(packs.clone(), Vec::new())).unwrap();
        store.commit(&commit(Vec::new(), vec![pack])).unwrap();
        assert_eq!(store.catalog.dropped_packs().unwrap(), vec![pack]);
        store.commit(&commit(packs, Vec::new())).unwrap();
        assert!(store.catalog.dropped_packs().unwrap().is_empty());
    }

    /// A catalog rolled back to an older copy does not name the packs of the history after
    /// it. gc keeps every orphan once one holds a snapshot the catalog lacks: the
    /// others may be that snapshot's trees and chunks, sealed before its last pack.
    #[test]
    fn gc_keeps_orphans_beside_a_snapshot_the_catalog_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"committed");
        let chunks = orphan_pack_of(&store, ObjectKind::Chunk, b"a newer snapshot's chunk");
        let snapshot = orphan_pack_of(&store, ObjectKind::Snapshot, b"a newer snapshot");
        let report = store.gc().unwrap();
        let mut both = vec![chunks.clone(), snapshot.clone()];
        both.sort();
        assert_eq!(report.orphan_packs_kept, both);
        assert_eq!(report.orphan_packs_deleted, 0);
        assert!(chunks.exists() && snapshot.exists());
        // Once the snapshot is gone, the chunk's pack is a crashed save's leftover again. (That
        // gc dropped the committed pack, which no snapshot needs; a catalog naming no pack
        // would keep every orphan.)
        std::fs::remove_file(&snapshot).unwrap();
        commit_chunk(&store, b"committed again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1);
        assert!(report.orphan_packs_kept.is_empty());
        assert!(!chunks.exists());
    }

    /// A dead delta frame in a pack gc keeps whole still names its base (a dead slice its
    /// block, the same way): gc keeps that base, copying it out of a pack it rewrites, so
    /// that nothing catalogued is left unreadable.
    #[test]
    fn gc_keeps_the_base_of_a_dead_frame_in_a_pack_it_keeps() {
        use crate::store::tests::tree;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let writer = store.writer();
        let base = writer.put(ObjectKind::Tree, &tree(100, 7, 1)).unwrap();
        crate::store::tests::commit_writer(&store, writer);
        // One pack: a dead delta against `base`, and a live snapshot large enough that the
        // pack is neither small nor sparse.
        let writer = store.writer();
        let delta = (writer.put_against(ObjectKind::Tree, &tree(100, 7, 2), Some(base))).unwrap();
        let mut big = vec![0u8; (SMALL_PACK + (1 << 20)) as usize];
        blake3::Hasher::new().finalize_xof().fill(&mut big);
        let chunk = writer.put(ObjectKind::Chunk, &big).unwrap();
        let root = crate::Tree {
            entries: vec![crate::TreeEntry {
                name: b"big".to_vec(),
                kind: EntryKind::File,
                size: big.len() as u64,
                id: chunk,
                mode: Some(0o644),
            }],
        };
        let root = writer.put(ObjectKind::Tree, &root.encode()).unwrap();
        let record = SnapshotRecord {
            root,
            ..chain(1)[0].1.clone()
        };
        let id = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        let packs = writer.finish().unwrap();
        assert_eq!(packs.len(), 1);
        store
            .commit(&Commit {
                packs,
                snapshots: vec![(id, record)],
                ..Commit::default()
            })
            .unwrap();
        let located = store.catalog.locate(&delta).unwrap().unwrap();
        assert!(located.frame.compression.has_base());
        // The base's pack holds nothing else: kept whole, not copied at every gc.
        for _ in 0..2 {
            let report = store.gc().unwrap();
            assert_eq!((report.packs_deleted, report.packs_repacked), (0, 0));
            let problems = store.verify(true).unwrap().problems;
            assert!(problems.is_empty(), "{problems:?}");
        }
        assert_eq!(store.read(&delta).unwrap().1, tree(100, 7, 2));
    }

    /// A snapshot prune dropped stays in its pack while the pack holds live frames. A repair
    /// of a catalog that still reads leaves it out: that catalog named the pack and no longer
    /// lists the snapshot. Without a catalog, or for a pack the old catalog does not name (a
    /// catalog put back from an older copy), every snapshot found is taken back.
    #[test]
    fn repair_leaves_out_the_snapshots_the_old_catalog_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let store = Store::init(&path).unwrap();
        let snapshots = chain(3);
        let writer = store.writer();
        for (_, record) in &snapshots[..2] {
            writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        }
        let packs = writer.finish().unwrap();
        let commit = |packs, snapshots: &[(ObjectId, SnapshotRecord)], remove| Commit {
            packs,
            snapshots: snapshots.to_vec(),
            remove_snapshots: remove,
            ..Commit::default()
        };
        store
            .commit(&commit(packs, &snapshots[..2], vec![]))
            .unwrap();
        store
            .commit(&commit(vec![], &[], vec![snapshots[0].0]))
            .unwrap();
        // An older copy taken while a command ran (not shut down cleanly), and one taken
        // while none did.
        let catalog = path.join("catalog.redb");
        let unclean = path.join("unclean.redb");
        std::fs::copy(&catalog, &unclean).unwrap();
        drop(store);
        let older = path.join("older.redb");
        std::fs::copy(&catalog, &older).unwrap();
        let store = Store::open(&path).unwrap();
        let writer = store.writer();
        (writer.put(ObjectKind::Snapshot, &snapshots[2].1.encode())).unwrap();
        let packs = writer.finish().unwrap();
        store
            .commit(&commit(packs, &snapshots[2..], vec![]))
            .unwrap();
        drop(store);
        let report = Store::repair(&path).unwrap();
        assert_eq!((report.snapshots, report.snapshots_left_dropped), (2, 1));
        // Put back from the older copy: the third snapshot's pack is unnamed, and taken back.
        for copy in [older, unclean] {
            std::fs::rename(&copy, &catalog).unwrap();
            let report = Store::repair(&path).unwrap();
            assert_eq!((report.snapshots, report.snapshots_left_dropped), (2, 1));
        }
        let leftovers = std::fs::read_dir(path.join("tmp")).unwrap().count();
        assert_eq!(
            leftovers, 0,
            "the unclean catalog was read through a copy, then removed"
        );
        std::fs::remove_file(&catalog).unwrap();
        let report = Store::repair(&path).unwrap();
        assert_eq!((report.snapshots, report.snapshots_left_dropped), (3, 0));
    }

    /// A pack written and never committed, its mtime a second ahead: the filesystem's clock
    /// ticks coarser than the catalog's `created`, and a pack written in the tick the
    /// catalog was made in would be taken for older than it.
    fn orphan_pack_of(store: &Store, kind: ObjectKind, content: &[u8]) -> PathBuf {
        let writer = store.writer();
        writer.put(kind, content).unwrap();
        let packs = writer.finish().unwrap();
        let path = store.pack_path(&packs[0].0);
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(later).unwrap();
        path
    }

    #[test]
    fn keep_within_counts_from_now() {
        let all = chain(10);
        let history = HistoryState {
            head: Some(all[9].0),
            redo: Vec::new(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 0,
                keep_within_ns: Some(2_500),
            },
            10_000,
        );
        assert_eq!(seqs(&all, &keep), vec![8, 9, 10]);
    }
}
