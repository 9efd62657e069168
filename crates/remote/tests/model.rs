//! A property test of a remote's life: random rounds of edits, saves, pushes, snapshots
//! dropped (as a prune would) with a local gc, and remote collections with no grace, in any
//! order. After each push and each collection, a clone of the remote holds exactly the
//! store's history byte for byte, and `verify --remote --read-data` finds nothing.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::{ProptestConfig, Strategy, prop, prop_oneof, proptest};
use snap_remote::backend::memory::MemoryRemote;
use snap_remote::fetch::fetch_workspace;
use snap_remote::push::{plan_push, upload};
use snap_remote::state::RemoteState;
use snap_remote::{Remote, check, gc};
use snap_store::{
    ChangeStats, Commit, EntryKind, HistoryState, ObjectId, ObjectKind, SnapshotKind,
    SnapshotRecord, Store, Tree, TreeEntry,
};

const WORKSPACE: &str = "0123456789abcdef0123456789abcdef";

#[derive(Clone, Debug)]
enum Step {
    /// Writes file `n % 8` with content from `seed` (small, or large with `big`).
    Write {
        n: u8,
        seed: u16,
        big: bool,
    },
    Remove(u8),
    Save,
    Push,
    /// Drops the oldest snapshots but the newest `keep`, then a local gc.
    Drop {
        keep: u8,
    },
    Collect,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => (0u8..8, 0u16..400, prop::bool::weighted(0.2))
            .prop_map(|(n, seed, big)| Step::Write { n, seed, big }),
        1 => (0u8..8).prop_map(Step::Remove),
        3 => prop::strategy::Just(Step::Save),
        2 => prop::strategy::Just(Step::Push),
        1 => (1u8..4).prop_map(|keep| Step::Drop { keep }),
        1 => prop::strategy::Just(Step::Collect),
    ];
    prop::collection::vec(step, 1..40)
}

fn bytes(seed: u16, big: bool) -> Vec<u8> {
    let len = if big { 40_000 } else { 300 };
    let mut x = u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'a' + (x % 7) as u8
        })
        .collect()
}

struct Model {
    store: Store,
    files: BTreeMap<String, Vec<u8>>,
    seq: u64,
}

impl Model {
    /// A snapshot of `files` (in `d/`), its tree stored against HEAD's (a delta).
    fn save(&mut self) {
        let writer = self.store.writer();
        let mut entries = Vec::new();
        for (name, content) in &self.files {
            let id = writer.put(ObjectKind::Chunk, content).unwrap();
            entries.push(TreeEntry {
                name: name.as_bytes().to_vec(),
                kind: EntryKind::File,
                size: content.len() as u64,
                id,
                mode: Some(0o644),
            });
        }
        let head = self.store.history().unwrap().head;
        let base = head.map(|h| self.store.snapshot(&h).unwrap().root);
        let tree = Tree { entries }.encode();
        let dir = writer.put_against(ObjectKind::Tree, &tree, None).unwrap();
        let root = Tree {
            entries: vec![TreeEntry {
                name: b"d".to_vec(),
                kind: EntryKind::Dir,
                size: 0,
                id: dir,
                mode: Some(0o755),
            }],
        };
        let root = writer
            .put_against(ObjectKind::Tree, &root.encode(), base)
            .unwrap();
        self.seq += 1;
        let record = SnapshotRecord {
            seq: self.seq,
            root,
            parent: head,
            time_ns: self.seq as i64,
            kind: SnapshotKind::Save,
            message: String::new(),
            step: None,
            session: None,
            meta: Vec::new(),
            stats: ChangeStats::default(),
        };
        let id = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        let commit = Commit {
            packs: writer.finish().unwrap(),
            snapshots: vec![(id, record)],
            history: Some(HistoryState {
                head: Some(id),
                redo: Vec::new(),
            }),
            ..Commit::default()
        };
        self.store.commit(&commit).unwrap();
    }

    fn push(&self, remote: &dyn Remote) {
        let state = RemoteState::read(remote).unwrap();
        let newest = state.read_ref(remote, WORKSPACE).unwrap();
        let plan = plan_push(&self.store, &state, WORKSPACE, newest.as_ref()).unwrap();
        let staging = self.store.dir().join("tmp/push");
        upload(remote, plan, &state, &staging, &|_| {}).unwrap();
    }

    fn drop_oldest(&self, keep: usize) {
        let all = self.store.snapshots().unwrap();
        let n = all.len().saturating_sub(keep);
        let remove_snapshots = all.iter().take(n).map(|(id, _)| *id).collect();
        let commit = Commit {
            remove_snapshots,
            ..Commit::default()
        };
        self.store.commit(&commit).unwrap();
        self.store.gc().unwrap();
    }

    fn collect(&self, remote: &dyn Remote) {
        let state = RemoteState::read(remote).unwrap();
        let Some(doc) = state.read_ref(remote, WORKSPACE).unwrap() else {
            return;
        };
        let ids = doc.snapshot_ids();
        // A collection judges from a store holding every tree its refs name: skip otherwise
        // (the CLI refuses then).
        let Ok(roots) = ids
            .iter()
            .map(|id| self.store.snapshot(id).map(|r| r.root))
            .collect::<Result<Vec<_>, _>>()
        else {
            return;
        };
        let live = gc::Live {
            objects: self.store.closure(&roots).unwrap(),
            records: ids.into_iter().collect(),
        };
        gc::collect(remote, &state, &live, std::time::Duration::ZERO, 7).unwrap();
    }
}

/// Every snapshot of the newest ref, its record and files, read back from `store`.
fn history(store: &Store, ids: &[ObjectId]) -> Vec<(ObjectId, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    for id in ids {
        let record = store.snapshot(id).unwrap();
        let root = store.read_tree(&record.root).unwrap();
        let mut files = Vec::new();
        for dir in root.entries {
            for e in store.read_tree(&dir.id).unwrap().entries {
                files.push(store.read_file(&e.id).unwrap());
            }
        }
        out.push((*id, files));
    }
    out
}

fn check_clone(model: &Model, remote: &dyn Remote, dir: &Path) {
    let state = RemoteState::read(remote).unwrap();
    let Some(doc) = state.read_ref(remote, WORKSPACE).unwrap() else {
        return;
    };
    let _ = std::fs::remove_dir_all(dir);
    let clone = Store::init(dir).unwrap();
    let staging = dir.join("tmp/clone");
    fetch_workspace(remote, &state, WORKSPACE, &clone, &staging, &|_| {}).unwrap();
    let ids = doc.snapshot_ids();
    let ours: Vec<ObjectId> = model
        .store
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| s.0)
        .collect();
    // The newest ref names what the store held at its last push; those still held match.
    let held: Vec<ObjectId> = ids.iter().copied().filter(|id| ours.contains(id)).collect();
    assert_eq!(history(&clone, &held), history(&model.store, &held));
    assert_eq!(history(&clone, &ids).len(), ids.len());
    assert!(clone.verify(true).unwrap().problems.is_empty());
    let found = check::verify(remote, true).unwrap();
    assert!(found.problems.is_empty(), "{:?}", found.problems);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_remote_always_clones_back_what_was_pushed(steps in steps()) {
        let tmp = tempfile::tempdir().unwrap();
        let remote = MemoryRemote::named(&format!("model-{}", tmp.path().display()));
        let mut model = Model {
            store: Store::init(&tmp.path().join("a")).unwrap(),
            files: BTreeMap::new(),
            seq: 0,
        };
        for step in steps {
            match step {
                Step::Write { n, seed, big } => {
                    model.files.insert(format!("f{}", n % 8), bytes(seed, big));
                }
                Step::Remove(n) => {
                    model.files.remove(&format!("f{}", n % 8));
                }
                Step::Save => model.save(),
                Step::Push => {
                    model.push(&remote);
                    check_clone(&model, &remote, &tmp.path().join("clone"));
                }
                Step::Drop { keep } => model.drop_oldest(usize::from(keep)),
                Step::Collect => {
                    model.collect(&remote);
                    model.collect(&remote);
                    check_clone(&model, &remote, &tmp.path().join("clone"));
                }
            }
        }
    }
}
