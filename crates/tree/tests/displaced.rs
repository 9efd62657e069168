//! What a move does with a version another process wrote just before a step took its path
//! (docs/SAFETY.md, "Writers racing a move"), when the move then fails, and when the store
//! cannot hold that version. Each case runs with `renameat2`, with its fallback forced, and
//! with the fallback on a filesystem without hard links too. In a test binary of its own,
//! as the exchange hook and armed faults are process-wide.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use snap_store::testing::fault::{Fault, arm};
use snap_tree::testing::Edge;
use snap_tree::{SaveOptions, Workspace};

const FILES: usize = 8;
const MAX_FILE_SIZE: u64 = 4096;

/// The three ways a move can put a file in place.
const MODES: [(bool, bool); 3] = [(false, false), (true, false), (true, true)];

fn set_mode((fallback, no_links): (bool, bool)) {
    snap_tree::testing::force_link_fallback(fallback);
    snap_tree::testing::force_no_links(no_links);
}

/// A workspace of `FILES` tracked files saved twice, so an undo rewrites every one.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    drop(Workspace::init(&root, None, false).unwrap());
    let config = format!("max_file_size = {MAX_FILE_SIZE}\n");
    std::fs::write(root.join(".snap/config.toml"), config).unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    let ws = Workspace::discover(&root, None).unwrap();
    for version in ["first", "second"] {
        for i in 0..FILES {
            std::fs::write(root.join(format!("d/f{i}.txt")), format!("{version} {i}")).unwrap();
        }
        ws.save(&SaveOptions::default()).unwrap();
    }
    (dir, root)
}

/// Installs a hook that, at the first exchange of a tracked file, does `write` to it; the
/// path it wrote to is recorded.
fn on_first_exchange(write: fn(&Path)) -> Arc<Mutex<Option<PathBuf>>> {
    let hit: Arc<Mutex<Option<PathBuf>>> = Arc::default();
    let (seen, once) = (Arc::clone(&hit), AtomicBool::new(false));
    snap_tree::testing::on_exchange(Box::new(move |path: &Path, edge: Edge| {
        let ours = edge == Edge::Before && path.extension().is_some_and(|e| e == "txt");
        if ours && !once.swap(true, Ordering::SeqCst) {
            write(path);
            *seen.lock().unwrap() = Some(path.to_path_buf());
        }
    }));
    hit
}

/// Every name in `root` (outside `.snap`) shaped like a move's temporary file.
fn temp_names(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name();
            if name == ".snap" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else if snap_tree::is_temp_name(name.as_encoded_bytes()) {
                out.push(entry.path());
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// True when `token` is in some file on disk under `root` or in a snapshot `log --all` lists.
fn kept_somewhere(root: &Path, token: &[u8]) -> bool {
    let ws = Workspace::discover(root, None).unwrap();
    let on_disk = (0..FILES).any(|i| {
        std::fs::read(root.join(format!("d/f{i}.txt"))).is_ok_and(|b| contains(&b, token))
    });
    on_disk
        || ws.log(true).unwrap().iter().any(|entry| {
            ws.files(&entry.snapshot)
                .unwrap()
                .iter()
                .any(|(path, node)| {
                    node.kind != snap_tree::EntryKind::Dir
                        && ws
                            .read_file(&entry.snapshot, path)
                            .is_ok_and(|b| contains(&b, token))
                })
        })
}

static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn a_displaced_version_is_stored_when_a_later_step_fails() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for mode in MODES {
        set_mode(mode);
        let (_dir, root) = workspace();
        let hit =
            on_first_exchange(|path| std::fs::write(path, b"THEIRS, written mid-move").unwrap());
        // The second file written fails, after the first has displaced the hook's version.
        arm(Fault::parse("restore-write@2"));
        let ws = Workspace::discover(&root, None).unwrap();
        let undone = ws.undo(1, snap_tree::Run::Apply);
        drop(ws);
        arm(None);
        snap_tree::testing::clear_exchange_hook();
        assert!(undone.is_err(), "{mode:?}: the undo should fail");
        assert!(hit.lock().unwrap().is_some(), "{mode:?}: no exchange raced");
        assert!(
            kept_somewhere(&root, b"THEIRS, written mid-move"),
            "{mode:?}: the displaced version was lost"
        );
        assert_eq!(temp_names(&root), Vec::<PathBuf>::new(), "{mode:?}");
        let mut ws = Workspace::discover(&root, None).unwrap();
        assert!(
            ws.recover_now().unwrap().is_empty(),
            "{mode:?}: marker left"
        );
    }
    set_mode((false, false));
}

#[test]
fn a_displaced_version_the_store_cannot_hold_is_put_back() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let fifo = |path: &Path| {
        std::fs::remove_file(path).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    };
    let oversize =
        |path: &Path| std::fs::write(path, vec![b'B'; 2 * MAX_FILE_SIZE as usize]).unwrap();
    for mode in MODES {
        for (what, write) in [("fifo", fifo as fn(&Path)), ("oversize", oversize)] {
            set_mode(mode);
            let (_dir, root) = workspace();
            let hit = on_first_exchange(write);
            let ws = Workspace::discover(&root, None).unwrap();
            let undone = ws.undo(1, snap_tree::Run::Apply);
            snap_tree::testing::clear_exchange_hook();
            let undone = undone.unwrap_or_else(|e| panic!("{mode:?} {what}: {e}"));
            let path = hit.lock().unwrap().clone().unwrap();
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .as_os_str()
                .as_encoded_bytes();
            assert!(
                undone.kept.iter().any(|k| k == rel),
                "{mode:?} {what}: not kept"
            );
            let meta = std::fs::symlink_metadata(&path).unwrap();
            match what {
                "fifo" => assert!(meta.file_type().is_fifo(), "{mode:?}: fifo not put back"),
                _ => assert_eq!(
                    meta.len(),
                    2 * MAX_FILE_SIZE,
                    "{mode:?}: big file not put back"
                ),
            }
            assert_eq!(temp_names(&root), Vec::<PathBuf>::new(), "{mode:?} {what}");
            // Every other file is undone.
            for i in 0..FILES {
                let other = root.join(format!("d/f{i}.txt"));
                if other != path {
                    assert_eq!(
                        std::fs::read(other).unwrap(),
                        format!("first {i}").as_bytes()
                    );
                }
            }
        }
    }
    set_mode((false, false));
}
