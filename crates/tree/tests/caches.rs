//! The directory cache and the walk memo never hide a change: after random edits (ignore
//! files at every level included), a walk that trusts the cache finds exactly what a fresh
//! walk finds, and a save that may take its root from the walk memo records exactly what is
//! on disk. Waits for the filesystem clock between steps let records become trusted, so the
//! cached paths are taken, not just the fresh ones.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;
use snap_store::StatKey;
use snap_tree::testing::scan::{DirCacheView, Walk, gone_dirs, walk, walk_excluding};
use snap_tree::{Config, DiffEntry, EntryKind, SaveOptions, Workspace};

const FILES: [&str; 9] = [
    "a",
    "a.log",
    "keep.log",
    "d/x",
    "d/x.log",
    "d/e/z",
    "d/e/keep.log",
    "d/e/f/deep",
    "g/h.log",
];
const RULE_DIRS: [&str; 3] = ["", "d", "d/e"];
const PATTERNS: [&str; 8] = ["*.log", "!keep.log", "x", "e/", "/a", "z", "f", "!*.log"];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Delete(usize),
    Chmod(usize, bool),
    Symlink(usize, usize),
    /// A `.gitignore` (false) or `.snapignore` (true) in one of `RULE_DIRS`.
    Rule(usize, bool, Vec<usize>),
    DropRule(usize, bool),
    /// A directory where a file was, or a file where a directory was.
    Swap(usize),
    /// The file's mtime set back to what it was before its last write.
    Backdate(usize),
    /// The ignore file made a symlink to one of two rule files outside the workspace.
    LinkRule(usize, bool, usize),
    /// One of those outside rule files rewritten in place.
    EditRuleSet(usize, Vec<usize>),
    /// The file rewritten with as many bytes, all different, and its mtime put back.
    SameSize(usize),
    /// Two files swapped by renames, their directories' mtimes put back.
    RenameSwap(usize, usize),
    Tick,
}

fn op() -> impl Strategy<Value = Op> {
    let f = 0..FILES.len();
    let r = 0..RULE_DIRS.len();
    prop_oneof![
        3 => (f.clone(), proptest::collection::vec(any::<u8>(), 0..8)).prop_map(|(i, c)| Op::Write(i, c)),
        1 => f.clone().prop_map(Op::Delete),
        1 => (f.clone(), any::<bool>()).prop_map(|(i, x)| Op::Chmod(i, x)),
        1 => (f.clone(), f.clone()).prop_map(|(i, t)| Op::Symlink(i, t)),
        2 => (r.clone(), any::<bool>(), proptest::collection::vec(0..PATTERNS.len(), 0..3))
            .prop_map(|(d, s, p)| Op::Rule(d, s, p)),
        1 => (r.clone(), any::<bool>()).prop_map(|(d, s)| Op::DropRule(d, s)),
        1 => f.clone().prop_map(Op::Swap),
        1 => f.clone().prop_map(Op::Backdate),
        1 => (r.clone(), any::<bool>(), 0..2usize).prop_map(|(d, s, n)| Op::LinkRule(d, s, n)),
        1 => (0..2usize, proptest::collection::vec(0..PATTERNS.len(), 0..3))
            .prop_map(|(n, p)| Op::EditRuleSet(n, p)),
        1 => f.clone().prop_map(Op::SameSize),
        1 => (f.clone(), f).prop_map(|(i, j)| Op::RenameSwap(i, j)),
        3 => Just(Op::Tick),
    ]
}

/// Edits of files only: with the ignore rules fixed, HEAD after an undo is what is on disk.
/// (An undo that brings back other rules can leave files the old rules tracked.)
fn file_op() -> impl Strategy<Value = Op> {
    let f = 0..FILES.len();
    prop_oneof![
        3 => (f.clone(), proptest::collection::vec(any::<u8>(), 0..8)).prop_map(|(i, c)| Op::Write(i, c)),
        1 => f.clone().prop_map(Op::Delete),
        1 => (f.clone(), any::<bool>()).prop_map(|(i, x)| Op::Chmod(i, x)),
        1 => (f.clone(), f.clone()).prop_map(|(i, t)| Op::Symlink(i, t)),
        1 => f.clone().prop_map(Op::Swap),
        1 => (f.clone(), f).prop_map(|(i, j)| Op::RenameSwap(i, j)),
    ]
}

fn rule_path(root: &Path, dir: usize, snap: bool) -> std::path::PathBuf {
    let name = if snap { ".snapignore" } else { ".gitignore" };
    root.join(RULE_DIRS[dir]).join(name)
}

/// Removes whatever is at `path` (file, link or directory).
fn clear(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

/// Makes `path`'s parent a directory, clearing a file or link in the way.
fn parents(root: &Path, path: &Path) {
    let mut at = root.to_path_buf();
    let rel = path.strip_prefix(root).unwrap();
    for part in rel.parent().unwrap().components() {
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            clear(&at);
            std::fs::create_dir(&at).unwrap();
        }
    }
}

/// One of the two rule files outside the workspace that `LinkRule` points at.
fn rule_set(root: &Path, set: usize) -> std::path::PathBuf {
    root.parent().unwrap().join(format!("rules{set}"))
}

/// Swaps two regular files by renames, then puts their directories' mtimes back, as a tool
/// that restores timestamps (rsync -a, tar -x) would leave them.
fn swap_files(a: &Path, b: &Path) {
    let is_file = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    if a == b || !is_file(a) || !is_file(b) {
        return;
    }
    let dirs = [a.parent().unwrap(), b.parent().unwrap()];
    let times: Vec<_> = dirs
        .iter()
        .map(|d| std::fs::metadata(d).unwrap().modified().unwrap())
        .collect();
    let tmp = a.with_extension("swap-tmp");
    std::fs::rename(a, &tmp).unwrap();
    std::fs::rename(b, a).unwrap();
    std::fs::rename(&tmp, b).unwrap();
    for (dir, time) in dirs.iter().zip(times) {
        std::fs::File::open(dir)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }
}

fn apply(root: &Path, op: &Op) {
    let file = |i: usize| root.join(FILES[i]);
    match op {
        Op::Write(i, content) => {
            let p = file(*i);
            parents(root, &p);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_file()) {
                clear(&p);
            }
            std::fs::write(&p, content).unwrap();
        }
        Op::Delete(i) => clear(&file(*i)),
        Op::Chmod(i, exec) => {
            if std::fs::symlink_metadata(file(*i)).is_ok_and(|m| m.is_file()) {
                let mode = if *exec { 0o755 } else { 0o644 };
                std::fs::set_permissions(file(*i), std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
        Op::Symlink(i, target) => {
            let p = file(*i);
            parents(root, &p);
            clear(&p);
            std::os::unix::fs::symlink(FILES[*target], &p).unwrap();
        }
        Op::Rule(dir, snap, patterns) => {
            let p = rule_path(root, *dir, *snap);
            parents(root, &p);
            // Rewritten in place when it is a file: its directory's stat does not change.
            if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_file()) {
                clear(&p);
            }
            let text: String = patterns
                .iter()
                .map(|&i| format!("{}\n", PATTERNS[i]))
                .collect();
            std::fs::write(p, text).unwrap();
        }
        Op::DropRule(dir, snap) => clear(&rule_path(root, *dir, *snap)),
        Op::Swap(i) => {
            let p = file(*i);
            let was_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
            parents(root, &p);
            clear(&p);
            if was_dir {
                std::fs::write(&p, b"was a dir").unwrap();
            } else {
                std::fs::create_dir(&p).unwrap();
                std::fs::write(p.join("inner"), b"in").unwrap();
            }
        }
        Op::Backdate(i) => {
            let p = file(*i);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
                let f = std::fs::File::options().write(true).open(&p).unwrap();
                f.set_modified(old).unwrap();
            }
        }
        Op::LinkRule(dir, snap, set) => {
            let p = rule_path(root, *dir, *snap);
            parents(root, &p);
            clear(&p);
            std::os::unix::fs::symlink(rule_set(root, *set), &p).unwrap();
        }
        Op::EditRuleSet(set, patterns) => {
            let text: String = patterns
                .iter()
                .map(|&i| format!("{}\n", PATTERNS[i]))
                .collect();
            std::fs::write(rule_set(root, *set), text).unwrap();
        }
        Op::SameSize(i) => {
            let p = file(*i);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                let old = std::fs::metadata(&p).unwrap().modified().unwrap();
                let flipped: Vec<u8> = std::fs::read(&p).unwrap().iter().map(|b| !b).collect();
                std::fs::write(&p, flipped).unwrap();
                let f = std::fs::File::options().write(true).open(&p).unwrap();
                f.set_modified(old).unwrap();
            }
        }
        Op::RenameSwap(i, j) => swap_files(&file(*i), &file(*j)),
        // Longer than a coarse clock tick, so that records written before it are trusted.
        Op::Tick => settle(root),
    }
}

/// The filesystem's clock, as a scan takes it: the mtime of a file just written.
fn fs_now(clock: &Path) -> i64 {
    std::fs::write(clock, b"x").unwrap();
    let m = std::fs::metadata(clock).unwrap();
    snap_tree::testing::scan::stat_key(&m).mtime_ns
}

/// Waits until the filesystem clock has passed every mtime and ctime under `root`, so that
/// what a scan records from now on is trusted by the next scan, whatever the clock's tick
/// and the machine's load.
fn settle(root: &Path) {
    let newest = newest_stamp(root);
    let probe = tempfile::NamedTempFile::new().unwrap();
    for _ in 0..2000 {
        if fs_now(probe.path()) > newest {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the filesystem clock did not pass {newest}");
}

fn newest_stamp(path: &Path) -> i64 {
    let meta = std::fs::symlink_metadata(path).unwrap();
    let key = snap_tree::testing::scan::stat_key(&meta);
    let mut newest = key.mtime_ns.max(key.ctime_ns);
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            newest = newest.max(newest_stamp(&entry.unwrap().path()));
        }
    }
    newest
}

type Summary = (
    Vec<(Vec<u8>, EntryKind, Option<StatKey>)>,
    Vec<(Vec<u8>, u64)>,
    u64,
);

fn summary(w: &Walk) -> Summary {
    let mut entries = w.entries.clone();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    (entries, w.too_large.clone(), w.special)
}

/// One walk with the cache, checked against a fresh one; the cache then takes its update.
fn cached_walk_matches(
    root: &Path,
    clock: &Path,
    records: &mut snap_store::PathMap<Vec<u8>, Vec<u8>>,
) -> Result<u64, TestCaseError> {
    let config = Config::default();
    let view = DirCacheView {
        records,
        fs_now_ns: fs_now(clock),
    };
    let cached = walk_excluding(root, &config, None, view).unwrap();
    let fresh = walk(root, &config).unwrap();
    prop_assert_eq!(summary(&cached), summary(&fresh));
    prop_assert_eq!(cached.sum(), fresh.sum());
    for dir in gone_dirs(records, &cached) {
        records.remove(&dir);
    }
    records.extend(cached.dirs.iter().cloned());
    Ok(cached.dirs_cached)
}

/// HEAD holds exactly what a fresh walk finds, with the contents on disk.
fn head_matches_disk(ws: &Workspace, root: &Path) -> Result<(), TestCaseError> {
    let fresh = walk(root, ws.config()).unwrap();
    let head = ws.head().unwrap().unwrap();
    let flat = ws.files(&head).unwrap();
    let got: Vec<(Vec<u8>, EntryKind)> = flat.iter().map(|(p, n)| (p.clone(), n.kind)).collect();
    let want: Vec<(Vec<u8>, EntryKind)> =
        fresh.entries.iter().map(|e| (e.0.clone(), e.1)).collect();
    prop_assert_eq!(got, want);
    for (path, node) in flat.iter() {
        let abs = root.join(std::str::from_utf8(path).unwrap());
        let on_disk = match node.kind {
            EntryKind::Dir => continue,
            EntryKind::Symlink => std::fs::read_link(&abs)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes(),
            _ => std::fs::read(&abs).unwrap(),
        };
        prop_assert_eq!(ws.read_file(&head, path).unwrap(), on_disk, "{:?}", abs);
    }
    Ok(())
}

/// The diff of `old` to `new`, as `Workspace::diff` gives it.
fn diff_entries(old: &snap_tree::FlatTree, new: &snap_tree::FlatTree) -> Vec<DiffEntry> {
    let file = |flat: &snap_tree::FlatTree, path: &[u8]| {
        flat.get(path).copied().filter(|n| n.kind != EntryKind::Dir)
    };
    snap_tree::flat::diff_files(old, new)
        .into_iter()
        .map(|(path, change)| DiffEntry {
            old: file(old, &path),
            new: file(new, &path),
            path,
            change,
        })
        .collect()
}

/// A snapshot's record counts what its tree holds, and the save reported exactly the paths
/// that differ from the tree before it, however much of the tree the scan left out.
fn record_matches(
    ws: &Workspace,
    snapshot: &snap_tree::Snapshot,
    before: &snap_tree::FlatTree,
    changes: &[snap_tree::PathChange],
) -> Result<(), TestCaseError> {
    let flat = ws.files(snapshot).unwrap();
    let files: Vec<_> = flat.values().filter(|n| n.kind != EntryKind::Dir).collect();
    prop_assert_eq!(snapshot.record.stats.files, files.len() as u64);
    prop_assert_eq!(
        snapshot.record.stats.bytes,
        files.iter().map(|n| n.size).sum::<u64>()
    );
    prop_assert_eq!(changes.to_vec(), snap_tree::flat::diff_files(before, &flat));
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<u64, TestCaseError> {
    run_in(&std::env::temp_dir(), ops)
}

/// [`run`] in a new directory under `base` (which may be another filesystem).
fn run_in(base: &Path, ops: Vec<Op>) -> Result<u64, TestCaseError> {
    let dir = tempfile::tempdir_in(base).unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let clock = dir.path().join("clock");
    let ws = Workspace::init(&root, None, false).unwrap();
    let mut records = snap_store::PathMap::default();
    let mut trusted = 0;
    for op in &ops {
        apply(&root, op);
        trusted += cached_walk_matches(&root, &clock, &mut records)?;
        // A save that finds nothing changed leaves HEAD as it was: then HEAD must still be
        // what is on disk.
        let head = ws.head().unwrap();
        let before = head
            .as_ref()
            .map(|h| ws.files(h).unwrap())
            .unwrap_or_default();
        let status = ws.status().unwrap();
        let had_head = status.head.is_some();
        let (status, dirs) = (status.changes, status.dirs);
        let diff = ws.diff(None, None, &[]).unwrap().entries;
        // From the first snapshot, which the tree cache knows nothing of after a few saves.
        let first = ws.resolve("#1").ok();
        let from_first = (first.as_ref()).map(|_| ws.diff(Some("#1"), None, &[]).unwrap().entries);
        let saved = ws
            .save(&SaveOptions {
                message: format!("{op:?}"),
                ..SaveOptions::default()
            })
            .unwrap();
        // Status and diff answer from the same caches as the save, and must name what it
        // then saved, with the entries on each side.
        prop_assert_eq!(&status, &saved.changes);
        // Status is clean exactly when the save records nothing.
        prop_assert_eq!(
            status.is_empty() && dirs.is_empty() && had_head,
            saved.snapshot.is_none(),
            "status {:?} / dirs {:?}",
            status,
            dirs
        );
        let after = match &saved.snapshot {
            Some(snapshot) => ws.files(snapshot).unwrap(),
            None => before.clone(),
        };
        prop_assert_eq!(&diff, &diff_entries(&before, &after));
        if let (Some(first), Some(from_first)) = (&first, &from_first) {
            let whole = diff_entries(&ws.files(first).unwrap(), &after);
            prop_assert_eq!(from_first, &whole, "#1 to the working tree");
        }
        // Between two snapshots, diff reads only the directories whose trees differ.
        if let (Some(head), Some(snapshot)) = (&head, &saved.snapshot) {
            let (from, to) = (head.record.seq, snapshot.record.seq);
            let between = ws.diff(Some(&format!("#{from}")), Some(&format!("#{to}")), &[]);
            prop_assert_eq!(&between.unwrap().entries, &diff, "#{} to #{}", from, to);
        }
        head_matches_disk(&ws, &root)?;
        if let Some(snapshot) = saved.snapshot {
            record_matches(&ws, &snapshot, &before, &saved.changes)?;
        }
    }
    Ok(trusted)
}

/// Runs `cases` random cases of `strategy` through `case`, panicking with proptest's
/// minimal failing case; returns the sum of what the cases counted (how often the path under
/// test was taken, so that a caller can check it was).
fn count_cases<S: Strategy>(
    cases: u32,
    strategy: S,
    case: impl Fn(S::Value) -> Result<u64, TestCaseError>,
) -> u64 {
    let counted = std::cell::Cell::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    let outcome = runner.run(&strategy, |value| {
        counted.set(counted.get() + case(value)?);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    counted.get()
}

#[test]
fn the_caches_never_hide_a_change() {
    let ops = proptest::collection::vec(op(), 1..30);
    let trusted = count_cases(40, ops, run);
    assert!(trusted > 0, "no walk ever took a record from the cache");
}

/// The cached path is taken: after a tick, an unchanged tree is walked from the cache alone,
/// and a save after a save builds no trees (its root comes from the walk memo).
#[test]
fn an_unchanged_tree_is_walked_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    for f in FILES {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, f).unwrap();
    }
    std::fs::write(root.join("d/.gitignore"), "*.log\n").unwrap();
    let clock = dir.path().join("clock");
    let mut records = snap_store::PathMap::default();
    settle(&root);
    assert_eq!(cached_walk_matches(&root, &clock, &mut records).unwrap(), 0);
    let dirs = records.len() as u64;
    assert_eq!(dirs, 5, "the root, d, d/e, d/e/f and g");
    assert_eq!(
        cached_walk_matches(&root, &clock, &mut records).unwrap(),
        dirs
    );
    // A rule file changes in place: its directory and everything below it are read again.
    std::fs::write(root.join("d/.gitignore"), "*.rs\n").unwrap();
    settle(&root);
    assert_eq!(cached_walk_matches(&root, &clock, &mut records).unwrap(), 2);
    assert_eq!(
        cached_walk_matches(&root, &clock, &mut records).unwrap(),
        dirs
    );
}

/// The walk memo is only taken for a tree that stats exactly as that walk saw it.
#[test]
fn the_walk_memo_never_hides_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::create_dir(root.join("a")).unwrap();
    std::fs::write(root.join("a/f"), "one\n").unwrap();
    std::os::unix::fs::symlink("a/f", root.join("link")).unwrap();
    let created = |ws: &Workspace| ws.save(&SaveOptions::default()).unwrap().snapshot.is_some();
    assert!(created(&ws));
    settle(root);
    assert!(!created(&ws), "nothing changed");
    let memo = ws.store().walk_memo().unwrap().unwrap();
    assert_eq!(memo.root, ws.head().unwrap().unwrap().record.root);
    // Same size, mtime put back: the ctime still differs.
    let f = root.join("a/f");
    let before = std::fs::metadata(&f).unwrap().modified().unwrap();
    std::fs::write(&f, "two\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(before)
        .unwrap();
    assert!(created(&ws), "a same-size edit with its mtime put back");
    settle(root);
    std::fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join("link")).unwrap();
    assert!(created(&ws), "a symlink's new target");
    std::fs::create_dir(root.join("a/empty")).unwrap();
    assert!(created(&ws), "a new empty directory");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(created(&ws), "an exec bit");
    assert!(!created(&ws));
    assert_eq!(
        ws.read_file(&ws.head().unwrap().unwrap(), b"a/f").unwrap(),
        b"two\n"
    );
}

/// A save after an edit rebuilds only the trees on the edited file's path: the other
/// directories' tree cache entries stay as they were, and the snapshot is still exact.
#[test]
fn an_edit_rebuilds_only_the_trees_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for f in ["a/b/f", "a/c/g", "h/i", "top"] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, f).unwrap();
    }
    let tick = || settle(root);
    tick();
    ws.save(&SaveOptions::default()).unwrap();
    let before = ws.store().tree_cache().unwrap();
    let mut dirs: Vec<&[u8]> = before.keys().map(Vec::as_slice).collect();
    dirs.sort();
    assert_eq!(dirs, [&b""[..], b"a", b"a/b", b"a/c", b"h"]);
    tick();
    std::fs::write(root.join("a/b/f"), "edited").unwrap();
    tick();
    let saved = ws.save(&SaveOptions::default()).unwrap();
    assert!(saved.snapshot.is_some());
    let after = ws.store().tree_cache().unwrap();
    for (dir, memo) in &after {
        let rebuilt = memo != &before[dir];
        let on_path = [&b""[..], b"a", b"a/b"].contains(&dir.as_slice());
        assert_eq!(rebuilt, on_path, "{}", String::from_utf8_lossy(dir));
    }
    head_matches_disk(&ws, root).unwrap();
}

/// HEAD can differ from the disk under a directory the tree cache vouches for (here HEAD is
/// moved back by hand, as a crash between a restore and its commit could leave it). The save
/// then cannot diff against HEAD from the pruned scan: it scans the whole tree again, and
/// reports and records the same as a scan that pruned nothing.
#[test]
fn a_head_that_differs_under_a_pruned_directory_is_diffed_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    let tick = || settle(root);
    for (f, text) in [("d/f", "one"), ("e/g", "x")] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), text).unwrap();
    }
    tick();
    let first = ws.save(&SaveOptions::default()).unwrap().snapshot.unwrap();
    tick();
    std::fs::write(root.join("d/f"), "two!").unwrap();
    tick();
    ws.save(&SaveOptions::default()).unwrap().snapshot.unwrap();
    ws.store()
        .commit(&snap_store::Commit {
            history: Some(snap_store::HistoryState {
                head: Some(first.id),
                redo: Vec::new(),
            }),
            ..Default::default()
        })
        .unwrap();
    tick();
    std::fs::write(root.join("e/g"), "y").unwrap();
    tick();
    let before = ws.files(&first).unwrap();
    let status = ws.status().unwrap().changes;
    let saved = ws.save(&SaveOptions::default()).unwrap();
    let snapshot = saved.snapshot.unwrap();
    let paths: Vec<&[u8]> = saved.changes.iter().map(|(p, _)| p.as_slice()).collect();
    assert_eq!(paths, [&b"d/f"[..], b"e/g"]);
    assert_eq!(status, saved.changes, "status takes the same fallback");
    record_matches(&ws, &snapshot, &before, &saved.changes).unwrap();
    head_matches_disk(&ws, root).unwrap();
}

/// An ext4 image with 128-byte inodes, which store timestamps in whole seconds, loop-mounted
/// at a temporary directory and unmounted on drop. `None` where that is not allowed (not
/// root, no loop devices, no mkfs.ext4).
struct CoarseFs {
    dir: tempfile::TempDir,
    _image: tempfile::TempDir,
}

impl CoarseFs {
    fn mount() -> Option<CoarseFs> {
        let run = |cmd: &mut std::process::Command| cmd.output().is_ok_and(|o| o.status.success());
        let image = tempfile::tempdir().ok()?;
        let file = image.path().join("fs.img");
        std::fs::File::create(&file).ok()?.set_len(64 << 20).ok()?;
        let made = run(std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-I", "128"])
            .arg(&file));
        let dir = tempfile::tempdir().ok()?;
        let mounted = made
            && run(std::process::Command::new("mount")
                .args(["-o", "loop"])
                .arg(&file)
                .arg(dir.path()));
        mounted.then_some(CoarseFs { dir, _image: image })
    }
}

impl Drop for CoarseFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .output();
    }
}

/// On a filesystem whose timestamps are whole seconds, every edit of a step lands in the
/// tick of the scan before it: only the racy rule (mtime and ctime strictly before the
/// scan's clock) stands between the caches and a missed change. The same oracle as above,
/// without waits between steps, so changes come inside one tick.
#[test]
fn the_caches_never_hide_a_change_on_one_second_timestamps() {
    let Some(fs) = CoarseFs::mount() else {
        eprintln!("cannot loop-mount an ext4 image here (needs root); skipping");
        return;
    };
    let probe = fs.dir.path().join("probe");
    assert_eq!(
        fs_now(&probe) % 1_000_000_000,
        0,
        "the image does not have 1 s timestamps"
    );
    // An mtime set back (cp -p, tar -x), then same-size rewrites in the same second with the
    // mtime put back each time: every cached field is equal, and only the ctime (not
    // before the scan's clock) says the cached verdict cannot be trusted. Fails when the
    // racy rule checks the mtime alone.
    let rewrites = vec![
        Op::Write(0, b"abcd".to_vec()),
        Op::Backdate(0),
        Op::SameSize(0),
        Op::SameSize(0),
    ];
    run_in(fs.dir.path(), rewrites).unwrap();
    let quick = op().prop_filter("no waits", |o| !matches!(o, Op::Tick));
    count_cases(12, proptest::collection::vec(quick, 1..20), |ops| {
        run_in(fs.dir.path(), ops).map(|_| 0)
    });
}

/// Counts the scans `ws` makes from now on (its captures that read and store files, which a
/// capture the walk memo answers does not).
fn count_scans(ws: &mut Workspace) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let scans = std::sync::Arc::new(AtomicU64::new(0));
    let counted = std::sync::Arc::clone(&scans);
    ws.set_observer(Box::new(move |e| {
        if matches!(e, snap_tree::Event::Timing { step, .. } if step.starts_with("files stored")) {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    }));
    scans
}

/// An undo or redo that finds the tree as the walk memo left it reads nothing: it unfolds
/// HEAD's stored tree only where the target differs (`flat::unfold_against`). It must still
/// leave exactly the target on disk, and name exactly the changes a full diff names.
fn undo_and_redo_from_the_memo(first: Vec<Op>, second: Vec<Op>) -> Result<u64, TestCaseError> {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    let scans = count_scans(&mut ws);
    let save_settled = |ops: &[Op]| {
        ops.iter().for_each(|op| apply(&root, op));
        settle(&root);
        ws.save(&SaveOptions::default()).unwrap();
    };
    save_settled(&first);
    save_settled(&second);
    let log = ws.log(false).unwrap();
    if log.len() < 2 {
        return Ok(0);
    }
    let (a, b) = (
        ws.files(&log[1].snapshot).unwrap(),
        ws.files(&log[0].snapshot).unwrap(),
    );
    settle(&root);
    let before = scans.load(Ordering::Relaxed);
    let undone = ws.undo(1, snap_tree::Run::Apply).unwrap();
    let from_memo = u64::from(scans.load(Ordering::Relaxed) == before);
    prop_assert_eq!(&undone.changes, &snap_tree::flat::diff_files(&b, &a));
    prop_assert!(!undone.was_dirty);
    head_matches_disk(&ws, &root)?;
    settle(&root);
    let redone = ws.redo(1, snap_tree::Run::Apply).unwrap();
    prop_assert_eq!(&redone.changes, &snap_tree::flat::diff_files(&a, &b));
    head_matches_disk(&ws, &root)?;
    Ok(from_memo)
}

#[test]
fn an_undo_from_the_walk_memo_moves_exactly_to_its_target() {
    let ops = || proptest::collection::vec(file_op(), 1..12);
    let from_memo = count_cases(48, (ops(), ops()), |(first, second)| {
        undo_and_redo_from_the_memo(first, second)
    });
    assert!(from_memo > 0, "no undo was answered by the walk memo");
}

/// An undo through the walk memo to a snapshot whose tree is HEAD's own (an edit saved, then
/// reverted by hand and saved) has nothing to do: it names no change and touches nothing.
#[test]
fn an_undo_from_the_memo_to_the_same_tree_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let ws = Workspace::init(&root, None, false).unwrap();
    let files = ["a", "d/x", "d/e/z"];
    for f in files {
        apply(
            &root,
            &Op::Write(FILES.iter().position(|p| *p == f).unwrap(), b"1".to_vec()),
        );
    }
    let save_settled = || {
        settle(&root);
        ws.save(&SaveOptions::default()).unwrap();
    };
    save_settled();
    std::fs::write(root.join("d/e/z"), b"2").unwrap();
    save_settled();
    std::fs::write(root.join("d/e/z"), b"1").unwrap();
    save_settled();
    settle(&root);
    let stamps = || -> Vec<i64> {
        ["d", "a", "d/x", "d/e", "d/e/z"]
            .iter()
            .map(|p| newest_stamp(&root.join(p)))
            .collect()
    };
    let before = stamps();
    let undone = ws.undo(2, snap_tree::Run::Apply).unwrap();
    assert!(undone.changes.is_empty(), "{:?}", undone.changes);
    assert_eq!(undone.target.record.seq, 1);
    assert_eq!(stamps(), before, "the undo touched the tree");
    head_matches_disk(&ws, &root).unwrap();
}

/// An undo right after a save finds files modified in the save's own clock tick, which the
/// walk memo cannot vouch for by stat: it reads those again, and when they hold HEAD's
/// content it still takes the memo (reading nothing else) and moves exactly to its target.
#[test]
fn an_undo_right_after_a_save_rereads_only_the_racy_files() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    for (i, f) in FILES
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.ends_with(".log"))
    {
        apply(&root, &Op::Write(i, f.as_bytes().to_vec()));
    }
    ws.save(&SaveOptions::default()).unwrap();
    let scans = count_scans(&mut ws);
    for round in 0..5u8 {
        let before = ws.files(&ws.head().unwrap().unwrap()).unwrap();
        std::fs::write(root.join("d/x"), [b'x', round]).unwrap();
        std::fs::write(root.join("d/e/f/deep"), [b'd', round, round]).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
        let after = ws.files(&ws.head().unwrap().unwrap()).unwrap();
        let scanned = scans.load(Ordering::Relaxed);
        let undone = ws.undo(1, snap_tree::Run::Apply).unwrap();
        assert_eq!(
            scans.load(Ordering::Relaxed),
            scanned,
            "round {round} scanned"
        );
        assert!(!undone.was_dirty);
        assert_eq!(undone.changes, snap_tree::flat::diff_files(&after, &before));
        head_matches_disk(&ws, &root).unwrap();
        ws.redo(1, snap_tree::Run::Apply).unwrap();
        head_matches_disk(&ws, &root).unwrap();
    }
}

/// What a fresh walk finds on disk: each tracked path with its kind and content.
fn disk_picture(root: &Path) -> Vec<(Vec<u8>, EntryKind, Vec<u8>)> {
    let fresh = walk(root, &Config::default()).unwrap();
    let mut entries = fresh.entries;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
        .into_iter()
        .map(|(path, kind, _)| {
            let abs = root.join(std::str::from_utf8(&path).unwrap());
            let bytes = match kind {
                EntryKind::Dir => Vec::new(),
                EntryKind::Symlink => std::fs::read_link(&abs)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
                _ => std::fs::read(&abs).unwrap(),
            };
            (path, kind, bytes)
        })
        .collect()
}

/// What snapshot `snapshot` holds, as [`disk_picture`] draws the disk.
fn snapshot_picture(
    ws: &Workspace,
    snapshot: &snap_tree::Snapshot,
) -> Vec<(Vec<u8>, EntryKind, Vec<u8>)> {
    let flat = ws.files(snapshot).unwrap();
    flat.iter()
        .map(|(path, node)| {
            let bytes = match node.kind {
                EntryKind::Dir => Vec::new(),
                _ => ws.read_file(snapshot, path).unwrap(),
            };
            (path.clone(), node.kind, bytes)
        })
        .collect()
}

#[derive(Clone, Debug)]
enum Step {
    Edit(Op),
    Tick,
    Save,
    Move(Move),
    /// Prune to the last two snapshots (HEAD's chain and the redo stack stay), then gc.
    Gc,
}

/// Edits of files, including those a stat barely sees (same size with the mtime put back,
/// an mtime set back, renames with the directories' mtimes put back).
fn edit_op() -> impl Strategy<Value = Op> {
    let f = 0..FILES.len();
    prop_oneof![
        4 => file_op(),
        1 => f.clone().prop_map(Op::SameSize),
        1 => f.prop_map(Op::Backdate),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => edit_op().prop_map(Step::Edit),
        2 => Just(Step::Tick),
        1 => Just(Step::Save),
        3 => Just(Step::Move(Move::Undo)),
        3 => Just(Step::Move(Move::Redo)),
        2 => (1u64..=2).prop_map(|seq| Step::Move(Move::Restore(seq))),
        2 => (1u64..=2, 0..RESTORED.len()).prop_map(|(seq, p)| Step::Move(Move::RestorePath(seq, p))),
        1 => Just(Step::Gc),
    ]
}

/// A move the property tests make.
#[derive(Clone, Copy, Debug)]
enum Move {
    Undo,
    Redo,
    /// A whole-tree restore of the snapshot of this number.
    Restore(u64),
    /// A restore of one path (`RESTORED`) of the snapshot of this number.
    RestorePath(u64, usize),
}

/// Paths a restore of some paths names: directories, files, and one that is never there.
const RESTORED: [&str; 6] = ["d", "d/e", "a", "d/e/f/deep", "g", "nowhere"];

/// One undo, redo or restore checked against the disk: it finds the tree dirty exactly when
/// the disk is not HEAD, saves first exactly what was on disk, and leaves exactly its target
/// (a restore: the source's tree, recorded with its totals). Returns whether it moved and
/// whether it took the walk memo (read no file but racy ones).
fn checked_move(
    ws: &Workspace,
    root: &Path,
    mv: Move,
    scans: &std::sync::atomic::AtomicU64,
) -> Result<(bool, bool), TestCaseError> {
    use std::sync::atomic::Ordering;
    let before = disk_picture(root);
    let head = ws.head().unwrap().unwrap();
    let dirty = before != snapshot_picture(ws, &head);
    let source = |seq: u64| ws.resolve(&format!("#{seq}")).is_ok();
    let make = |run: snap_tree::Run| match mv {
        Move::Undo => ws.undo(1, run),
        Move::Redo => ws.redo(1, run),
        Move::Restore(seq) => ws.restore(&format!("#{seq}"), &[], run),
        Move::RestorePath(seq, p) => {
            let paths = [RESTORED[p].as_bytes().to_vec()];
            ws.restore(&format!("#{seq}"), &paths, run)
        }
    };
    if let Move::Restore(seq) | Move::RestorePath(seq, _) = mv
        && !source(seq)
    {
        return Ok((false, false));
    }
    // A dry run first (it reads, and writes nothing): it must foresee the move.
    let preview = make(snap_tree::Run::DryRun);
    let counted = scans.load(Ordering::Relaxed);
    let moved = make(snap_tree::Run::Apply);
    match (&preview, &moved) {
        (Ok(preview), Ok(moved)) => {
            prop_assert_eq!(
                &preview.changes,
                &moved.changes,
                "{:?}: dry run's changes",
                mv
            );
            prop_assert_eq!(
                preview.was_dirty,
                moved.was_dirty,
                "{:?}: dry run's dirty",
                mv
            );
        }
        (preview, moved) => prop_assert_eq!(
            preview.as_ref().err().map(|e| e.to_string()),
            moved.as_ref().err().map(|e| e.to_string()),
            "{:?}: dry run's outcome",
            mv
        ),
    }
    let moved = match moved {
        Ok(moved) => moved,
        Err(
            snap_tree::TreeError::NothingToUndo(_)
            | snap_tree::TreeError::NothingToRedo(_)
            | snap_tree::TreeError::PathNotInSnapshot(..),
        ) => return Ok((false, false)),
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    prop_assert_eq!(moved.was_dirty, dirty, "{:?}: dirty", mv);
    if let Some(saved) = &moved.auto_saved {
        prop_assert_eq!(&snapshot_picture(ws, saved), &before, "saved first");
        let stats = &saved.record.stats;
        prop_assert_eq!(
            (stats.files, stats.bytes),
            totals(&before),
            "saved first: totals"
        );
    }
    prop_assert!(moved.kept.is_empty(), "kept {:?}", moved.kept);
    let head = ws.head().unwrap().unwrap();
    let after = disk_picture(root);
    prop_assert_eq!(&after, &snapshot_picture(ws, &head));
    if let Move::Restore(seq) = mv {
        let source = ws.resolve(&format!("#{seq}")).unwrap();
        prop_assert_eq!(&after, &snapshot_picture(ws, &source), "restored");
        let stats = &head.record.stats;
        prop_assert_eq!(
            (stats.files, stats.bytes),
            totals(&after),
            "restore's totals"
        );
    }
    if let Move::RestorePath(seq, p) = mv {
        let source = ws.resolve(&format!("#{seq}")).unwrap();
        let within = |picture: Vec<(Vec<u8>, EntryKind, Vec<u8>)>| -> Vec<_> {
            let p = RESTORED[p].as_bytes();
            let inside = |path: &[u8]| {
                path == p || (path.starts_with(p) && path.get(p.len()) == Some(&b'/'))
            };
            picture
                .into_iter()
                .filter(|(path, _, _)| inside(path))
                .collect()
        };
        let restored = within(snapshot_picture(ws, &source));
        prop_assert_eq!(within(after.clone()), restored, "restored {}", RESTORED[p]);
        let stats = &head.record.stats;
        prop_assert_eq!(
            (stats.files, stats.bytes),
            totals(&after),
            "restore's totals"
        );
    }
    Ok((true, scans.load(Ordering::Relaxed) == counted))
}

/// Files (and symlinks) in a picture, and their bytes: what a snapshot of it records.
fn totals(picture: &[(Vec<u8>, EntryKind, Vec<u8>)]) -> (u64, u64) {
    let files = picture
        .iter()
        .filter(|(_, kind, _)| *kind != EntryKind::Dir);
    (
        files.clone().count() as u64,
        files.map(|f| f.2.len() as u64).sum(),
    )
}

/// Steps of undo, redo, save and edits (some in the clock tick of the move before them).
/// Returns how many moves right after a move took the walk memo that move left.
fn moves_against_the_disk(base: &Path, steps: Vec<Step>) -> Result<u64, TestCaseError> {
    let dir = tempfile::tempdir_in(base).unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    let scans = count_scans(&mut ws);
    let rounds: [&[&str]; 2] = [&["a", "d/x"], &["a", "d/e/z", "d/e/f/deep"]];
    for (round, files) in rounds.iter().enumerate() {
        for f in *files {
            let i = FILES.iter().position(|p| p == f).unwrap();
            apply(&root, &Op::Write(i, vec![b'0' + round as u8; 3]));
        }
        settle(&root);
        ws.save(&SaveOptions::default()).unwrap();
    }
    let (mut after_move, mut from_memo) = (false, 0);
    for step in &steps {
        match step {
            Step::Edit(op) => apply(&root, op),
            Step::Tick => settle(&root),
            Step::Save => {
                let head = ws.head().unwrap().unwrap();
                let clean = disk_picture(&root) == snapshot_picture(&ws, &head);
                let saved = ws.save(&SaveOptions::default()).unwrap();
                prop_assert_eq!(saved.snapshot.is_none(), clean, "save after {:?}", steps);
                head_matches_disk(&ws, &root)?;
                after_move = false;
            }
            Step::Gc => {
                let keep = snap_store::Retention {
                    keep_last: 2,
                    keep_within_ns: None,
                };
                ws.prune(&keep, snap_tree::Run::Apply).unwrap();
                ws.gc().unwrap();
            }
            Step::Move(mv) => {
                let (moved, memo) = checked_move(&ws, &root, *mv, &scans)?;
                from_memo += u64::from(moved && memo && after_move);
                after_move |= moved;
            }
        }
    }
    Ok(from_memo)
}

/// A move leaves a walk memo of the tree it made, built from the walk before it and the
/// directories it touched, read again (FORMAT 6.4). That memo must never hide a change:
/// after random undos, redos, saves and edits, some in the clock tick of the move before
/// them, every move finds the tree dirty exactly when the disk is not HEAD and saves first
/// exactly what is on disk, and every save records exactly what is on disk.
#[test]
fn the_memo_a_move_leaves_never_hides_a_change() {
    let steps = proptest::collection::vec(step(), 1..24);
    let from_memo = count_cases(40, steps, |steps| {
        moves_against_the_disk(&std::env::temp_dir(), steps)
    });
    assert!(
        from_memo > 0,
        "no move took the walk memo the move before it left"
    );
}

/// The same on a filesystem of one-second timestamps, without waits: every edit lands in the
/// clock tick of the move before it, where a stat cannot tell it from what the move wrote,
/// and only the memo's clock (the walk's before the move) makes the next command read it.
#[test]
fn the_memo_a_move_leaves_never_hides_a_change_on_one_second_timestamps() {
    let Some(fs) = CoarseFs::mount() else {
        eprintln!("cannot loop-mount an ext4 image here (needs root); skipping");
        return;
    };
    // The undo writes `a` back; rewritten in its tick with the same size and mtime, it stats
    // as the undo left it.
    let a = FILES.iter().position(|p| *p == "a").unwrap();
    let edited = vec![
        Step::Move(Move::Undo),
        Step::Edit(Op::SameSize(a)),
        Step::Move(Move::Redo),
    ];
    moves_against_the_disk(fs.dir.path(), edited).unwrap();
    let quick = step().prop_filter("no waits", |s| !matches!(s, Step::Tick));
    let from_memo = count_cases(16, proptest::collection::vec(quick, 1..24), |steps| {
        moves_against_the_disk(fs.dir.path(), steps)
    });
    assert!(
        from_memo > 0,
        "no move took the walk memo the move before it left"
    );
}

/// A file removed from a directory a move touched, after the move wrote there and before it
/// made its walk memo, is gone from no snapshot: the memo must not take its absence in, or
/// the move after would find the tree clean (its walk has the memo's digest, and what the
/// move wrote is read again and is HEAD's) and never record it gone.
#[test]
fn what_changes_during_a_move_is_not_taken_into_its_memo() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    std::fs::write(root.join("a"), b"a").unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/y"), b"y").unwrap();
    for content in [b"000", b"111"] {
        std::fs::write(root.join("d/x"), content).unwrap();
        settle(&root);
        ws.save(&SaveOptions::default()).unwrap();
    }
    settle(&root);
    let armed = std::sync::Arc::new(AtomicBool::new(true));
    let (fire, other) = (std::sync::Arc::clone(&armed), root.join("d/y"));
    ws.set_observer(Box::new(move |e| {
        let written = matches!(e, snap_tree::Event::Progress { phase: snap_tree::Phase::Restore, done, total } if done == total && *total > 0);
        if written && fire.swap(false, Ordering::Relaxed) {
            std::fs::remove_file(&other).unwrap();
        }
    }));
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert!(!armed.load(Ordering::Relaxed), "the undo wrote nothing");
    let (moved, _) = checked_move(&ws, &root, Move::Redo, &AtomicU64::new(0)).unwrap();
    assert!(moved);
}

/// The directory rule, as the walk applies it without sorting its entries: a directory
/// holding only left-out entries, or only such directories, is not tracked; an empty one,
/// or one holding anything tracked, is.
#[test]
fn the_walk_drops_exactly_the_hollow_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    for (path, body) in [
        ("only-ignored/x.log", "i"),
        ("nested/inner/deep/y.log", "i"),
        ("mixed/kept.txt", "k"),
        ("mixed/z.log", "i"),
        ("outer/kept.txt", "k"),
        ("outer/hollow/w.log", "i"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::create_dir_all(root.join("holds-empty/empty")).unwrap();
    let found = walk(root, &Config::default()).unwrap();
    let paths: Vec<&str> = found
        .entries
        .iter()
        .map(|e| std::str::from_utf8(&e.0).unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            ".gitignore",
            "empty",
            "holds-empty",
            "holds-empty/empty",
            "mixed",
            "mixed/kept.txt",
            "outer",
            "outer/kept.txt",
        ]
    );
}
