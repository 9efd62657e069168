//! The safety invariant of docs/SAFETY.md, checked by an oracle over everything on disk (ignored
//! and oversize files included), not only over the tracked tree: random edits, ignore-file
//! changes, oversize files, FIFOs, files named like a move's temporary files, read-only
//! directories, saves, undos, redos, restores and reverts; after every move, each file
//! that existed before it is still at its path or readable from a listed snapshot, nothing
//! the rules leave out was touched, and a save right after records nothing but the paths the
//! move kept.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use snap_tree::{MoveOutcome, RevertOf, SaveOptions, TreeError, Workspace};

/// Tracked names, names the rules may leave out (`*.log` when `.gitignore` says so, `ign/`
/// always), and a directory that may end up holding only ignored files.
const PATHS: [&str; 7] = [
    "a",
    "d/b",
    "x.log",
    "d/y.log",
    "ign/k",
    "only/z.log",
    "only",
];
const MAX_FILE_SIZE: usize = 64;
/// Modes `Chmod` sets; a directory gets its user bits forced to rwx, so it stays searchable.
const MODES: [u32; 5] = [0o600, 0o644, 0o700, 0o755, 0o640];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Big(usize),
    Delete(usize),
    IgnoreLogs(bool),
    /// A path's permission bits (files and directories; a directory stays searchable).
    Chmod(usize, usize),
    /// A FIFO in place of the file at a path (never opened: a walk must not block on it).
    Fifo(usize),
    /// A file named like a move's temporary file beside a path: tracked like any other, so a
    /// move may replace it only after saving it, never remove it for its name.
    TempLike(usize, u32),
    /// The directory a path is in (or the path, if a directory) made 0555.
    ReadOnly(usize),
    Save,
    Undo(u64),
    Redo(u64),
    Restore(usize),
    /// Undo back to the snapshot this many parents before HEAD (`Workspace::undo_to`).
    UndoTo(u64),
    /// Revert what the `k`th snapshot of the log changed (`Workspace::revert`).
    Revert(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS.len();
    prop_oneof![
        4 => (p.clone(), proptest::collection::vec(any::<u8>(), 0..12)).prop_map(|(i, c)| Op::Write(i, c)),
        1 => p.clone().prop_map(Op::Big),
        1 => p.clone().prop_map(Op::Delete),
        1 => any::<bool>().prop_map(Op::IgnoreLogs),
        1 => (p.clone(), 0..MODES.len()).prop_map(|(i, m)| Op::Chmod(i, m)),
        1 => p.clone().prop_map(Op::Fifo),
        1 => (p.clone(), any::<u32>()).prop_map(|(i, n)| Op::TempLike(i, n)),
        1 => p.clone().prop_map(Op::ReadOnly),
        3 => Just(Op::Save),
        2 => (1..3u64).prop_map(Op::Undo),
        2 => (1..3u64).prop_map(Op::Redo),
        1 => (0..6usize).prop_map(Op::Restore),
        1 => (0..3u64).prop_map(Op::UndoTo),
        2 => (0..6usize).prop_map(Op::Revert),
    ]
}

type Disk = BTreeMap<String, Vec<u8>>;

/// What [`disk`] records for a FIFO (never opened).
const FIFO: &[u8] = b"<fifo>";

/// Every file under `root` but the store, with its bytes.
fn disk(root: &Path) -> Disk {
    let mut out = Disk::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".snap" {
                continue;
            }
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                stack.push(e.path())
            } else if std::os::unix::fs::FileTypeExt::is_fifo(&kind) {
                out.insert(rel, FIFO.to_vec());
            } else {
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// The files a move has no right to touch, as the rules are before it: ignored by the
/// `.gitignore` or `.snapignore` on disk, or over `max_file_size`.
fn untouchable(root: &Path, files: &Disk) -> Disk {
    let logs = std::fs::read(root.join(".gitignore")).is_ok_and(|c| c == b"*.log\n");
    files
        .iter()
        .filter(|(p, c)| {
            p.starts_with("ign/")
                || (logs && p.ends_with(".log"))
                || c.len() > MAX_FILE_SIZE
                || c.as_slice() == FIFO
        })
        .map(|(p, c)| (p.clone(), c.clone()))
        .collect()
}

fn edit(root: &Path, op: &Op) {
    let write = |rel: &str, bytes: &[u8]| {
        let path = root.join(rel);
        if path.is_dir() {
            return;
        }
        if is_fifo(&path) {
            // Writing would block until a reader came: the file replaces it instead.
            let _ = std::fs::remove_file(&path);
        }
        if std::fs::create_dir_all(path.parent().unwrap()).is_ok() {
            let _ = std::fs::write(path, bytes);
        }
    };
    match op {
        Op::Write(i, c) => write(PATHS[*i], c),
        Op::Big(i) => write(PATHS[*i], &[b'B'; MAX_FILE_SIZE + 1]),
        Op::Delete(i) => {
            let _ = std::fs::remove_file(root.join(PATHS[*i]));
        }
        Op::Chmod(i, m) => {
            use std::os::unix::fs::PermissionsExt;
            let path = root.join(PATHS[*i]);
            let mode = if path.is_dir() {
                MODES[*m] | 0o700
            } else {
                MODES[*m]
            };
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        }
        Op::Fifo(i) => {
            let path = root.join(PATHS[*i]);
            if path.is_dir() || std::fs::create_dir_all(path.parent().unwrap()).is_err() {
                return;
            }
            let _ = std::fs::remove_file(&path);
            let _ = rustix::fs::mknodat(
                rustix::fs::CWD,
                &path,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            );
        }
        Op::TempLike(i, n) => {
            let dir = root.join(PATHS[*i]).parent().unwrap().to_path_buf();
            if dir.is_dir() {
                let name = format!(".snap-tmp-{n}-{}-{}", n % 7, n % 3);
                let _ = std::fs::write(dir.join(name), format!("the user's {n}"));
            }
        }
        Op::ReadOnly(i) => {
            use std::os::unix::fs::PermissionsExt;
            let path = root.join(PATHS[*i]);
            let dir = if path.is_dir() {
                path
            } else {
                path.parent().unwrap().to_path_buf()
            };
            if dir != *root {
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555));
            }
        }
        Op::IgnoreLogs(true) => write(".gitignore", b"*.log\n"),
        Op::IgnoreLogs(false) => {
            let _ = std::fs::remove_file(root.join(".gitignore"));
        }
        _ => {}
    }
}

fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()))
}

/// The oracle: every file of `before` is at its path with its bytes, or a listed snapshot
/// holds those bytes at that path; every untouchable file is exactly as it was.
fn check_conserved(
    ws: &Workspace,
    before: &Disk,
    fixed: &Disk,
    what: &str,
) -> Result<(), TestCaseError> {
    let now = disk(ws.root());
    for (path, bytes) in fixed {
        prop_assert_eq!(now.get(path), Some(bytes), "{}: {} was touched", what, path);
    }
    let listed = ws.log(true).unwrap();
    for (path, bytes) in before {
        if now.get(path) == Some(bytes) {
            continue;
        }
        let saved = listed.iter().any(|e| {
            ws.read_file(&e.snapshot, path.as_bytes())
                .is_ok_and(|c| &c == bytes)
        });
        prop_assert!(saved, "{}: {} was lost", what, path);
    }
    Ok(())
}

/// Right after a successful move, every file and directory HEAD records has exactly its
/// recorded permission bits on disk, except what the move kept.
fn check_modes(ws: &Workspace, out: &MoveOutcome, what: &str) -> Result<(), TestCaseError> {
    use std::os::unix::fs::PermissionsExt;
    let head = ws.head().unwrap().unwrap();
    for (path, node) in ws.files(&head).unwrap() {
        let kept = out
            .kept
            .iter()
            .any(|k| snap_tree::flat::is_within(&path, k));
        let Some(mode) = node.mode.filter(|_| !kept) else {
            continue;
        };
        let abs = ws.root().join(String::from_utf8(path.clone()).unwrap());
        let on_disk = std::fs::symlink_metadata(&abs)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        prop_assert_eq!(on_disk, u32::from(mode), "{}: mode of {:?}", what, abs);
    }
    Ok(())
}

/// Right after a successful move, a save records nothing, except paths the move kept.
fn check_nothing_to_save(
    ws: &Workspace,
    out: &MoveOutcome,
    what: &str,
) -> Result<(), TestCaseError> {
    let saved = ws.save(&SaveOptions::default()).unwrap();
    if let Some(s) = &saved.snapshot {
        // A directory-only change (no file changes) must have been named too.
        // A change at or under a kept path is named by it (a file kept where the target has a
        // directory leaves that directory's files unwritten).
        let named = |p: &[u8]| out.kept.iter().any(|k| snap_tree::flat::is_within(p, k));
        let kept_only = saved.changes.iter().all(|(p, _)| named(p));
        prop_assert!(
            kept_only && !(saved.changes.is_empty() && out.kept.is_empty()),
            "{}: the save after it recorded #{} with {:?} (kept {:?})",
            what,
            s.record.seq,
            saved.changes,
            out.kept
        );
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = &dir.path().canonicalize().unwrap();
    drop(Workspace::init(root, None, false).unwrap());
    let config = format!("max_file_size = {MAX_FILE_SIZE}\n");
    std::fs::write(root.join(".snap/config.toml"), config).unwrap();
    std::fs::write(root.join(".snapignore"), b"ign/\n").unwrap();
    for (step, op) in ops.iter().enumerate() {
        let ws = Workspace::discover(root, None).unwrap();
        let before = disk(root);
        let fixed = untouchable(root, &before);
        let what = format!("step {step} {op:?}");
        let moved = match op {
            Op::Save => {
                ws.save(&SaveOptions::default()).unwrap();
                None
            }
            Op::Undo(n) => Some(ws.undo(*n, snap_tree::Run::Apply)),
            Op::Redo(n) => Some(ws.redo(*n, snap_tree::Run::Apply)),
            Op::Restore(k) => {
                let log = ws.log(true).unwrap();
                let reference = |e: &snap_tree::LogEntry| format!("#{}", e.snapshot.record.seq);
                log.get(*k % log.len().max(1))
                    .map(|e| ws.restore(&reference(e), &[], snap_tree::Run::Apply))
            }
            Op::UndoTo(k) => ancestor(&ws, *k).map(|id| ws.undo_to(&id, snap_tree::Run::Apply)),
            Op::Revert(k) => {
                let log = ws.log(true).unwrap();
                let of = |e: &snap_tree::LogEntry| format!("#{}", e.snapshot.record.seq);
                log.get(*k % log.len().max(1)).map(|e| {
                    let reverted =
                        ws.revert(RevertOf::Snapshot(&of(e)), &[], snap_tree::Run::Apply);
                    reverted.map(|r| r.moved)
                })
            }
            edit_op => {
                edit(root, edit_op);
                None
            }
        };
        match moved {
            Some(Ok(out)) => {
                check_conserved(&ws, &before, &fixed, &what)?;
                check_modes(&ws, &out, &what)?;
                check_nothing_to_save(&ws, &out, &what)?;
            }
            Some(Err(e)) if e.is_nothing_to_do() || matches!(e, TreeError::ParentPruned(_)) => {
                check_conserved(&ws, &before, &fixed, &what)?;
            }
            None => {}
            Some(Err(e)) => {
                check_conserved(&ws, &before, &fixed, &what)?;
                prop_assert!(false, "{}: {}", what, e);
            }
        }
    }
    Ok(())
}

/// The snapshot `k` parents before HEAD, if history is that deep.
fn ancestor(ws: &Workspace, k: u64) -> Option<snap_tree::ObjectId> {
    let mut current = ws.head().unwrap()?;
    for _ in 0..k {
        current = ws.parent_of(&current).unwrap()?;
    }
    Some(current.id)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn moves_conserve_everything(ops in proptest::collection::vec(op(), 1..30)) {
        run(ops)?;
    }
}

/// Cases the property test found, kept as plain tests.
#[test]
fn found_cases() {
    use Op::*;
    let cases = [
        vec![
            Write(3, vec![]),
            IgnoreLogs(true),
            Save,
            Delete(3),
            Undo(1),
            Write(3, vec![]),
            Write(1, vec![]),
            Redo(1),
        ],
        // An oversize file where the redo target has a directory: kept, and named.
        vec![Save, Write(5, vec![]), Undo(1), Big(6), Redo(1)],
    ];
    for ops in cases {
        run(ops).unwrap();
    }
}
