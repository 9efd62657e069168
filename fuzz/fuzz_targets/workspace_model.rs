//! Model-based target: a random sequence of edits, saves, undos, redos, restores, prunes and
//! gcs on a real workspace in a temp dir, some of them with an injected I/O error (a one-shot
//! or sticky EIO, ENOSPC or EROFS at any of snap_store::testing::fault::FAULT_POINTS). After every
//! command that ran the working tree must match HEAD; a command that failed from the fault
//! must leave, once the workspace is reopened on a healthy disk, the tree as it was before the
//! command or matching HEAD. At the end every state that was saved (and not pruned) must
//! restore byte for byte, and the store must verify. Around every command the conservation
//! oracle of docs/SAFETY.md holds: each file that was on disk before it is still there or in
//! a snapshot `log --all` lists, and the ignored file `x.log` is never touched.

#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use snap_store::Retention;
use snap_store::testing::fault::{self, FAULT_POINTS, Fault};
use snap_tree::{SaveOptions, TreeError, Workspace};

const FILES: [&str; 4] = ["a", "d/b", "d/e/c", "f"];
/// Ignored by the workspace's `.gitignore`: edits may change it, commands never.
const IGNORED: &str = "d/x.log";

/// Every file on disk but the store: path -> content.
fn everything(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let rel = rel.to_string_lossy().into_owned();
            match e.file_type() {
                Ok(t) if t.is_dir() && rel != ".snap" => stack.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = std::fs::read(&path) {
                        out.insert(rel, bytes);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The oracle: every file of `before` is on disk with its bytes or in a listed snapshot, and
/// the ignored file is exactly as it was.
fn assert_conserved(ws: &Workspace, before: &BTreeMap<String, Vec<u8>>) {
    let now = everything(ws.root());
    assert_eq!(
        now.get(IGNORED),
        before.get(IGNORED),
        "the ignored file was touched"
    );
    let listed = ws.log(true).expect("log");
    for (path, bytes) in before {
        if now.get(path) == Some(bytes) {
            continue;
        }
        let saved = listed.iter().any(|e| {
            ws.read_file(&e.snapshot, path.as_bytes())
                .is_ok_and(|c| &c == bytes)
        });
        assert!(saved, "{path} was lost");
    }
}

/// The tracked files on disk: path -> content.
fn disk(root: &Path) -> BTreeMap<String, Vec<u8>> {
    FILES
        .iter()
        .filter_map(|f| std::fs::read(root.join(f)).ok().map(|c| (f.to_string(), c)))
        .collect()
}

fn edit(root: &Path, op: u8, arg: u8) {
    if arg % 16 == 15 {
        let _ = std::fs::create_dir_all(root.join("d"));
        let _ = std::fs::write(root.join(IGNORED), vec![op; usize::from(arg)]);
        return;
    }
    let path = root.join(FILES[usize::from(arg) % FILES.len()]);
    if op % 4 == 3 {
        use std::os::unix::fs::PermissionsExt;
        let mode = if arg & 0x40 != 0 { 0o600 } else { 0o755 };
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
        return;
    }
    if op % 2 == 0 {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&path, vec![arg; usize::from(op) * 7]);
    } else {
        let _ = std::fs::remove_file(&path);
    }
}

/// A fault for the next command, chosen by `op` and `arg`.
fn fault_for(op: u8, arg: u8) -> Fault {
    let errnos = [5, 28, 30]; // EIO, ENOSPC, EROFS
    Fault {
        point: FAULT_POINTS[usize::from(arg) % FAULT_POINTS.len()].to_string(),
        nth: u64::from(op / 8 % 6) + 1,
        sticky: arg & 0x80 != 0,
        errno: errnos[usize::from(arg / 8) % errnos.len()],
    }
}

fn nothing_to_do(e: &TreeError) -> bool {
    e.is_nothing_to_do()
}

fuzz_target!(|data: &[u8]| {
    // An input that ended right after arming must not leave its fault to the next one.
    fault::arm(None);
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path();
    let Ok(mut ws) = Workspace::init(root, None, false) else {
        return;
    };
    if std::fs::write(root.join(".gitignore"), b"*.log\n").is_err() {
        return;
    }
    let mut armed = false;
    let mut saved: BTreeMap<u64, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for pair in data.chunks(2).take(40) {
        let (op, arg) = (pair[0], pair.get(1).copied().unwrap_or(0));
        let before = disk(root);
        let all_before = everything(root);
        let result = match op % 8 {
            0 | 1 | 2 => {
                edit(root, op / 8, arg);
                continue;
            }
            3 => ws.save(&SaveOptions::default()).map(|_| ()),
            4 => ws
                .undo(u64::from(arg % 3) + 1, snap_tree::Run::Apply)
                .map(|_| ()),
            5 => ws
                .redo(u64::from(arg % 3) + 1, snap_tree::Run::Apply)
                .map(|_| ()),
            6 => match saved.keys().nth(usize::from(arg) % saved.len().max(1)) {
                Some(seq) => ws
                    .restore(&format!("#{seq}"), &[], snap_tree::Run::Apply)
                    .map(|_| ()),
                None => continue,
            },
            _ if arg % 4 == 1 => {
                fault::arm(Some(fault_for(op, arg)));
                armed = true;
                continue;
            }
            _ if arg % 2 == 0 => ws.gc().map(|_| ()),
            _ => ws
                .prune(
                    &Retention {
                        keep_last: u64::from(arg % 5) + 1,
                        keep_within_ns: None,
                    },
                    snap_tree::Run::Apply,
                )
                .map(|_| ()),
        };
        fault::arm(None);
        if result.is_ok() {
            assert_conserved(&ws, &all_before);
        }
        let moved = match result {
            Ok(()) => (3..=6).contains(&(op % 8)),
            Err(e) if nothing_to_do(&e) => false,
            Err(_) if armed => {
                // Reopen on a healthy disk: that finishes or undoes what the fault cut short.
                // The tree is then as it was before the command, or it matches HEAD.
                drop(ws);
                ws = Workspace::discover(root, None).expect("reopen after a fault");
                assert_conserved(&ws, &all_before);
                let clean = ws.status().expect("status").changes.is_empty();
                assert!(
                    clean || disk(root) == before,
                    "after a failed command the tree is neither as before nor HEAD"
                );
                false
            }
            Err(e) => panic!("command failed: {e}"),
        };
        armed = false;
        // A save, undo, redo or restore that ran leaves the tree equal to HEAD; remember it.
        if let Some(seq) = ws
            .head()
            .expect("head")
            .map(|h| h.record.seq)
            .filter(|_| moved)
        {
            assert!(
                ws.status().expect("status").changes.is_empty(),
                "the tree differs from HEAD #{seq}"
            );
            saved.entry(seq).or_insert_with(|| disk(root));
        }
        let alive: Vec<u64> = ws
            .log(true)
            .expect("log")
            .iter()
            .map(|e| e.snapshot.record.seq)
            .collect();
        saved.retain(|seq, _| alive.contains(seq));
    }
    fault::arm(None);
    if std::env::var_os("SNAP_FUZZ_COUNT").is_some() {
        eprintln!("faults fired so far: {}", fault::fired());
    }
    for (seq, state) in &saved {
        ws.restore(&format!("#{seq}"), &[], snap_tree::Run::Apply)
            .expect("restore");
        assert_eq!(&disk(root), state, "#{seq} did not restore byte for byte");
    }
    assert!(
        ws.verify(true).expect("verify").problems.is_empty(),
        "the store does not verify"
    );
});
