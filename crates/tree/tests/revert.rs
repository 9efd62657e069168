//! `Workspace::revert`: one snapshot's (or one turn's) change taken back while later work
//! stays, file by file, under the conservation oracle (every file on disk before is still
//! there or in a listed snapshot); paths changed since are conflicts, left exactly as they
//! are; the revert is a restore, so undo takes it back.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use snap_tree::{
    ChangeSource, Changes, Event, RevertOf, RevertOutcome, Run, SaveOptions, TreeError, WatchToken,
    Workspace,
};

type Disk = BTreeMap<String, Vec<u8>>;

/// Every file under `root` but the store, with its bytes.
fn disk(root: &Path) -> Disk {
    let mut out = Disk::new();
    for entry in walkdir(root) {
        let rel = entry
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !rel.starts_with(".snap") {
            out.insert(rel, std::fs::read(&entry).unwrap());
        }
    }
    out
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The oracle: each file of `before` is on disk with its bytes or in a listed snapshot.
fn assert_conserved(ws: &Workspace, before: &Disk) {
    let now = disk(ws.root());
    let listed = ws.log(true).unwrap();
    for (path, bytes) in before {
        let kept = now.get(path) == Some(bytes)
            || listed.iter().any(|e| {
                ws.read_file(&e.snapshot, path.as_bytes())
                    .is_ok_and(|c| &c == bytes)
            });
        assert!(kept, "{path} was lost");
    }
}

fn save(ws: &Workspace, session: Option<&str>, step: Option<u64>) -> u64 {
    let opts = SaveOptions {
        session: session.map(str::to_string),
        step,
        ..SaveOptions::default()
    };
    ws.save(&opts).unwrap().snapshot.unwrap().record.seq
}

fn revert(ws: &Workspace, of: RevertOf<'_>, paths: &[&str]) -> RevertOutcome {
    let before = disk(ws.root());
    let paths: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    let out = ws.revert(of, &paths, Run::Apply).unwrap();
    assert_conserved(ws, &before);
    out
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path)).ok()
}

fn names(paths: &[Vec<u8>]) -> Vec<String> {
    (paths.iter())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

#[test]
fn reverting_one_of_three_keeps_the_later_two() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("base.txt"), "base").unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws, None, None); // #1
    std::fs::write(root.join("a.txt"), "a").unwrap();
    std::fs::write(root.join("base.txt"), "base, edited").unwrap();
    std::fs::create_dir_all(root.join("made/deeper")).unwrap();
    std::fs::write(root.join("made/deeper/m.txt"), "m").unwrap();
    let first = save(&ws, None, None); // #2: the one to take back
    std::fs::write(root.join("b.txt"), "b").unwrap();
    save(&ws, None, None); // #3
    std::fs::write(root.join("c.txt"), "c").unwrap();
    save(&ws, None, None); // #4
    let out = revert(&ws, RevertOf::Snapshot(&format!("#{first}")), &[]);
    assert!(out.conflicts.is_empty(), "{:?}", out.conflicts);
    assert_eq!(read(root, "base.txt").as_deref(), Some("base"));
    assert_eq!(read(root, "a.txt"), None);
    assert!(!root.join("made").exists(), "the directory #2 made is gone");
    assert_eq!(read(root, "b.txt").as_deref(), Some("b"));
    assert_eq!(read(root, "c.txt").as_deref(), Some("c"));
    let head = ws.head().unwrap().unwrap();
    assert_eq!(head.record.message, format!("revert #{first}"));
    assert!(head.record.meta.iter().any(|(k, _)| k == "revert"));
    // It is a restore: undo takes it back.
    ws.undo(1, Run::Apply).unwrap();
    assert_eq!(read(root, "a.txt").as_deref(), Some("a"));
    assert_eq!(read(root, "made/deeper/m.txt").as_deref(), Some("m"));
}

#[test]
fn a_path_changed_since_is_a_conflict_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("f.txt"), "1").unwrap();
    std::fs::write(root.join("g.txt"), "1").unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws, None, None);
    std::fs::write(root.join("f.txt"), "2").unwrap();
    std::fs::write(root.join("g.txt"), "2").unwrap();
    let changed = save(&ws, None, None);
    std::fs::write(root.join("f.txt"), "3").unwrap();
    save(&ws, None, None);
    // Unsaved work on top: saved first, then the check sees it.
    std::fs::write(root.join("g.txt"), "unsaved").unwrap();
    let out = revert(&ws, RevertOf::Snapshot(&format!("#{changed}")), &[]);
    assert_eq!(names(&out.conflicts), ["f.txt", "g.txt"]);
    assert_eq!(read(root, "f.txt").as_deref(), Some("3"));
    assert_eq!(read(root, "g.txt").as_deref(), Some("unsaved"));
    assert!(
        out.moved.auto_saved.is_some(),
        "the dirty tree was saved first"
    );
}

#[test]
fn a_directory_that_got_later_files_stays_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::write(root.join("keep.txt"), "k").unwrap();
    save(&ws, None, None);
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/one.rs"), "1").unwrap();
    let made = save(&ws, None, None);
    std::fs::write(root.join("src/two.rs"), "2").unwrap();
    save(&ws, None, None);
    let out = revert(&ws, RevertOf::Snapshot(&format!("#{made}")), &[]);
    assert!(out.conflicts.is_empty());
    assert_eq!(read(root, "src/one.rs"), None);
    assert_eq!(read(root, "src/two.rs").as_deref(), Some("2"));
}

#[test]
fn deletions_and_modes_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("old/inner")).unwrap();
    std::fs::write(root.join("old/inner/x.txt"), "x").unwrap();
    std::fs::write(root.join("run.sh"), "echo").unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws, None, None);
    std::fs::remove_dir_all(root.join("old")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let changed = save(&ws, None, None);
    std::fs::write(root.join("later.txt"), "later").unwrap();
    save(&ws, None, None);
    revert(&ws, RevertOf::Snapshot(&format!("#{changed}")), &[]);
    assert_eq!(read(root, "old/inner/x.txt").as_deref(), Some("x"));
    let mode = std::fs::metadata(root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    assert_eq!(read(root, "later.txt").as_deref(), Some("later"));
}

#[test]
fn only_the_paths_given_are_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    std::fs::write(root.join("b.txt"), "1").unwrap();
    save(&ws, None, None);
    std::fs::write(root.join("a.txt"), "2").unwrap();
    std::fs::write(root.join("b.txt"), "2").unwrap();
    let changed = save(&ws, None, None);
    revert(&ws, RevertOf::Snapshot(&format!("#{changed}")), &["a.txt"]);
    assert_eq!(read(root, "a.txt").as_deref(), Some("1"));
    assert_eq!(read(root, "b.txt").as_deref(), Some("2"));
    let paths = [b"nowhere".to_vec()];
    let nothing = ws.revert(RevertOf::Snapshot("#2"), &paths, Run::Apply);
    assert!(
        matches!(nothing, Err(TreeError::NothingToRevert(_))),
        "{nothing:?}"
    );
}

#[test]
fn a_first_snapshot_or_a_pruned_parent_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    save(&ws, None, None);
    let before = disk(root);
    let refused = ws.revert(RevertOf::Snapshot("#1"), &[], Run::Apply);
    assert!(
        matches!(refused, Err(TreeError::ParentPruned(_))),
        "{refused:?}"
    );
    assert_eq!(disk(root), before);
}

#[test]
fn a_dry_run_names_what_it_would_do_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    save(&ws, None, None);
    std::fs::write(root.join("a.txt"), "2").unwrap();
    save(&ws, None, None);
    let before = disk(root);
    let seqs = ws.log(true).unwrap().len();
    let out = ws
        .revert(RevertOf::Snapshot("#2"), &[], Run::DryRun)
        .unwrap();
    assert!(out.moved.dry_run);
    assert_eq!(
        names(
            &out.moved
                .changes
                .iter()
                .map(|(p, _)| p.clone())
                .collect::<Vec<_>>()
        ),
        ["a.txt"]
    );
    assert_eq!(disk(root), before);
    assert_eq!(ws.log(true).unwrap().len(), seqs);
}

/// A turn is reverted whole, from any of its snapshots, on a line HEAD left too.
#[test]
fn a_turn_is_taken_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::write(root.join("a.txt"), "0").unwrap();
    save(&ws, Some("s"), Some(0));
    std::fs::write(root.join("a.txt"), "1").unwrap();
    let first_call = save(&ws, Some("s"), Some(1));
    std::fs::write(root.join("b.txt"), "1").unwrap();
    save(&ws, Some("s"), Some(1));
    std::fs::write(root.join("c.txt"), "2").unwrap();
    save(&ws, Some("s"), Some(2));
    let out = revert(&ws, RevertOf::Turn(&format!("#{first_call}")), &[]);
    assert!(out.conflicts.is_empty());
    assert_eq!(read(root, "a.txt").as_deref(), Some("0"));
    assert_eq!(read(root, "b.txt"), None);
    assert_eq!(read(root, "c.txt").as_deref(), Some("2"));
    let message = ws.head().unwrap().unwrap().record.message;
    assert!(message.starts_with("revert turn 1 of s"), "{message}");
}

/// A change source that answers "nothing changed" whatever happened (a fault-injecting
/// stand-in for a watcher that missed a write: one through a second hard link, say).
#[derive(Debug, Default)]
struct Deaf {
    asked: std::sync::atomic::AtomicU64,
}

impl ChangeSource for Deaf {
    fn changes_since(&self, _since: Option<&WatchToken>) -> Changes {
        let seq = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Changes::Dirs {
            now: WatchToken {
                instance: [3; 16],
                seq,
            },
            dirs: Vec::new(),
        }
    }
}

/// The revert after a write its change source did not report: the source says nothing
/// changed (and a save trusting it records nothing), yet the revert names the file a
/// conflict and leaves it, and the write is saved first. It fails when the revert plans
/// from the source's answer (it wrote the earlier content over the later work).
#[test]
fn a_write_the_change_source_missed_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/f.txt"), "1").unwrap();
    std::fs::write(root.join("g.txt"), "1").unwrap();
    let mut ws = Workspace::init(root, None, false).unwrap();
    save(&ws, None, None);
    ws.set_change_source(std::sync::Arc::new(Deaf::default()));
    std::fs::write(root.join("d/f.txt"), "2").unwrap();
    std::fs::write(root.join("g.txt"), "2").unwrap();
    // The source's first answer has no token to go by: this save walks, and records one.
    let changed = save(&ws, None, None);
    std::fs::write(root.join("d/f.txt"), "later work, unseen").unwrap();
    assert!(
        ws.status().unwrap().changes.is_empty(),
        "the source is deaf"
    );
    let out = revert(&ws, RevertOf::Snapshot(&format!("#{changed}")), &[]);
    assert_eq!(names(&out.conflicts), ["d/f.txt"]);
    assert_eq!(read(root, "d/f.txt").as_deref(), Some("later work, unseen"));
    assert_eq!(read(root, "g.txt").as_deref(), Some("1"));
    let saved = out
        .moved
        .auto_saved
        .expect("the unseen write was saved first");
    let kept = ws.read_file(&saved, b"d/f.txt").unwrap();
    assert_eq!(kept, b"later work, unseen");
}

/// A file written after the revert's walk, before it plans: read again from the disk, it
/// is a conflict, left as it is, while the rest is taken back. Decided from the walk alone,
/// the revert was refused whole (the file changed during the move).
#[test]
fn a_file_written_after_the_walk_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::write(root.join("f.txt"), "1").unwrap();
    std::fs::write(root.join("g.txt"), "1").unwrap();
    let mut ws = Workspace::init(&root, None, false).unwrap();
    save(&ws, None, None);
    std::fs::write(root.join("f.txt"), "2").unwrap();
    std::fs::write(root.join("g.txt"), "2").unwrap();
    let changed = save(&ws, None, None);
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fire = std::sync::Arc::clone(&armed);
    let at = root.clone();
    ws.set_observer(Box::new(move |e| {
        let walked = matches!(e, Event::Timing { step, .. } if step.starts_with("tree walked"));
        if walked && fire.swap(false, std::sync::atomic::Ordering::SeqCst) {
            std::fs::write(at.join("f.txt"), "written after the walk").unwrap();
        }
    }));
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let out = revert(&ws, RevertOf::Snapshot(&format!("#{changed}")), &[]);
    assert!(
        !armed.load(std::sync::atomic::Ordering::SeqCst),
        "the write ran"
    );
    assert_eq!(names(&out.conflicts), ["f.txt"]);
    assert_eq!(
        read(&root, "f.txt").as_deref(),
        Some("written after the walk")
    );
    assert_eq!(read(&root, "g.txt").as_deref(), Some("1"));
}
