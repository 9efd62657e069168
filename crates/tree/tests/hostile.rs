//! Hostile input: symlink swaps, damaged trees with escaping names, and a store written by an
//! older snap (the v1 fixture), all through the library.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use snap_store::{
    ChangeStats, Commit, EntryKind, ObjectKind, SnapshotKind, SnapshotRecord, Tree, TreeEntry,
};
use snap_tree::testing::restore;
use snap_tree::{SaveOptions, TreeError, Workspace};

fn write(root: &Path, path: &str, content: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn save(ws: &Workspace) {
    ws.save(&SaveOptions::default()).unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_is_replaced_not_followed() {
    let ws_dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws_dir.path();
    write(outside.path(), "f", "outside");
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "sub/f", "1");
    save(&ws);
    write(root, "sub/f", "2");
    save(&ws);
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
    // The swap is an unsaved change: undo saves it, then returns to #2 (sub/f = "2").
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f")).unwrap(),
        "outside"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    assert!(
        std::fs::symlink_metadata(root.join("sub"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(std::fs::read_to_string(root.join("sub/f")).unwrap(), "2");
    ws.redo(1, snap_tree::Run::Apply).unwrap();
    assert!(
        std::fs::symlink_metadata(root.join("sub"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn a_swap_after_planning_makes_the_restore_fail_without_writing_outside() {
    let ws_dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws_dir.path();
    write(outside.path(), "f", "outside");
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "sub/f", "1");
    save(&ws);
    write(root, "sub/f", "2");
    write(root, "sub/g", "2");
    save(&ws);
    let old = ws.files(&ws.resolve("#1").unwrap()).unwrap();
    let new = ws.files(&ws.resolve("#2").unwrap()).unwrap();
    // The plan is made for a tree where sub is a directory; then sub becomes a symlink.
    let plan = restore::Plan::new(&new, &old);
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
    let tree = restore::WorkTree {
        root,
        store: ws.store(),
        max_file_size: u64::MAX,
        stop: None,
        op: restore::OpId::new(),
    };
    let sides = restore::Sides {
        before: &new,
        after: &old,
    };
    let err = restore::apply(tree, &plan, sides).unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f")).unwrap(),
        "outside"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

/// Commits a snapshot whose root tree holds one entry with `name`, bypassing every check a
/// save makes, as a damaged or hostile store would.
fn commit_hostile_snapshot(ws: &Workspace, name: &[u8]) -> u64 {
    let store = ws.store();
    let writer = store.writer();
    let chunk = writer.put(ObjectKind::Chunk, b"pwned").unwrap();
    let entry = TreeEntry {
        name: name.to_vec(),
        kind: EntryKind::File,
        size: 5,
        id: chunk,
        mode: Some(0o644),
    };
    let root = writer
        .put(
            ObjectKind::Tree,
            &Tree {
                entries: vec![entry],
            }
            .encode(),
        )
        .unwrap();
    let seq = store.next_seq().unwrap();
    let record = SnapshotRecord {
        seq,
        root,
        parent: None,
        time_ns: 0,
        kind: SnapshotKind::Save,
        message: String::new(),
        step: None,
        session: None,
        meta: Vec::new(),
        stats: ChangeStats::default(),
    };
    let id = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
    let packs = writer.finish().unwrap();
    store
        .commit(&Commit {
            packs,
            snapshots: vec![(id, record)],
            ..Commit::default()
        })
        .unwrap();
    seq
}

#[test]
fn hostile_entry_names_in_a_damaged_store_are_refused() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let ws = Workspace::init(&root, None, false).unwrap();
    write(&root, "f", "mine");
    save(&ws);
    for name in [&b".."[..], b"../escape", b"a/b", b"", b".", b"nul\0"] {
        let seq = commit_hostile_snapshot(&ws, name);
        let err = ws
            .restore(&format!("#{seq}"), &[], snap_tree::Run::Apply)
            .unwrap_err();
        assert!(matches!(err, TreeError::Store(_)), "{name:?}: {err}");
        assert!(err.to_string().contains("damaged"), "{err}");
    }
    assert_eq!(
        std::fs::read_dir(parent.path()).unwrap().count(),
        1,
        "nothing was written beside the workspace"
    );
    assert_eq!(std::fs::read_to_string(root.join("f")).unwrap(), "mine");
    assert_eq!(ws.status().unwrap().changes, vec![]);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `tests/fixtures/v1` is a store written by format version 1 (made by `make-fixture.sh`);
/// every later snap must still open it, list it, read it and restore from it.
#[test]
fn a_version_1_store_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1"),
        &root.join(".snap"),
    );
    let ws = Workspace::discover(root, None).unwrap();
    let log = ws.log(true).unwrap();
    assert_eq!(
        log.iter()
            .map(|e| e.snapshot.record.seq)
            .collect::<Vec<_>>(),
        vec![2, 1]
    );
    let first = ws.resolve("#1").unwrap();
    assert_eq!(ws.read_file(&first, b"hello.txt").unwrap(), b"hello\n");
    assert_eq!(ws.resolve("@").unwrap().record.message, "second");
    ws.restore("#2", &[], snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("hello.txt")).unwrap(),
        "hello again\n"
    );
    assert_eq!(
        std::fs::read_link(root.join("link")).unwrap(),
        Path::new("hello.txt")
    );
    assert!(
        std::fs::metadata(root.join("bin/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o100
            != 0
    );
    assert_eq!(std::fs::read(root.join("big.bin")).unwrap().len(), 3 << 20);
}

use std::os::unix::fs::PermissionsExt;

/// The racy-git rule: an edit in the same clock tick as the save before it, keeping the size,
/// must still be seen by the next save, whatever the stat cache holds.
#[test]
fn same_size_edits_in_the_same_tick_are_never_missed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for i in 0..60 {
        let content = if i % 2 == 0 { "aaaa" } else { "bbbb" };
        std::fs::write(root.join("f"), content).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
        let head = ws.head().unwrap().unwrap();
        assert_eq!(
            ws.read_file(&head, b"f").unwrap(),
            content.as_bytes(),
            "round {i}"
        );
        assert!(ws.status().unwrap().changes.is_empty(), "round {i}");
    }
}

/// A row vouching for an object gc drops must go with it; the rest stay trusted, so the save
/// after a gc reads only what changed.
#[test]
fn the_stat_cache_skips_unchanged_files_and_survives_gc() {
    use snap_store::{ObjectId, StatCacheUpdate, StatEntry, StatKey};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for i in 0..20 {
        write(root, &format!("d/f{i}"), &i.to_string());
    }
    save(&ws);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // The cache now vouches for every file; a change to one is still seen.
    write(root, "d/f3", "changed");
    save(&ws);
    assert_eq!(
        ws.read_file(&ws.head().unwrap().unwrap(), b"d/f3").unwrap(),
        b"changed"
    );
    assert_eq!(ws.store().stat_cache().unwrap().len(), 20);
    // A row naming an object no snapshot holds (as one a pruned snapshot's file left would).
    let key = StatKey {
        size: 5,
        mtime_ns: 1,
        ctime_ns: 1,
        ino: 1,
        mode: 0o100644,
    };
    let ghost = StatEntry {
        key,
        kind: EntryKind::File,
        id: ObjectId([7; 32]),
        settled: true,
    };
    let put = [(b"d/ghost".to_vec(), ghost)].into_iter().collect();
    let stat_cache = StatCacheUpdate {
        put,
        ..StatCacheUpdate::default()
    };
    ws.store()
        .commit(&Commit {
            stat_cache,
            ..Commit::default()
        })
        .unwrap();
    let trees = ws.store().tree_cache().unwrap().len();
    assert!(trees > 0);
    ws.prune(
        &snap_store::Retention {
            keep_last: 1,
            keep_within_ns: None,
        },
        snap_tree::Run::Apply,
    )
    .unwrap();
    ws.gc().unwrap();
    let rows = ws.store().stat_cache().unwrap();
    assert_eq!(rows.len(), 20, "gc keeps exactly the rows of live objects");
    assert!(rows.iter().all(|(path, _)| path != b"d/ghost"));
    assert_eq!(ws.store().tree_cache().unwrap().len(), trees);
    assert!(ws.store().walk_memo().unwrap().is_some());
    write(root, "d/f4", "changed too");
    save(&ws);
    assert_eq!(
        ws.read_file(&ws.head().unwrap().unwrap(), b"d/f4").unwrap(),
        b"changed too"
    );
    assert!(ws.verify(true).unwrap().problems.is_empty());
    std::fs::remove_file(root.join("d/f5")).unwrap();
    save(&ws);
    assert_eq!(
        ws.store().stat_cache().unwrap().len(),
        19,
        "a deleted file leaves the cache"
    );
}

/// The save path's tree diff (visiting only directories whose ids differ) agrees with the
/// plain diff of two flattened trees, through type changes and nested adds and deletes.
#[test]
fn the_tree_diff_agrees_with_the_flat_diff() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for p in ["a", "b/c", "b/d/e", "f/g", "h", "k/l/m", "k/n", "z"] {
        write(root, p, p);
    }
    std::os::unix::fs::symlink("a", root.join("s")).unwrap();
    save(&ws);
    std::fs::remove_file(root.join("h")).unwrap();
    std::fs::create_dir(root.join("h")).unwrap();
    write(root, "h/inner", "was a file");
    std::fs::remove_dir_all(root.join("f")).unwrap();
    write(root, "f", "was a dir");
    std::fs::remove_dir_all(root.join("k/l")).unwrap();
    write(root, "b/d/e", "changed");
    write(root, "new/deep/x", "added");
    write(root, "a.b", "sibling sorting between a and a/");
    std::fs::remove_file(root.join("s")).unwrap();
    std::os::unix::fs::symlink("z", root.join("s")).unwrap();
    save(&ws);
    let (one, two) = (ws.resolve("#1").unwrap(), ws.resolve("#2").unwrap());
    let (old, new) = (ws.files(&one).unwrap(), ws.files(&two).unwrap());
    let (fast, old_nodes) =
        snap_tree::flat::diff_stored(ws.store(), &one.record.root, &new).unwrap();
    assert_eq!(fast, snap_tree::flat::diff_files(&old, &new));
    assert!(fast.len() >= 8, "{fast:?}");
    for (path, _) in fast.iter().filter(|(_, c)| *c != snap_tree::Change::Added) {
        assert_eq!(
            old_nodes.get(path),
            old.get(path),
            "{}",
            String::from_utf8_lossy(path)
        );
    }
    assert_eq!(ws.changes_of(&two).unwrap(), fast);
}

/// Names of 255 bytes (the Linux limit) in paths of about 4,000 bytes save, undo and redo.
#[test]
fn longest_names_and_deep_paths_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    let long = |c: char| c.to_string().repeat(255);
    let mut rel = String::new();
    // 14 levels: the file's path is 3,839 bytes, under PATH_MAX with the temp dir in front.
    for c in [
        'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n',
    ] {
        rel = if rel.is_empty() {
            long(c)
        } else {
            format!("{rel}/{}", long(c))
        };
    }
    let file = format!("{rel}/{}", long('z'));
    assert!(file.len() > 3800, "{}", file.len());
    write(root, &file, "deep v1");
    save(&ws);
    write(root, &file, "deep v2");
    save(&ws);
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join(&file)).unwrap(),
        "deep v1"
    );
    ws.redo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join(&file)).unwrap(),
        "deep v2"
    );
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// A file rewritten over and over while it is saved: the snapshot holds one version (whole,
/// or as far as the writer had got) or the save fails with "kept changing"; it never
/// records a torn mix of two versions.
#[test]
fn a_file_changing_during_the_save_is_never_recorded_torn() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let ws = Workspace::init(&root, None, false).unwrap();
    let versions: Vec<Vec<u8>> = (0..4u8).map(|v| vec![b'a' + v; 300_000]).collect();
    std::fs::write(root.join("hot"), &versions[0]).unwrap();
    let stop = AtomicBool::new(false);
    let (mut saved, mut refused) = (0, 0);
    /// Stops the writer however the saves end, so that a failed assertion fails the test
    /// instead of leaving the scope waiting for the writer forever.
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let _ = std::fs::write(root.join("hot"), &versions[i % versions.len()]);
            }
        });
        let _stop = StopOnDrop(&stop);
        for _ in 0..15 {
            match ws.save(&SaveOptions {
                allow_empty: true,
                ..SaveOptions::default()
            }) {
                Ok(out) => {
                    saved += 1;
                    let Some(snapshot) = out.snapshot else {
                        continue;
                    };
                    if let Ok(content) = ws.read_file(&snapshot, b"hot") {
                        // The writer truncates, then writes: an empty file or a prefix of one
                        // version is a state the file really had (a loaded machine catches it
                        // mid-write). Torn is bytes of two versions in one snapshot.
                        assert!(
                            versions.iter().any(|v| v.starts_with(&content)),
                            "a torn version of {} bytes was recorded",
                            content.len()
                        );
                    }
                }
                Err(TreeError::Unstable { .. }) => refused += 1,
                Err(e) => panic!("unexpected error: {e}"),
            }
        }
    });
    eprintln!("busy file: {saved} saves recorded a whole version, {refused} refused as changing");
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// A workspace with `file` saved as "first" and then "second" beside `other`, and saved
/// again once the second save's clock tick has passed: `file` was written in that tick, so
/// the cache could not vouch for it; the last save re-hashes it and makes the cache trust
/// it. A move's scan then takes `file` from the cache and never reads it.
fn two_versions_settled(
    file: &str,
    other: &str,
) -> (tempfile::TempDir, std::path::PathBuf, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let ws = Workspace::init(&root, None, false).unwrap();
    write(&root, file, "first\n");
    write(&root, other, "same\n");
    save(&ws);
    write(&root, file, "second\n");
    save(&ws);
    std::thread::sleep(std::time::Duration::from_millis(20));
    save(&ws);
    (dir, root, ws)
}

/// As below, with unsaved changes in another directory: the undo saves them first, reading
/// only that directory and taking the other files' stats from its walk, and still refuses a
/// file there that another process rewrote after the walk.
#[test]
fn a_file_rewritten_during_an_undo_of_unsaved_changes_is_kept_and_undo_refuses() {
    use snap_tree::Event;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_dir, root, mut ws) = two_versions_settled("a/f", "b/g");
    write(&root, "b/g", "unsaved\n");
    let fired = AtomicBool::new(false);
    let writer_root = root.clone();
    ws.set_observer(Box::new(move |e| {
        let walked = matches!(e, Event::Timing { step, .. } if step.starts_with("tree walked"));
        if walked && !fired.swap(true, Ordering::SeqCst) {
            std::fs::write(writer_root.join("a/f"), "written by another process\n").unwrap();
        }
    }));
    // Two steps: the unsaved changes are the first; the second puts `a/f` back to "first".
    let err = ws.undo(2, snap_tree::Run::Apply).unwrap_err();
    assert!(matches!(err, TreeError::ChangedDuringMove { .. }), "{err}");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    assert_eq!(read("a/f"), "written by another process\n");
    assert_eq!(read("b/g"), "unsaved\n");
    let head = ws.head().unwrap().unwrap();
    assert_eq!(
        ws.read_file(&head, b"b/g").unwrap(),
        b"unsaved\n",
        "saved first"
    );
    assert!(!root.join(".snap/.undoing").exists());
}

/// Another process rewrites a file after undo's scan saved it and before undo replaces it:
/// undo refuses before touching anything, and the other process's content is kept.
#[test]
fn a_file_rewritten_during_undo_is_kept_and_undo_refuses() {
    use snap_tree::{Event, Phase};
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_dir, root, mut ws) = two_versions_settled("f", "other");
    let head = ws.head().unwrap().unwrap().id;
    let fired = AtomicBool::new(false);
    let writer_root = root.clone();
    // Right after the walk took every stat: when the walk memo vouches for the tree, as here
    // (the last save saw it as it is), no file is read after it.
    ws.set_observer(Box::new(move |e| {
        let walked = matches!(e, Event::Timing { step, .. } if step.starts_with("tree walked"));
        let scanning = matches!(
            e,
            Event::Progress {
                phase: Phase::Scan,
                ..
            }
        );
        if (walked || scanning) && !fired.swap(true, Ordering::SeqCst) {
            std::fs::write(writer_root.join("f"), "written by another process\n").unwrap();
        }
    }));
    let err = ws.undo(1, snap_tree::Run::Apply).unwrap_err();
    assert!(matches!(err, TreeError::ChangedDuringMove { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(root.join("f")).unwrap(),
        "written by another process\n"
    );
    assert_eq!(ws.head().unwrap().unwrap().id, head, "HEAD must not move");
    assert!(!root.join(".snap/.undoing").exists());
}

/// A no-change save takes HEAD's root from the scan memo instead of building every tree; an
/// empty directory, a symlink's new target or an exec bit is still a change.
#[test]
fn the_scan_memo_never_hides_a_change() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "a/f", "x\n");
    std::os::unix::fs::symlink("a/f", root.join("link")).unwrap();
    save(&ws);
    let created = |ws: &Workspace| ws.save(&SaveOptions::default()).unwrap().snapshot.is_some();
    assert!(!created(&ws), "nothing changed");
    let memo = ws.store().scan_memo().unwrap().unwrap();
    assert_eq!(memo.root, ws.head().unwrap().unwrap().record.root);
    std::fs::create_dir(root.join("empty")).unwrap();
    assert!(created(&ws), "a new empty directory");
    assert!(!created(&ws));
    std::fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join("link")).unwrap();
    assert!(created(&ws), "a symlink's new target");
    let f = root.join("a/f");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(created(&ws), "an exec bit");
    std::fs::remove_dir(root.join("empty")).unwrap();
    assert!(created(&ws), "an empty directory removed");
    assert!(!created(&ws));
}

/// A stop request (SIGTERM in the binary) during an undo stops it between two files: the
/// marker stays, nothing is rolled back, and the next writing open finishes the move.
#[test]
fn a_stopped_undo_keeps_its_marker_and_is_finished_by_the_next_open() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..300 {
        write(root, &format!("f{i:03}"), "old");
    }
    let mut ws = Workspace::init(root, None, false).unwrap();
    save(&ws);
    for i in 0..300 {
        write(root, &format!("f{i:03}"), "new");
    }
    save(&ws);
    let stop = Arc::new(AtomicBool::new(false));
    ws.set_stop_flag(Arc::clone(&stop));
    let flag = Arc::clone(&stop);
    ws.set_observer(Box::new(move |event| {
        let restore = snap_tree::Phase::Restore;
        if matches!(event, snap_tree::Event::Progress { phase, done, .. } if *phase == restore && *done >= 64) {
            flag.store(true, Ordering::Relaxed);
        }
    }));
    let err = ws.undo(1, snap_tree::Run::Apply).unwrap_err();
    assert!(matches!(err, TreeError::Interrupted), "{err}");
    let olds = (0..300)
        .filter(|i| std::fs::read_to_string(root.join(format!("f{i:03}"))).unwrap() == "old")
        .count();
    assert!(
        (64..300).contains(&olds),
        "{olds} files undone before the stop"
    );
    assert_eq!(ws.pending().unwrap().len(), 1, "the marker stays");
    drop(ws);
    let ws = Workspace::discover(root, None).unwrap();
    assert_eq!(ws.recovered().len(), 1);
    assert!(ws.pending().unwrap().is_empty());
    for i in 0..300 {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("f{i:03}"))).unwrap(),
            "old"
        );
    }
    assert!(ws.status().unwrap().changes.is_empty());
    assert_eq!(ws.head().unwrap().unwrap().record.seq, 1);
}
