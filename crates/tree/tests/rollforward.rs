//! A roll-forward finishes every step of the recorded plan, directories included: the state
//! a kill leaves between a removal's rename to the operation's own temporary name and its
//! unlink, laid out by hand (the instant no failpoint marks), then finished by opening the
//! workspace. The tree must be the target exactly, with no empty directory left over.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use snap_tree::testing::restore::OpId;
use snap_tree::{Marker, Op, SaveOptions, Workspace};

fn write(root: &Path, path: &str, body: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// Every path under `root` but the store, sorted.
fn paths(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".snap" {
                continue;
            }
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.push(rel);
        }
    }
    out.sort();
    out
}

/// An undo of a snapshot that made `new/sub/...`, killed after it removed the last file of
/// `new/sub` but before it unlinked the name that file was renamed to. It fails when the
/// roll-forward removes the directories before sweeping its own name out of them: `new/`
/// and `new/sub/` were left, empty, and the undo said it finished.
#[test]
fn a_kill_between_a_removal_and_its_unlink_leaves_no_directory_behind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "base.txt", "base");
    let ws = Workspace::init(root, None, false).unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    let first = ws.head().unwrap().unwrap();
    let target = paths(root);
    write(root, "new/g", "g");
    write(root, "new/sub/f1", "f1");
    write(root, "new/sub/f2", "f2");
    ws.save(&SaveOptions::default()).unwrap();
    let second = ws.head().unwrap().unwrap();
    let op = OpId(4242);
    let marker = Marker {
        op: Op::Undo,
        head: first.id,
        redo: vec![second.id],
        from: Some(second.record.root),
        kept: Vec::new(),
        op_id: Some(op),
        lifted: Vec::new(),
    };
    marker.write(ws.store().dir()).unwrap();
    drop(ws);
    std::fs::remove_file(root.join("new/g")).unwrap();
    std::fs::remove_file(root.join("new/sub/f1")).unwrap();
    let temp = root.join("new/sub").join(op.temp_name());
    std::fs::rename(root.join("new/sub/f2"), &temp).unwrap();
    let mut ws = Workspace::discover(root, None).unwrap();
    let recovered = ws.recover_now().unwrap();
    assert_eq!(recovered.len(), 1, "the undo was finished");
    assert!(recovered[0].kept.is_empty(), "{:?}", recovered[0].kept);
    assert_eq!(paths(root), target, "the tree is the target exactly");
    assert_eq!(ws.head().unwrap().unwrap().id, first.id);
    let status = ws.status().unwrap();
    assert!(
        status.changes.is_empty() && status.dirs.is_empty(),
        "status is clean"
    );
}
