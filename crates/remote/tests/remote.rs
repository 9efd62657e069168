//! snap-remote against the in-memory and `file://` backends: push, push again, clone,
//! several workspaces, a push killed midway and resumed, damage found by verify, and the
//! conditional-put check. Stores are real (temp dirs); the only stand-in is a remote that
//! fails on purpose (a fault injector).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use snap_remote::backend::memory::MemoryRemote;
use snap_remote::backend::{Listed, Put, Remote};
use snap_remote::fetch::{choose_workspace, fetch_workspace};
use snap_remote::push::{PushReport, plan_push, upload};
use snap_remote::state::RemoteState;
use snap_remote::sync::{self, Heard, Local, PushMode};
use snap_remote::{Reach, RemoteError, check};
use snap_store::{
    ChangeStats, Commit, EntryKind, HistoryState, ObjectId, ObjectKind, SnapshotKind,
    SnapshotRecord, Store, Tree, TreeEntry,
};

/// A store and the files of its working tree as a model: `dir/name -> bytes`.
struct Saver {
    store: Store,
    files: BTreeMap<String, Vec<u8>>,
    seq: u64,
    head: Option<ObjectId>,
}

impl Saver {
    fn new(dir: &Path) -> Saver {
        Saver {
            store: Store::init(dir).unwrap(),
            files: BTreeMap::new(),
            seq: 0,
            head: None,
        }
    }

    /// Records the model as a snapshot: `src/` a subtree, small files in blocks, large
    /// ones whole, each tree stored against the last version (a delta).
    fn save(&mut self) -> ObjectId {
        let writer = self.store.writer();
        let mut dirs: BTreeMap<&str, Vec<TreeEntry>> = BTreeMap::new();
        for (path, bytes) in &self.files {
            let (dir, name) = path.split_once('/').unwrap_or(("", path));
            let id = writer.put(ObjectKind::Chunk, bytes).unwrap();
            dirs.entry(dir)
                .or_default()
                .push(entry(name, EntryKind::File, bytes.len(), id));
        }
        let last = self.head.map(|h| self.store.snapshot(&h).unwrap().root);
        let mut root = dirs.remove("").unwrap_or_default();
        for (dir, entries) in dirs {
            let tree = Tree { entries }.encode();
            let id = writer.put(ObjectKind::Tree, &tree).unwrap();
            root.push(entry(dir, EntryKind::Dir, 0, id));
        }
        root.sort_by(|a, b| a.name.cmp(&b.name));
        let root = writer.put_against(ObjectKind::Tree, &Tree { entries: root }.encode(), last);
        self.seq += 1;
        let record = SnapshotRecord {
            seq: self.seq,
            root: root.unwrap(),
            parent: self.head,
            time_ns: self.seq as i64,
            kind: SnapshotKind::Save,
            message: format!("save {}", self.seq),
            step: None,
            session: None,
            meta: Vec::new(),
            stats: ChangeStats::default(),
        };
        let id = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        let packs = writer.finish().unwrap();
        let history = HistoryState {
            head: Some(id),
            redo: Vec::new(),
        };
        let commit = Commit {
            packs,
            snapshots: vec![(id, record)],
            history: Some(history),
            ..Commit::default()
        };
        self.store.commit(&commit).unwrap();
        self.head = Some(id);
        id
    }
}

fn entry(name: &str, kind: EntryKind, size: usize, id: ObjectId) -> TreeEntry {
    TreeEntry {
        name: name.as_bytes().to_vec(),
        kind,
        size: size as u64,
        id,
        mode: Some(0o644),
    }
}

/// Bytes that compress badly, from a seed.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The store of a test, open the whole time: the protocols' steps run on it as they are.
struct Held<'a>(&'a Store);

impl Local for Held<'_> {
    type Error = RemoteError;

    fn reading<T>(
        &self,
        step: impl FnOnce(&Store) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        step(self.0)
    }

    fn writing<T>(
        &self,
        step: impl FnOnce(&Store) -> Result<T, snap_store::StoreError>,
    ) -> Result<T, RemoteError> {
        Ok(step(self.0)?)
    }
}

/// What a protocol told: the total it announced and the last count it moved to.
#[derive(Default)]
struct Told {
    total: std::cell::Cell<Option<u64>>,
    moved: std::cell::Cell<u64>,
}

impl Heard for Told {
    fn started(&self, total: u64) {
        self.total.set(Some(total));
    }

    fn moved(&self, done: u64) {
        assert!(done >= self.moved.get(), "progress never goes back");
        self.moved.set(done);
    }
}

/// Pushes through the protocol every front end runs (`snap_remote::sync::push`).
fn push(saver: &Saver, remote: &dyn Remote, workspace: &str) -> Result<PushReport, RemoteError> {
    let told = Told::default();
    let local = Held(&saver.store);
    let pushed = sync::push(
        &local,
        remote,
        workspace,
        PushMode::Missing,
        Reach::Create,
        &told,
    )?;
    assert_eq!(told.total.get(), Some(pushed.local_bytes));
    Ok(pushed.report)
}

fn clone(remote: &dyn Remote, workspace: Option<&str>, dir: &Path) -> Result<Store, RemoteError> {
    let state = RemoteState::read(remote)?;
    let id = choose_workspace(remote, &state, workspace)?;
    let store = Store::init(dir).unwrap();
    let staging = dir.join("tmp").join("clone");
    fetch_workspace(remote, &state, &id, &store, &staging, &|_| {})?;
    Ok(store)
}

/// One snapshot as read back: its id, record, and every file it holds (path, bytes).
type ReadBack = (ObjectId, SnapshotRecord, Vec<(String, Vec<u8>)>);

/// Every snapshot, its record and every file it holds, read back.
fn contents(store: &Store) -> Vec<ReadBack> {
    let mut out = Vec::new();
    for (id, record) in store.snapshots().unwrap() {
        let mut files = Vec::new();
        let mut trees = vec![(String::new(), record.root)];
        while let Some((at, tree)) = trees.pop() {
            for e in store.read_tree(&tree).unwrap().entries {
                let path = format!("{at}{}", String::from_utf8_lossy(&e.name));
                match e.kind {
                    EntryKind::Dir => trees.push((format!("{path}/"), e.id)),
                    _ => files.push((path, store.read_file(&e.id).unwrap())),
                }
            }
        }
        files.sort();
        out.push((id, record, files));
    }
    out
}

fn assert_same_history(a: &Store, b: &Store) {
    assert_eq!(contents(a), contents(b));
    assert_eq!(a.history().unwrap(), b.history().unwrap());
    let verified = b.verify(true).unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
}

fn edit(saver: &mut Saver, round: u64) {
    for i in 0..6 {
        let name = format!("src/f{}.rs", (round * 3 + i) % 11);
        let text = format!("fn f{i}() {{ {round} }}\n").repeat(40 + i as usize);
        saver.files.insert(name, text.into_bytes());
    }
    saver
        .files
        .insert(format!("data{}.bin", round % 3), noise(round, 40_000));
    if round % 4 == 3 {
        saver.files.remove("src/f1.rs");
    }
}

#[test]
fn push_then_clone_gives_the_same_history_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("same-history");
    let mut a = Saver::new(&tmp.path().join("a"));
    for round in 0..12 {
        edit(&mut a, round);
        a.save();
        if round % 4 == 3 {
            push(&a, &remote, "aaaa").unwrap();
        }
    }
    let b = clone(&remote, None, &tmp.path().join("b")).unwrap();
    assert_same_history(&a.store, &b);
    assert!(check::verify(&remote, true).unwrap().problems.is_empty());
}

#[test]
fn a_second_push_sends_about_the_change() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("second-push");
    let mut a = Saver::new(&tmp.path().join("a"));
    for i in 0..40 {
        a.files.insert(format!("src/m{i}.rs"), noise(i, 20_000));
    }
    a.save();
    let first = push(&a, &remote, "aaaa").unwrap();
    assert_eq!(
        push(&a, &remote, "aaaa").unwrap().ref_n,
        None,
        "nothing new: no ref"
    );
    a.files.insert("src/m3.rs".into(), noise(1000, 20_000));
    a.save();
    let second = push(&a, &remote, "aaaa").unwrap();
    assert_eq!((second.records, second.ref_n), (1, Some(2)));
    assert!(second.objects <= 4, "{second:?}");
    assert!(
        second.bytes * 10 < first.bytes,
        "{second:?} against {first:?}"
    );
}

#[test]
fn two_workspaces_push_to_one_remote_and_clone_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("two-writers");
    let mut a = Saver::new(&tmp.path().join("a"));
    let mut c = Saver::new(&tmp.path().join("c"));
    a.files.insert("shared.txt".into(), noise(7, 30_000));
    c.files.insert("shared.txt".into(), noise(7, 30_000));
    c.files.insert("own.txt".into(), b"c's own\n".to_vec());
    a.save();
    c.save();
    std::thread::scope(|s| {
        s.spawn(|| push(&a, &remote, "aaaa").unwrap());
        s.spawn(|| push(&c, &remote, "cccc").unwrap());
    });
    let which = clone(&remote, None, &tmp.path().join("x"));
    assert!(
        matches!(which, Err(RemoteError::WhichWorkspace { .. })),
        "{which:?}"
    );
    let b = clone(&remote, Some("aa"), &tmp.path().join("b")).unwrap();
    let d = clone(&remote, Some("cc"), &tmp.path().join("d")).unwrap();
    assert_same_history(&a.store, &b);
    assert_same_history(&c.store, &d);
}

/// What a [`Dying`] remote counts toward its death.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kills {
    /// Create-only puts: a push's connection dropped.
    Puts,
    /// Puts and deletes: a process killed while it writes.
    Writes,
}

/// Passes calls through until `left` of the calls it `kills` have been made, then fails
/// each of them as a dropped connection or a killed process would. Clones share the count.
#[derive(Clone, Debug)]
struct Dying {
    inner: MemoryRemote,
    left: std::sync::Arc<AtomicUsize>,
    kills: Kills,
}

impl Dying {
    fn new(inner: MemoryRemote, left: usize, kills: Kills) -> Dying {
        let left = std::sync::Arc::new(AtomicUsize::new(left));
        Dying { inner, left, kills }
    }

    fn spend(&self, key: &str) -> Result<(), RemoteError> {
        let left = self.left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(RemoteError::Corrupt {
                key: key.into(),
                why: "killed".into(),
            });
        }
        self.left.store(left - 1, Ordering::SeqCst);
        Ok(())
    }
}

impl Remote for Dying {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        self.spend(key)?;
        self.inner.put_if_absent(key, body)
    }
    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        self.inner.get(key, range)
    }
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        self.inner.list(prefix)
    }
    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        if self.kills == Kills::Writes {
            self.spend(key)?;
        }
        self.inner.delete(key)
    }
    fn describe(&self) -> String {
        "dying".into()
    }
}

#[test]
fn a_push_killed_at_every_put_is_resumed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Saver::new(&tmp.path().join("a"));
    for round in 0..3 {
        edit(&mut a, round);
        a.save();
    }
    for kill_after in 0..12 {
        let name = format!("killed-{kill_after}");
        let dying = Dying::new(MemoryRemote::named(&name), kill_after, Kills::Puts);
        if push(&a, &dying, "aaaa").is_ok() {
            continue;
        }
        let remote = MemoryRemote::named(&name);
        let state = RemoteState::read(&remote).unwrap();
        assert!(state.refs.is_empty(), "a killed push wrote no ref");
        push(&a, &remote, "aaaa").unwrap();
        let b = clone(&remote, None, &tmp.path().join(&name)).unwrap();
        assert_same_history(&a.store, &b);
    }
}

#[test]
fn a_ref_number_taken_by_another_push_goes_to_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("ref-race");
    let mut a = Saver::new(&tmp.path().join("a"));
    edit(&mut a, 0);
    a.save();
    let state = RemoteState::read(&remote).unwrap();
    let plan = plan_push(&a.store, &state, "aaaa", None).unwrap();
    // Another push of the same workspace lands between the plan and its ref.
    remote
        .put_if_absent(&snap_remote::names::Names::Plain.ref_key("aaaa", 1), b"{}")
        .unwrap();
    let staging = tmp.path().join("staging");
    let report = upload(&remote, plan, &state, &staging, &|_| {}).unwrap();
    assert_eq!(report.ref_n, Some(2));
    let b = clone(&remote, None, &tmp.path().join("b")).unwrap();
    assert_same_history(&a.store, &b);
}

#[test]
fn file_remote_holds_a_history_and_verify_finds_a_damaged_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().join("remote").display());
    let remote = snap_remote::open(&url, snap_remote::Reach::Create).unwrap();
    let mut a = Saver::new(&tmp.path().join("a"));
    for round in 0..4 {
        edit(&mut a, round);
        a.save();
    }
    push(&a, remote.as_ref(), "aaaa").unwrap();
    let b = clone(remote.as_ref(), None, &tmp.path().join("b")).unwrap();
    assert_same_history(&a.store, &b);
    assert!(
        check::verify(remote.as_ref(), true)
            .unwrap()
            .problems
            .is_empty()
    );
    let packs = tmp.path().join("remote").join("packs");
    let pack = std::fs::read_dir(&packs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&pack, bytes).unwrap();
    let found = check::verify(remote.as_ref(), true).unwrap();
    assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
    // A clone refuses the damaged pack and names nothing it holds.
    let refused = clone(remote.as_ref(), None, &tmp.path().join("c"));
    assert!(matches!(refused, Err(RemoteError::Store(_))), "{refused:?}");
    let c = Store::open(&tmp.path().join("c")).unwrap();
    assert!(c.snapshots().unwrap().is_empty());
}

/// Overwrites on every put, as a server ignoring `If-None-Match` would.
#[derive(Debug)]
struct Overwriting(MemoryRemote);

impl Remote for Overwriting {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        self.0.delete(key)?;
        self.0.put_if_absent(key, body)
    }
    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        self.0.get(key, range)
    }
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        self.0.list(prefix)
    }
    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        self.0.delete(key)
    }
    fn describe(&self) -> String {
        "overwriting".into()
    }
}

#[test]
fn the_conditional_put_check_holds_and_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    check::conditional_puts(&MemoryRemote::named("check")).unwrap();
    let file = snap_remote::open(
        &format!("file://{}", tmp.path().display()),
        snap_remote::Reach::Existing,
    )
    .unwrap();
    check::conditional_puts(file.as_ref()).unwrap();
    let refused = check::conditional_puts(&Overwriting(MemoryRemote::named("over")));
    assert!(
        matches!(refused, Err(RemoteError::NoConditionalPuts { .. })),
        "{refused:?}"
    );
}

/// Pulls every other workspace of `remote` into `saver`'s store as `name`.
fn pull(saver: &Saver, remote: &dyn Remote, own: &str, name: &str) -> Result<usize, RemoteError> {
    let told = Told::default();
    let pulled = sync::pull(&Held(&saver.store), remote, name, own, &told)?;
    if pulled.pulled > 0 {
        assert!(told.moved.get() <= told.total.get().unwrap_or(0));
    }
    Ok(pulled.pulled)
}

#[test]
fn a_pull_keeps_other_workspaces_apart_and_gc_keeps_what_they_reach() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("pull");
    let mut a = Saver::new(&tmp.path().join("a"));
    let mut c = Saver::new(&tmp.path().join("c"));
    for round in 0..5 {
        edit(&mut a, round);
        a.save();
    }
    c.files.insert("mine.txt".into(), b"c's own\n".to_vec());
    c.save();
    push(&a, &remote, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    push(&c, &remote, "cccccccccccccccccccccccccccccccc").unwrap();
    let own_before = (c.store.snapshots().unwrap(), c.store.history().unwrap());
    assert_eq!(
        pull(&c, &remote, "cccccccccccccccccccccccccccccccc", "origin").unwrap(),
        5
    );
    assert_eq!(
        (c.store.snapshots().unwrap(), c.store.history().unwrap()),
        own_before,
        "a pull leaves the store's own history and HEAD as they were"
    );
    assert_eq!(
        pull(&c, &remote, "cccccccccccccccccccccccccccccccc", "origin").unwrap(),
        0
    );
    c.store.gc().unwrap();
    let (id, record) = c.store.resolve("origin#3").unwrap();
    assert_eq!(
        (id, record.clone()),
        (a.store.snapshots().unwrap()[2].clone())
    );
    let pulled_files = |store: &Store| {
        let mut trees = vec![record.root];
        let mut files = Vec::new();
        while let Some(t) = trees.pop() {
            for e in store.read_tree(&t).unwrap().entries {
                match e.kind {
                    EntryKind::Dir => trees.push(e.id),
                    _ => files.push(store.read_file(&e.id).unwrap()),
                }
            }
        }
        files
    };
    assert_eq!(
        pulled_files(&c.store),
        pulled_files(&a.store),
        "gc kept what it reaches"
    );
    assert!(c.store.verify(true).unwrap().problems.is_empty());
    assert!(matches!(
        c.store.resolve("origin#9"),
        Err(snap_store::StoreError::UnknownRef(_))
    ));
}

#[test]
fn a_record_whose_tree_the_remote_lacks_is_not_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("no-tree");
    let mut c = Saver::new(&tmp.path().join("c"));
    c.files.insert("mine.txt".into(), b"c\n".to_vec());
    c.save();
    let record = SnapshotRecord {
        seq: 1,
        root: ObjectId::of(ObjectKind::Tree, b"a tree nobody uploaded"),
        parent: None,
        time_ns: 1,
        kind: SnapshotKind::Save,
        message: String::new(),
        step: None,
        session: None,
        meta: Vec::new(),
        stats: ChangeStats::default(),
    };
    let raw = record.encode();
    let id = ObjectId::of(ObjectKind::Snapshot, &raw);
    // A remote as a push leaves it (a pull reads only a remote with its marker).
    let marker = snap_remote::layout::VERSION_BODY;
    (remote.put_if_absent(snap_remote::layout::VERSION_KEY, marker)).unwrap();
    remote
        .put_if_absent(&snap_remote::names::Names::Plain.record(&id), &raw)
        .unwrap();
    let doc = snap_remote::layout::RefDoc {
        format: 1,
        workspace: "dddddddddddddddddddddddddddddddd".into(),
        n: 1,
        head: Some(id.to_hex()),
        redo: Vec::new(),
        snapshots: vec![id.to_hex()],
        pushed_ns: 0,
    };
    let key = snap_remote::names::Names::Plain.ref_key(&doc.workspace, 1);
    remote.put_if_absent(&key, &doc.encode()).unwrap();
    let refused = pull(&c, &remote, "cccc", "origin");
    assert!(matches!(refused, Err(RemoteError::Store(_))), "{refused:?}");
    assert!(c.store.pulled().unwrap().is_empty());
    c.store.gc().unwrap();
    let cloned = clone(&remote, Some("dddd"), &tmp.path().join("d"));
    assert!(matches!(cloned, Err(RemoteError::Store(_))), "{cloned:?}");
}

/// What the newest refs reach, as `snap gc --remote` computes it: each workspace's from the
/// store that made it (`snap gc --remote` needs one store holding all, after a pull).
fn live_of(stores: &[(&Store, &str)], remote: &dyn Remote) -> snap_remote::gc::Live {
    let state = RemoteState::read(remote).unwrap();
    let mut live = snap_remote::gc::Live::default();
    for (store, workspace) in stores {
        let Some(doc) = state.read_ref(remote, workspace).unwrap() else {
            continue;
        };
        let ids = doc.snapshot_ids();
        let roots: Vec<ObjectId> = ids
            .iter()
            .map(|id| store.snapshot(id).unwrap().root)
            .collect();
        live.objects.extend(store.closure(&roots).unwrap());
        live.records.extend(ids);
    }
    live
}

fn collect(stores: &[(&Store, &str)], remote: &dyn Remote) -> snap_remote::gc::GcReport {
    let live = live_of(stores, remote);
    let state = RemoteState::read(remote).unwrap();
    let grace = std::time::Duration::ZERO;
    snap_remote::gc::collect(remote, &state, &live, grace, 1).unwrap()
}

fn remote_bytes(remote: &dyn Remote) -> u64 {
    remote.list("packs/").unwrap().iter().map(|l| l.size).sum()
}

/// Drops the store's oldest `n` snapshots, as a prune would, then gc.
fn drop_oldest(saver: &Saver, n: usize) {
    let all = saver.store.snapshots().unwrap();
    let remove_snapshots = all.iter().take(n).map(|(id, _)| *id).collect();
    saver
        .store
        .commit(&Commit {
            remove_snapshots,
            ..Commit::default()
        })
        .unwrap();
    saver.store.gc().unwrap();
}

#[test]
fn a_remote_gc_marks_then_deletes_what_no_newest_ref_reaches() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("remote-gc");
    let mut a = Saver::new(&tmp.path().join("a"));
    for round in 0..6 {
        // Each snapshot holds only its own files; its trees are deltas of the last ones.
        a.files.clear();
        edit(&mut a, round + 100);
        a.files.insert("big.bin".into(), noise(round + 77, 200_000));
        a.save();
        push(&a, &remote, "aaaa").unwrap();
    }
    drop_oldest(&a, 4);
    push(&a, &remote, "aaaa").unwrap();
    let stores = [(&a.store, "aaaa")];
    let before = remote_bytes(&remote);
    let first = collect(&stores, &remote);
    assert_eq!(first.refs_deleted, 6, "{first:?}");
    assert_eq!(
        (first.marked, first.deleted),
        (8, 0),
        "4 packs, 4 records: {first:?}"
    );
    assert_eq!(remote_bytes(&remote), before, "marking deletes nothing");
    let second = collect(&stores, &remote);
    assert_eq!((second.deleted, second.rescued), (8, 0), "{second:?}");
    assert!(
        remote_bytes(&remote) * 2 < before,
        "{} against {before}",
        remote_bytes(&remote)
    );
    assert!(check::verify(&remote, true).unwrap().problems.is_empty());
    let b = clone(&remote, None, &tmp.path().join("b")).unwrap();
    assert_same_history(&a.store, &b);
    assert_eq!(
        collect(&stores, &remote),
        snap_remote::gc::GcReport::default()
    );
}

#[test]
fn a_push_after_a_mark_does_not_rely_on_the_marked_packs() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("remote-gc-race");
    let mut a = Saver::new(&tmp.path().join("a"));
    a.files.insert("shared.bin".into(), noise(5, 300_000));
    a.save();
    push(&a, &remote, "aaaa").unwrap();
    // a moves on and drops that snapshot; its pack is no longer reached.
    a.files.clear();
    a.files.insert("other.txt".into(), b"other\n".to_vec());
    a.save();
    drop_oldest(&a, 1);
    push(&a, &remote, "aaaa").unwrap();
    let marked = collect(&[(&a.store, "aaaa")], &remote);
    assert_eq!(marked.marked, 2, "the pack and the record: {marked:?}");
    let doomed: Vec<String> = (remote.list("trash/").unwrap().iter())
        .filter_map(|l| l.key.strip_prefix("trash/packs/").map(str::to_string))
        .collect();
    assert_eq!(doomed.len(), 1);

    // Another workspace pushes the same file beside its own after the mark: it sends the
    // file again rather than count on the marked pack.
    let mut c = Saver::new(&tmp.path().join("c"));
    c.files.insert("shared.bin".into(), noise(5, 300_000));
    c.files.insert("own.txt".into(), b"c\n".to_vec());
    c.save();
    let sent = push(&c, &remote, "cccc").unwrap();
    assert_eq!(sent.objects, 3, "shared.bin, own.txt, the tree: {sent:?}");
    // A collector that judged before that push deletes the marked pack now.
    let pack = ObjectId::from_hex(doomed[0].trim_end_matches(".pack")).unwrap();
    remote
        .delete(&snap_remote::names::Names::Plain.index(&pack))
        .unwrap();
    remote
        .delete(&snap_remote::names::Names::Plain.pack(&pack))
        .unwrap();
    let d = clone(&remote, Some("cccc"), &tmp.path().join("d")).unwrap();
    assert_same_history(&c.store, &d);
    assert!(check::verify(&remote, true).unwrap().problems.is_empty());
}

#[test]
fn a_push_that_rebuilds_a_marked_pack_takes_its_mark_away() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("remote-gc-rescue");
    let mut a = Saver::new(&tmp.path().join("a"));
    a.files.insert("shared.bin".into(), noise(6, 300_000));
    a.save();
    push(&a, &remote, "aaaa").unwrap();
    a.files.clear();
    a.save();
    drop_oldest(&a, 1);
    push(&a, &remote, "aaaa").unwrap();
    assert_eq!(collect(&[(&a.store, "aaaa")], &remote).marked, 2);
    // The same content again, from another store: the same objects make the same pack.
    let mut c = Saver::new(&tmp.path().join("c"));
    c.files.insert("shared.bin".into(), noise(6, 300_000));
    c.save();
    push(&c, &remote, "cccc").unwrap();
    assert!(
        remote.list("trash/").unwrap().len() <= 1,
        "the pack's mark went"
    );
    let after = collect(&[(&a.store, "aaaa"), (&c.store, "cccc")], &remote);
    assert_eq!(after.deleted, 0, "{after:?}");
    let d = clone(&remote, Some("cccc"), &tmp.path().join("d")).unwrap();
    assert_same_history(&c.store, &d);
}

/// Two saves, two local packs, the first snapshot dropped; the remote packs take their
/// frames in local pack order, which the packs' hashes decide, so a killed push may leave a
/// first remote pack holding the root tree while the subtree and files it names are in the
/// second. Four histories, to meet both orders.
#[test]
fn a_push_of_several_packs_killed_between_them_is_resumed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    for seed in 0..4u64 {
        let mut a = Saver::new(&tmp.path().join(format!("a{seed}")));
        for save in 0..2u64 {
            for i in 0..14u64 {
                let content = noise(seed * 1000 + save * 100 + i, 1 << 20);
                a.files.insert(format!("s{save}/blob{i:02}.bin"), content);
            }
            a.save();
        }
        // Only the second snapshot stays: the first one's tree is reached through it alone.
        drop_oldest(&a, 1);
        let name = format!("several-{seed}");
        // The layout key, the first pack and its index.
        let dying = Dying::new(MemoryRemote::named(&name), 3, Kills::Puts);
        let killed = push(&a, &dying, "aaaa");
        assert!(
            matches!(&killed, Err(RemoteError::Corrupt { why, .. }) if why == "killed"),
            "{seed}: {killed:?}"
        );
        let remote = MemoryRemote::named(&name);
        let keys: Vec<String> = remote
            .list("")
            .unwrap()
            .into_iter()
            .map(|l| l.key)
            .collect();
        assert_eq!(remote.list("index/").unwrap().len(), 1, "{seed}: {keys:?}");
        push(&a, &remote, "aaaa").unwrap();
        let b = clone(&remote, None, &tmp.path().join(&name)).unwrap();
        assert_same_history(&a.store, &b);
        assert!(check::verify(&remote, true).unwrap().problems.is_empty());
    }
}

#[test]
fn a_ref_that_lands_while_a_remote_gc_runs_is_never_taken_for_an_old_one() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("gc-ref-race");
    let mut a = Saver::new(&tmp.path().join("a"));
    edit(&mut a, 0);
    a.save();
    push(&a, &remote, "aaaa").unwrap();
    let stale = RemoteState::read(&remote).unwrap();
    let live = live_of(&[(&a.store, "aaaa")], &remote);
    // A push lands between the collector's reading and its deleting.
    edit(&mut a, 1);
    a.save();
    push(&a, &remote, "aaaa").unwrap();
    snap_remote::gc::collect(&remote, &stale, &live, std::time::Duration::ZERO, 1).unwrap();
    let refs = remote.list("refs/aaaa/").unwrap();
    assert_eq!(refs.len(), 1);
    assert!(refs[0].key.ends_with("00000000000000000002"), "{refs:?}");
    // Its snapshot is only marked (the stale state did not know it), never deleted: the
    // next collection, which sees the new ref, takes the mark away.
    let next = collect(&[(&a.store, "aaaa")], &remote);
    assert_eq!(next.deleted, 0, "{next:?}");
    let b = clone(&remote, None, &tmp.path().join("b")).unwrap();
    assert_same_history(&a.store, &b);
}

#[test]
fn a_pull_retried_after_a_missing_object_still_takes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("pull-retry");
    let mut a = Saver::new(&tmp.path().join("a"));
    a.files.insert("kept.bin".into(), noise(31, 50_000));
    a.save();
    push(&a, &remote, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let first_packs: Vec<String> = remote
        .list("packs/")
        .unwrap()
        .into_iter()
        .map(|l| l.key)
        .collect();
    a.files.insert("new.bin".into(), noise(32, 50_000));
    a.save();
    push(&a, &remote, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    // The first push's pack is lost from the remote: the second snapshot's tree is there,
    // the file it names is not.
    for key in &first_packs {
        let hex = key.trim_start_matches("packs/").trim_end_matches(".pack");
        let pack = ObjectId::from_hex(hex).unwrap();
        remote
            .delete(&snap_remote::names::Names::Plain.index(&pack))
            .unwrap();
        remote.delete(key).unwrap();
    }
    let mut c = Saver::new(&tmp.path().join("c"));
    c.files.insert("mine.txt".into(), b"c\n".to_vec());
    c.save();
    for attempt in 0..2 {
        let refused = pull(&c, &remote, "cccc", "origin");
        assert!(
            matches!(refused, Err(RemoteError::Store(_))),
            "{attempt}: {refused:?}"
        );
    }
    assert!(c.store.pulled().unwrap().is_empty());
    c.store.gc().unwrap();
    assert!(c.store.verify(true).unwrap().problems.is_empty());
}

#[test]
fn reading_commands_never_make_a_remote_of_a_mistyped_path() {
    let tmp = tempfile::tempdir().unwrap();
    let typo = tmp.path().join("typo");
    let url = format!("file://{}", typo.display());
    let opened = snap_remote::open(&url, snap_remote::Reach::Existing);
    assert!(
        matches!(opened, Err(RemoteError::NoRemote { .. })),
        "{opened:?}"
    );
    assert!(!typo.exists(), "opening to read made the directory");
    // A directory that exists but holds no marker is not a remote either.
    std::fs::create_dir(&typo).unwrap();
    let remote = snap_remote::open(&url, snap_remote::Reach::Existing).unwrap();
    let verified = check::verify(remote.as_ref(), false);
    assert!(
        matches!(verified, Err(RemoteError::NotARemote { .. })),
        "{verified:?}"
    );
    let read = RemoteState::read_existing(remote.as_ref());
    assert!(matches!(read, Err(RemoteError::NotARemote { .. })));
    assert_eq!(std::fs::read_dir(&typo).unwrap().count(), 0);
}

#[test]
fn a_remote_of_a_newer_layout_is_refused_by_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = MemoryRemote::named("newer-layout");
    let mut a = Saver::new(&tmp.path().join("a"));
    edit(&mut a, 0);
    a.save();
    remote
        .put_if_absent(snap_remote::layout::VERSION_KEY, b"snap-remote 999\n")
        .unwrap();
    let newer = |r: &Result<_, RemoteError>| matches!(r, Err(RemoteError::NewerLayout { .. }));
    assert!(newer(&push(&a, &remote, "aaaa").map(|_| ())));
    assert!(newer(
        &clone(&remote, None, &tmp.path().join("b")).map(|_| ())
    ));
    assert!(newer(&check::verify(&remote, true).map(|_| ())));
    assert!(remote.list("packs/").unwrap().is_empty(), "the push wrote");
}

#[test]
fn a_huge_object_on_a_file_remote_is_refused_not_allocated() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().display());
    let remote = snap_remote::open(&url, snap_remote::Reach::Existing).unwrap();
    remote
        .put_if_absent(
            snap_remote::layout::VERSION_KEY,
            snap_remote::layout::VERSION_BODY,
        )
        .unwrap();
    std::fs::create_dir(tmp.path().join("index")).unwrap();
    let idx = tmp
        .path()
        .join("index")
        .join(format!("{}.idx", "ab".repeat(32)));
    let file = std::fs::File::create(&idx).unwrap();
    file.set_len(1 << 40).unwrap(); // sparse: 1 TiB on paper, nothing on disk
    let got = remote.get(&format!("index/{}.idx", "ab".repeat(32)), None);
    assert!(matches!(got, Err(RemoteError::Corrupt { .. })), "{got:?}");
    // Verify names the index among its problems; nothing is allocated for it.
    let verified = check::verify(remote.as_ref(), true).unwrap();
    let named = verified
        .problems
        .iter()
        .any(|p| p.starts_with("index/abab"));
    assert!(named, "{verified:?}");
}

/// Takes the top-level file `path` out of every snapshot of `saver`'s store as `snap
/// expunge` does (new trees and records, the old ids in the `expunged` table, a purge),
/// and returns the (old, new) ids.
fn expunge_top_file(saver: &mut Saver, path: &str) -> Vec<(ObjectId, ObjectId)> {
    let store = &saver.store;
    let writer = store.writer();
    let mut renamed: Vec<(ObjectId, ObjectId)> = Vec::new();
    let mut snapshots = Vec::new();
    for (old, record) in store.snapshots().unwrap() {
        let mut tree = store.read_tree(&record.root).unwrap();
        tree.entries.retain(|e| e.name != path.as_bytes());
        let root = writer.put(ObjectKind::Tree, &tree.encode()).unwrap();
        let parent = (record.parent).map(|p| renamed.iter().find(|r| r.0 == p).map_or(p, |r| r.1));
        if root == record.root && parent == record.parent {
            continue;
        }
        let record = SnapshotRecord {
            root,
            parent,
            ..record
        };
        let new = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        renamed.push((old, new));
        snapshots.push((new, record));
    }
    let packs = writer.finish().unwrap();
    let head = (saver.head).map(|h| renamed.iter().find(|r| r.0 == h).map_or(h, |r| r.1));
    store
        .commit(&Commit {
            packs,
            remove_snapshots: renamed.iter().map(|r| r.0).collect(),
            snapshots,
            history: Some(HistoryState {
                head,
                redo: Vec::new(),
            }),
            expunge: Some(snap_store::ExpungeRows {
                renamed: renamed.clone(),
            }),
            purge: Some(snap_store::PurgeRow::Pending),
            ..Commit::default()
        })
        .unwrap();
    store.purge().unwrap();
    saver.head = head;
    renamed
}

/// A remote gc with no grace, its reach computed from `store` as `snap gc --remote` does.
fn collect_from(store: &Store, remote: &dyn Remote) -> snap_remote::gc::GcReport {
    let state = RemoteState::read(remote).unwrap();
    let records = snap_remote::gc::live_records(remote, &state).unwrap();
    let roots: Vec<ObjectId> = (records.iter())
        .map(|id| store.snapshot(id).unwrap().root)
        .collect();
    let live = snap_remote::gc::Live {
        objects: store.closure(&roots).unwrap(),
        records,
    };
    snap_remote::gc::collect(remote, &state, &live, std::time::Duration::ZERO, 1).unwrap()
}

#[test]
fn an_expunge_pushed_keeps_the_old_snapshots_off_the_remote_and_out_of_every_store() {
    const TOKEN: &[u8] = b"AKIA-expunged-remote-token-7f3e";
    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    let tmp = tempfile::tempdir().unwrap();
    let remote_dir = tmp.path().join("remote");
    let url = format!("file://{}", remote_dir.display());
    let remote = snap_remote::open(&url, snap_remote::Reach::Create).unwrap();
    let remote = remote.as_ref();
    // Each save pushed alone, so the secret's pack holds nothing that stays reached.
    let mut a = Saver::new(&tmp.path().join("a"));
    a.files.insert("keep.txt".into(), b"keep 1\n".to_vec());
    a.save();
    push(&a, remote, A).unwrap();
    let mut secret = b"key = ".to_vec();
    secret.extend_from_slice(TOKEN);
    a.files.insert("secret.txt".into(), secret);
    a.save();
    push(&a, remote, A).unwrap();
    a.files.insert("keep.txt".into(), b"keep 2\n".to_vec());
    a.save();
    push(&a, remote, A).unwrap();
    let b = Saver {
        store: clone(remote, Some(A), &tmp.path().join("b")).unwrap(),
        files: BTreeMap::new(),
        seq: 3,
        head: a.head,
    };
    push(&b, remote, B).unwrap();

    let renamed = expunge_top_file(&mut a, "secret.txt");
    assert_eq!(renamed.len(), 2, "the secret's snapshot and the one after");
    let report = push(&a, remote, A).unwrap();
    assert_eq!(
        (report.expunged, report.records_deleted),
        (2, 2),
        "{report:?}"
    );
    let state = RemoteState::read(remote).unwrap();
    for (old, new) in &renamed {
        assert!(state.is_expunged(old) && !state.has_record(old));
        assert_eq!(state.resolve(remote, old).unwrap(), Some(*new));
    }

    // A third workspace pulls: B's ref still names the old ids, which are refused.
    let d = Saver::new(&tmp.path().join("d"));
    let plan = snap_remote::fetch::plan_pull(remote, &state, &d.store, "dddd").unwrap();
    assert_eq!(plan.refused.len(), 2, "{plan:?}");
    assert_eq!(pull(&d, remote, "dddd", "origin").unwrap(), 3, "A's three");
    assert!(snap_store::testing::store_holds(d.store.dir(), TOKEN).is_empty());

    // A clone of B's stale ref takes the renamed snapshots in the old ones' place.
    let c = clone(remote, Some(B), &tmp.path().join("c")).unwrap();
    assert_same_history(&a.store, &c);
    assert!(snap_store::testing::store_holds(c.dir(), TOKEN).is_empty());

    // B, which never pulled, pushes again: its old snapshots do not go back.
    let again = push(&b, remote, B).unwrap();
    assert_eq!(again.records, 0, "{again:?}");
    let state = RemoteState::read(remote).unwrap();
    let doc = state.read_ref(remote, B).unwrap().unwrap();
    let olds: Vec<String> = renamed.iter().map(|r| r.0.to_hex()).collect();
    assert!(doc.snapshots.iter().all(|s| !olds.contains(s)), "{doc:?}");
    assert_eq!(
        doc.head,
        a.head.map(|h| h.to_hex()),
        "HEAD as the expunge renamed it"
    );
    assert!(renamed.iter().all(|r| !state.has_record(&r.0)));
    let c2 = clone(remote, Some(B), &tmp.path().join("c2")).unwrap();
    assert_eq!(c2.history().unwrap().head, a.head);
    assert!(snap_store::testing::store_holds(c2.dir(), TOKEN).is_empty());

    // Two collections: the secret's pack is reached by no live snapshot, so it goes.
    assert!(!snap_store::testing::store_holds(&remote_dir, TOKEN).is_empty());
    collect_from(&a.store, remote);
    collect_from(&a.store, remote);
    let left = snap_store::testing::store_holds(&remote_dir, TOKEN);
    assert!(left.is_empty(), "{left:?}");
    assert!(check::verify(remote, true).unwrap().problems.is_empty());
    let c3 = clone(remote, Some(A), &tmp.path().join("c3")).unwrap();
    assert_same_history(&a.store, &c3);
}

/// The encrypted layout (FORMAT.md 9.1): the same pushes, clones and collections through
/// [`snap_remote::sealed::Sealed`], and what the bucket shows checked byte by byte.
mod encrypted {
    use super::*;
    use snap_remote::crypt::{KdfParams, MasterKey};
    use snap_remote::sealed::Sealed;

    /// Small Argon2 parameters: these tests check the layout, not the KDF's cost.
    const FAST: KdfParams = KdfParams {
        m_kib: 64,
        t: 1,
        p: 1,
    };

    /// A new encrypted remote over `raw`, made as `snap remote add` makes it.
    fn sealed(raw: &MemoryRemote, passphrase: &[u8]) -> Sealed {
        let master = snap_remote::keys::create(raw, passphrase, FAST, 1).unwrap();
        Sealed::new(Box::new(raw.clone()), master)
    }

    /// The same remote opened again with a passphrase, as `snap clone` opens it.
    fn opened(raw: &MemoryRemote, passphrase: &[u8]) -> Result<Sealed, RemoteError> {
        let master: MasterKey = snap_remote::keys::unlock(raw, passphrase)?;
        Ok(Sealed::new(Box::new(raw.clone()), master))
    }

    /// Every object's raw bytes and key, as one who can read the bucket sees them.
    fn bucket(raw: &MemoryRemote) -> Vec<(String, Vec<u8>)> {
        (raw.list("").unwrap().into_iter())
            .map(|l| (l.key.clone(), raw.get(&l.key, None).unwrap().unwrap()))
            .collect()
    }

    fn holds(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    /// What must not show: 16-byte pieces of every file, every path, every id (snapshots,
    /// trees, contents, local and remote packs) in hex and binary, the workspace id.
    fn secrets(saver: &Saver, remote: &dyn Remote, workspace: &str) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = vec![workspace.as_bytes().to_vec()];
        let snapshots = saver.store.snapshots().unwrap();
        let roots: Vec<ObjectId> = snapshots.iter().map(|(_, r)| r.root).collect();
        let mut ids: Vec<ObjectId> = snapshots.iter().map(|(id, _)| *id).collect();
        ids.extend(saver.store.closure(&roots).unwrap());
        ids.extend(RemoteState::read(remote).unwrap().packs.keys().copied());
        for entry in std::fs::read_dir(saver.store.dir().join("packs")).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            out.push(name.trim_end_matches(".pack").as_bytes().to_vec());
        }
        for id in ids {
            out.push(id.to_hex().into_bytes());
            out.push(id.0.to_vec());
        }
        for (_, _, files) in contents(&saver.store) {
            for (path, bytes) in files {
                out.push(path.into_bytes());
                out.extend(bytes.chunks_exact(16).step_by(7).map(<[u8]>::to_vec));
            }
        }
        out
    }

    fn history(a: &mut Saver, remote: &dyn Remote, rounds: u64) {
        for round in 0..rounds {
            edit(a, round);
            a.files
                .insert(".env".into(), format!("TOKEN=tok-{round}-secret\n").into());
            a.save();
            if round % 3 == 2 {
                push(a, remote, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1").unwrap();
            }
        }
    }

    #[test]
    fn the_bucket_shows_no_content_name_or_id_and_the_clone_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let raw = MemoryRemote::named("sealed-scan");
        let remote = sealed(&raw, b"correct horse");
        let mut a = Saver::new(&tmp.path().join("a"));
        history(&mut a, &remote, 9);
        let objects = bucket(&raw);
        assert!(objects.len() > 10, "{}", objects.len());
        for needle in secrets(&a, &remote, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1") {
            for (key, body) in &objects {
                let shown = holds(body, &needle) || holds(key.as_bytes(), &needle);
                assert!(!shown, "{key} shows {:?}", String::from_utf8_lossy(&needle));
            }
        }
        let keys: Vec<&String> = objects.iter().map(|(k, _)| k).collect();
        let laid = |k: &&String| k.starts_with("sealed/") || k.starts_with("keys/");
        assert!(
            keys.iter().all(|k| laid(k) || *k == "snap-remote"),
            "{keys:?}"
        );

        let b = clone(
            &opened(&raw, b"correct horse").unwrap(),
            None,
            &tmp.path().join("b"),
        );
        assert_same_history(&a.store, &b.unwrap());
        assert!(check::verify(&remote, true).unwrap().problems.is_empty());
        let wrong = opened(&raw, b"wrong horse").unwrap_err();
        assert_eq!(
            wrong.to_string(),
            "no key of this remote opens with that passphrase"
        );
        let plain = RemoteState::read(&raw).unwrap_err();
        assert!(plain.to_string().contains("encrypted"), "{plain}");
    }

    /// Each kind of object flipped, cut short, or swapped with another of its kind: a
    /// clone fails naming it (or, for a record the ref does not need, verify names it),
    /// and the store cloned into takes nothing.
    #[test]
    fn every_damaged_object_is_named_and_nothing_is_taken() {
        let tmp = tempfile::tempdir().unwrap();
        for (n, folder) in ["packs/", "index/", "snapshots/", "refs/"]
            .iter()
            .enumerate()
        {
            for harm in ["flip", "cut", "swap"] {
                let name = format!("sealed-damage-{n}-{harm}");
                let raw = MemoryRemote::named(&name);
                let remote = sealed(&raw, b"pw");
                let mut a = Saver::new(&tmp.path().join(&name));
                history(&mut a, &remote, 6);
                let prefix = format!("sealed/{folder}");
                let keys: Vec<String> = (raw.list(&prefix).unwrap().into_iter())
                    .map(|l| l.key)
                    .collect();
                let victim = keys.last().unwrap().clone();
                let mut body = raw.get(&victim, None).unwrap().unwrap();
                match harm {
                    "flip" => {
                        let middle = body.len() / 2;
                        body[middle] ^= 0x20;
                    }
                    "cut" => body.truncate(body.len() - 5),
                    _ => body = raw.get(&keys[0], None).unwrap().unwrap(),
                }
                if harm == "swap" && keys.len() < 2 {
                    continue;
                }
                raw.delete(&victim).unwrap();
                raw.put_if_absent(&victim, &body).unwrap();
                let into = tmp.path().join(format!("{name}-clone"));
                let cloned = clone(&opened(&raw, b"pw").unwrap(), None, &into);
                let problems = check::verify(&remote, true).unwrap().problems;
                let named = problems.iter().any(|p| p.starts_with(&victim));
                match cloned {
                    Err(e) => assert!(e.to_string().contains(&victim) || named, "{name}: {e}"),
                    Ok(store) => panic!("{name}: cloned {:?}", store.snapshots().unwrap().len()),
                }
                assert!(named, "{name}: verify names {victim}: {problems:?}");
                let taken = Store::open(&into).map(|s| s.snapshots().unwrap().len());
                assert_eq!(
                    taken.unwrap_or(0),
                    0,
                    "{name}: the failed clone took nothing"
                );
            }
        }
    }

    #[test]
    fn gc_and_expunge_work_on_an_encrypted_remote() {
        let tmp = tempfile::tempdir().unwrap();
        let raw = MemoryRemote::named("sealed-gc");
        let remote = sealed(&raw, b"pw");
        let mut a = Saver::new(&tmp.path().join("a"));
        history(&mut a, &remote, 6);
        let before = raw.list("sealed/packs/").unwrap().len();
        drop_oldest(&a, 3);
        push(&a, &remote, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1").unwrap();
        let marked = collect(&[(&a.store, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1")], &remote);
        assert!(marked.marked > 0, "{marked:?}");
        assert!(raw.list("sealed/trash/").unwrap().len() == marked.marked);
        let swept = collect(&[(&a.store, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1")], &remote);
        assert!(swept.deleted > 0, "{swept:?}");
        assert!(raw.list("sealed/packs/").unwrap().len() <= before);
        let b = clone(&opened(&raw, b"pw").unwrap(), None, &tmp.path().join("b")).unwrap();
        assert_same_history(&a.store, &b);
    }

    #[test]
    fn a_plain_remote_moves_to_the_encrypted_layout_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let raw = MemoryRemote::named("reseal");
        let mut a = Saver::new(&tmp.path().join("a"));
        for round in 0..6 {
            edit(&mut a, round);
            a.save();
            push(&a, &raw, "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2").unwrap();
        }
        let master = snap_remote::keys::initial(&raw, b"pw", FAST, 1).unwrap();
        let remote = Sealed::new(Box::new(raw.clone()), master);
        let moved = snap_remote::reseal::reseal(&raw, &remote).unwrap();
        assert!(
            moved.copied > 0 && moved.deleted >= moved.copied,
            "{moved:?}"
        );
        let keys: Vec<String> = raw.list("").unwrap().into_iter().map(|l| l.key).collect();
        assert!(
            keys.iter().all(|k| snap_remote::reseal::of_layout_two(k)),
            "{keys:?}"
        );
        // Run again (as after a kill): nothing to copy, nothing lost.
        let again = snap_remote::reseal::reseal(&raw, &remote).unwrap();
        assert_eq!((again.copied, again.deleted), (0, 0));
        let b = clone(&opened(&raw, b"pw").unwrap(), None, &tmp.path().join("b")).unwrap();
        assert_same_history(&a.store, &b);
        assert!(check::verify(&remote, true).unwrap().problems.is_empty());
    }

    /// A move killed after any number of its writes, then run again, ends whole.
    #[test]
    fn a_move_killed_at_every_write_is_finished_by_the_next() {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = Saver::new(&tmp.path().join("a"));
        for round in 0..3 {
            edit(&mut a, round);
            a.save();
        }
        for limit in 0..40 {
            let name = format!("reseal-kill-{limit}");
            let raw = MemoryRemote::named(&name);
            push(&a, &raw, "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3").unwrap();
            let master = snap_remote::keys::initial(&raw, b"pw", FAST, 1).unwrap();
            let plain = Dying::new(raw.clone(), limit, Kills::Writes);
            let killed = Sealed::new(Box::new(plain.clone()), master);
            let _ = snap_remote::reseal::reseal(&plain, &killed);
            let remote = opened(&raw, b"pw").unwrap();
            snap_remote::reseal::reseal(&raw, &remote).unwrap();
            let into = tmp.path().join(&name);
            let b = clone(&remote, None, &into).unwrap();
            assert_same_history(&a.store, &b);
        }
    }
}
