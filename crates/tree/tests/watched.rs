//! A save that reads only what a change source names records exactly what the whole walk
//! records: after random batches of edits (files, modes, symlinks, directories made,
//! removed and swapped for files, ignore files at every level), the root a save takes with
//! the source is, tree id for tree id, the root a fresh store's whole walk finds, whether the
//! source names exactly the directories that changed, more than them (paths that are gone,
//! files, ignored or store directories), or everything. Moves run in between, so the source
//! also answers for what snap itself wrote. A directory the source names whole in every
//! answer (a watcher's mount point) is read again each time, its parent unread.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use snap_tree::{
    ChangeSource, Changes, DirtyDir, Event, ObjectId, Run, SaveOptions, Scope, WatchToken,
    Workspace,
};

const PATHS: [&str; 10] = [
    "a",
    "b.log",
    "d/x",
    "d/y.log",
    "d/e/z",
    "d/e/f/deep",
    "g/h.log",
    "g/i/j",
    "k/l",
    "m",
];
const RULE_DIRS: [&str; 4] = ["", "d", "d/e", "g"];
const PATTERNS: [&str; 6] = ["*.log", "!y.log", "e/", "/a", "i", "!*.log"];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Delete(usize),
    Chmod(usize, bool),
    Symlink(usize, usize),
    Rule(usize, bool, Vec<usize>),
    /// A directory where a file was, or a file where a directory was.
    Swap(usize),
    /// A directory removed whole.
    RemoveDir(usize),
    /// A directory's own mode changed.
    ChmodDir(usize),
    Undo,
    Redo,
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS.len();
    let r = 0..RULE_DIRS.len();
    prop_oneof![
        4 => (p.clone(), proptest::collection::vec(any::<u8>(), 0..6)).prop_map(|(i, c)| Op::Write(i, c)),
        1 => p.clone().prop_map(Op::Delete),
        1 => (p.clone(), any::<bool>()).prop_map(|(i, x)| Op::Chmod(i, x)),
        1 => (p.clone(), p.clone()).prop_map(|(i, t)| Op::Symlink(i, t)),
        2 => (r.clone(), any::<bool>(), proptest::collection::vec(0..PATTERNS.len(), 0..3))
            .prop_map(|(d, s, p)| Op::Rule(d, s, p)),
        1 => p.clone().prop_map(Op::Swap),
        1 => p.clone().prop_map(Op::RemoveDir),
        1 => r.prop_map(Op::ChmodDir),
        1 => Just(Op::Undo),
        1 => Just(Op::Redo),
    ]
}

/// How the test source answers.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// Exactly the directories whose entries changed (a perfect watcher).
    Exact,
    /// Those, and paths that do not name changed directories at all.
    Superset,
    /// Always everything.
    Everything,
}

/// One directory as the source last saw it: its own mode, and each entry's name, type and
/// stat; the ignore files' contents apart, since they change what is under it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Print {
    mode: u32,
    entries: Vec<(Vec<u8>, u32, u64, i64, i64, u64)>,
    rules: Vec<Vec<u8>>,
}

/// A change source that finds what changed by listing every directory (the store's aside)
/// and comparing with what it listed last: what a watcher that misses nothing would say.
#[derive(Debug)]
struct Lister {
    root: PathBuf,
    answer: Answer,
    /// The listing at each sequence number answered so far.
    seen: Mutex<Vec<HashMap<Vec<u8>, Print>>>,
    /// Answers a capture can read from: directories, not the root whole.
    usable: AtomicUsize,
}

const INSTANCE: [u8; 16] = [7; 16];

impl Lister {
    fn list(&self) -> HashMap<Vec<u8>, Print> {
        let mut out = HashMap::new();
        let mut stack = vec![Vec::new()];
        while let Some(rel) = stack.pop() {
            let dir = self.root.join(std::str::from_utf8(&rel).unwrap());
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            let mut print = Print {
                mode: meta.mode(),
                entries: Vec::new(),
                rules: Vec::new(),
            };
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let name = entry.file_name().into_encoded_bytes();
                if rel.is_empty() && name == b".snap" {
                    continue;
                }
                let Ok(m) = entry.path().symlink_metadata() else {
                    continue;
                };
                let child = join(&rel, &name);
                if m.is_dir() {
                    stack.push(child);
                }
                if name == b".gitignore" || name == b".snapignore" {
                    print
                        .rules
                        .push(std::fs::read(entry.path()).unwrap_or_default());
                }
                print.entries.push((
                    name,
                    m.mode(),
                    m.size(),
                    m.mtime_nsec() + m.mtime() * 1_000_000_000,
                    m.ctime_nsec() + m.ctime() * 1_000_000_000,
                    m.ino(),
                ));
            }
            print.entries.sort();
            out.insert(rel, print);
        }
        out
    }
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    match dir.is_empty() {
        true => name.to_vec(),
        false => [dir, b"/", name].concat(),
    }
}

impl ChangeSource for Lister {
    fn changes_since(&self, since: Option<&WatchToken>) -> Changes {
        let now_listed = self.list();
        let mut seen = self.seen.lock().unwrap();
        let asked = since
            .filter(|t| t.instance == INSTANCE)
            .map(|t| t.seq as usize);
        let before = asked.and_then(|seq| seen.get(seq)).cloned();
        seen.push(now_listed.clone());
        let now = WatchToken {
            instance: INSTANCE,
            seq: (seen.len() - 1) as u64,
        };
        let before = match (self.answer, before) {
            (Answer::Everything, _) | (_, None) => {
                return Changes::Everything {
                    now: Some(now),
                    reason: "test".into(),
                };
            }
            (_, Some(before)) => before,
        };
        let mut dirs = Vec::new();
        for (path, print) in &now_listed {
            let scope = match before.get(path) {
                None => Scope::Subtree,
                Some(old) if old.rules != print.rules => Scope::Subtree,
                Some(old) if old != print => Scope::Dir,
                Some(_) => continue,
            };
            dirs.push(DirtyDir {
                path: path.clone(),
                scope,
            });
        }
        for path in before.keys().filter(|p| !now_listed.contains_key(*p)) {
            dirs.push(DirtyDir {
                path: path.clone(),
                scope: Scope::Dir,
            });
        }
        if let Answer::Superset = self.answer {
            for extra in [
                "nowhere",
                "a",
                "d/x",
                ".snap",
                ".git",
                "d/e/f/deep/no",
                "node_modules",
            ] {
                dirs.push(DirtyDir {
                    path: extra.into(),
                    scope: Scope::Dir,
                });
            }
            dirs.push(DirtyDir {
                path: b"zz/top".to_vec(),
                scope: Scope::Subtree,
            });
        }
        if !dirs
            .iter()
            .any(|d| d.path.is_empty() && d.scope == Scope::Subtree)
        {
            self.usable.fetch_add(1, Ordering::Relaxed);
        }
        Changes::Dirs { now, dirs }
    }
}

fn apply(root: &Path, op: &Op, ws: &Workspace) {
    let at = |i: usize| root.join(PATHS[i]);
    let ensure_parent = |p: &Path| {
        let parent = p.parent().unwrap();
        if parent.is_file() || parent.is_symlink() {
            let _ = std::fs::remove_file(parent);
        }
        let _ = std::fs::create_dir_all(parent);
    };
    match op {
        Op::Write(i, body) => {
            let p = at(*i);
            ensure_parent(&p);
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(&p);
            }
            let _ = std::fs::remove_file(&p);
            let _ = std::fs::write(&p, body);
        }
        Op::Delete(i) => {
            let _ = std::fs::remove_file(at(*i));
        }
        Op::Chmod(i, x) => {
            let mode = if *x { 0o755 } else { 0o644 };
            let _ = std::fs::set_permissions(at(*i), std::fs::Permissions::from_mode(mode));
        }
        Op::Symlink(i, t) => {
            let p = at(*i);
            ensure_parent(&p);
            if !p.is_dir() || p.is_symlink() {
                let _ = std::fs::remove_file(&p);
                let _ = std::os::unix::fs::symlink(PATHS[*t], &p);
            }
        }
        Op::Rule(d, snap, pats) => {
            let dir = root.join(RULE_DIRS[*d]);
            if dir.is_dir() && !dir.is_symlink() {
                let name = if *snap { ".snapignore" } else { ".gitignore" };
                let body: String = pats.iter().map(|p| format!("{}\n", PATTERNS[*p])).collect();
                let _ = std::fs::write(dir.join(name), body);
            }
        }
        Op::Swap(i) => {
            let p = at(*i);
            if p.is_dir() && !p.is_symlink() {
                let _ = std::fs::remove_dir_all(&p);
                let _ = std::fs::write(&p, b"was a dir");
            } else {
                let _ = std::fs::remove_file(&p);
                ensure_parent(&p);
                let _ = std::fs::create_dir_all(p.join("inner/deeper"));
                let _ = std::fs::write(p.join("inner/deeper/file"), b"in a new dir");
                let _ = std::fs::write(p.join("inner/x.log"), b"maybe ignored");
            }
        }
        Op::RemoveDir(i) => {
            if let Some(parent) = at(*i).parent().filter(|p| *p != root) {
                let _ = std::fs::remove_dir_all(parent);
            }
        }
        Op::ChmodDir(d) => {
            let dir = root.join(RULE_DIRS[*d]);
            if let Ok(meta) = std::fs::symlink_metadata(&dir)
                && meta.is_dir()
                && dir != root
            {
                let mode = if meta.mode() & 0o070 == 0 {
                    0o755
                } else {
                    0o700
                };
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode));
            }
        }
        Op::Undo => {
            let _ = ws.undo(1, Run::Apply);
        }
        Op::Redo => {
            let _ = ws.redo(1, Run::Apply);
        }
    }
}

/// The root a fresh store's whole walk finds for the tree now.
fn walked_root(root: &Path) -> ObjectId {
    let store = tempfile::tempdir().unwrap();
    let ws = Workspace::init(root, Some(store.path()), true).unwrap();
    ws.save(&SaveOptions {
        allow_empty: true,
        ..SaveOptions::default()
    })
    .unwrap();
    ws.head().unwrap().unwrap().record.root
}

fn run(batches: &[Vec<Op>], answer: Answer) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (i, path) in PATHS.iter().enumerate() {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("{i}")).unwrap();
    }
    let mut ws = Workspace::init(&root, None, false).unwrap();
    let source = Arc::new(Lister {
        root: root.clone(),
        answer,
        seen: Mutex::new(Vec::new()),
        usable: AtomicUsize::new(0),
    });
    ws.set_change_source(Arc::clone(&source) as Arc<dyn ChangeSource>);
    let partial = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&partial);
    ws.set_observer(Box::new(move |event| {
        if let Event::Timing { step, .. } = event
            && step.starts_with("changed directories read")
        {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    }));
    ws.save(&SaveOptions::default()).unwrap();
    for (n, batch) in batches.iter().enumerate() {
        for op in batch {
            apply(&root, op, &ws);
        }
        ws.save(&SaveOptions::default()).unwrap();
        let saved = ws.head().unwrap().unwrap().record.root;
        let walked = walked_root(&root);
        prop_assert_eq!(saved, walked, "batch {} of {:?}: {:?}", n, answer, batch);
    }
    // Every answer that named directories was read from, and most answers do.
    let usable = source.usable.load(Ordering::Relaxed);
    prop_assert_eq!(partial.load(Ordering::Relaxed), usable);
    if !matches!(answer, Answer::Everything) {
        prop_assert!(
            usable > 0
                || batches
                    .iter()
                    .flatten()
                    .any(|op| matches!(op, Op::Rule(0, ..)))
        );
    }
    Ok(())
}

fn batches() -> impl Strategy<Value = Vec<Vec<Op>>> {
    proptest::collection::vec(proptest::collection::vec(op(), 1..5), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_save_from_the_exact_changes_records_what_the_walk_records(b in batches()) {
        run(&b, Answer::Exact)?;
    }

    #[test]
    fn a_save_from_more_than_the_changes_records_what_the_walk_records(b in batches()) {
        run(&b, Answer::Superset)?;
    }
}

#[test]
fn a_save_told_everything_records_what_the_walk_records() {
    let ops = vec![
        vec![Op::Write(2, b"new".to_vec()), Op::Swap(4)],
        vec![Op::Rule(0, false, vec![0]), Op::RemoveDir(5)],
    ];
    run(&ops, Answer::Everything).unwrap();
}

/// The token row is the one the source answered with, and a save after a change the source
/// names reads only that directory (its stat cache row vouching for nothing else).
#[test]
fn the_token_row_follows_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/f"), b"1").unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    ws.set_change_source(Arc::new(Lister {
        root: root.clone(),
        answer: Answer::Exact,
        seen: Mutex::new(Vec::new()),
        usable: AtomicUsize::new(0),
    }));
    ws.save(&SaveOptions::default()).unwrap();
    let first = ws.store().watch_memo().unwrap().unwrap();
    assert_eq!((first.instance, first.seq), (INSTANCE, 0));
    std::fs::write(root.join("d/f"), b"22").unwrap();
    let saved = ws.save(&SaveOptions::default()).unwrap();
    assert_eq!(saved.changes.len(), 1);
    let second = ws.store().watch_memo().unwrap().unwrap();
    assert_eq!(second.seq, 1);
    assert_eq!(second.root, ws.head().unwrap().unwrap().record.root);
    assert_eq!(second.root, walked_root(&root));
}

/// A watcher's plan is every directory the walk enters: ignored, excluded and store trees
/// are not in it; a directory holding only ignored files is (a file made there is tracked).
#[test]
fn the_watch_plan_is_the_directories_the_walk_enters() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for path in [
        "src/a/f",
        "src/b/x.log",
        "node_modules/m/f",
        "target/t/f",
        "docs/f",
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"1").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "*.log\ntarget/\n").unwrap();
    let ws = Workspace::init(&root, None, false).unwrap();
    let config = ws.config().clone();
    let store = root.join(".snap");
    let mut plan = snap_tree::watch_plan(&root, &config, Some(&store), b"")
        .unwrap()
        .dirs;
    plan.sort();
    let want: Vec<&[u8]> = vec![b"", b"docs", b"src", b"src/a", b"src/b"];
    assert_eq!(plan, want);
    let under = snap_tree::watch_plan(&root, &config, Some(&store), b"src")
        .unwrap()
        .dirs;
    assert_eq!(under.len(), 3);
    assert!(
        snap_tree::watch_plan(&root, &config, Some(&store), b"target")
            .unwrap()
            .dirs
            .is_empty()
    );
}

/// A source that names the same directories, whole, in every answer (as a watcher names a
/// mount point below the root), and what it is told changed besides.
#[derive(Debug)]
struct Always {
    whole: Vec<Vec<u8>>,
    seq: AtomicUsize,
}

impl ChangeSource for Always {
    fn changes_since(&self, since: Option<&WatchToken>) -> Changes {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) as u64;
        let now = WatchToken {
            instance: INSTANCE,
            seq,
        };
        if since.is_none() {
            return Changes::Everything {
                now: Some(now),
                reason: "test".into(),
            };
        }
        let dirs = (self.whole.iter())
            .map(|path| DirtyDir {
                path: path.clone(),
                scope: Scope::Subtree,
            })
            .collect();
        Changes::Dirs { now, dirs }
    }
}

/// A directory named whole in every answer (as the watcher names a mount point), its parent
/// never named and no directory under it: what changes in it is recorded (a file written,
/// made, removed).
#[test]
fn a_directory_named_whole_alone_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src/m/sub")).unwrap();
    std::fs::write(root.join("src/m/sub/f"), b"1").unwrap();
    std::fs::write(root.join("src/m/sub/g"), b"1").unwrap();
    std::fs::write(root.join("src/other"), b"1").unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    ws.set_change_source(Arc::new(Always {
        whole: vec![b"src/m/sub".to_vec()],
        seq: AtomicUsize::new(0),
    }));
    let partial = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&partial);
    ws.set_observer(Box::new(move |event| {
        if let Event::Timing { step, .. } = event
            && step.starts_with("changed directories read")
        {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    }));
    ws.save(&SaveOptions::default()).unwrap();
    let edits: [&dyn Fn(); 3] = [
        &|| std::fs::write(root.join("src/m/sub/f"), b"22").unwrap(),
        &|| std::fs::write(root.join("src/m/sub/new"), b"3").unwrap(),
        &|| std::fs::remove_file(root.join("src/m/sub/g")).unwrap(),
    ];
    for (n, edit) in edits.iter().enumerate() {
        edit();
        ws.save(&SaveOptions::default()).unwrap();
        let saved = ws.head().unwrap().unwrap().record.root;
        assert_eq!(saved, walked_root(&root), "edit {n}");
    }
    assert_eq!(partial.load(Ordering::Relaxed), edits.len());
}
