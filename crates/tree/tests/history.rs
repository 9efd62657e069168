//! `Workspace::log_touching`: the log of only the snapshots that changed some paths, found by
//! reading the trees along those paths, for files, directories, modes, deletions and the root.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use snap_tree::{SaveOptions, Workspace};

fn seqs(ws: &Workspace, paths: &[&str]) -> Vec<u64> {
    let paths: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    (ws.log_touching(true, &paths).unwrap().iter())
        .map(|e| e.snapshot.record.seq)
        .collect()
}

#[test]
fn only_the_snapshots_that_changed_a_path_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let save = |ws: &Workspace| ws.save(&SaveOptions::default()).unwrap();
    std::fs::create_dir_all(root.join("b/deep")).unwrap();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    std::fs::write(root.join("b/deep/c.txt"), "1").unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws); // #1: everything
    std::fs::write(root.join("a.txt"), "2").unwrap();
    save(&ws); // #2: a.txt
    std::fs::write(root.join("b/deep/c.txt"), "2").unwrap();
    save(&ws); // #3: b/deep/c.txt
    std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o755)).unwrap();
    save(&ws); // #4: a.txt's mode
    std::fs::remove_file(root.join("b/deep/c.txt")).unwrap();
    save(&ws); // #5: c.txt gone (b/deep stays, empty)
    std::fs::write(root.join("d.txt"), "new").unwrap();
    save(&ws); // #6: d.txt
    assert_eq!(seqs(&ws, &["a.txt"]), [4, 2, 1]);
    assert_eq!(seqs(&ws, &["b"]), [5, 3, 1]);
    assert_eq!(seqs(&ws, &["b/deep/c.txt"]), [5, 3, 1]);
    assert_eq!(seqs(&ws, &["d.txt"]), [6]);
    assert_eq!(seqs(&ws, &["a.txt", "d.txt"]), [6, 4, 2, 1]);
    assert_eq!(seqs(&ws, &["nowhere"]), Vec::<u64>::new());
    assert_eq!(seqs(&ws, &[""]), [6, 5, 4, 3, 2, 1]);
    // An undone snapshot is on the redo stack, still listed; the undo itself is a move, not
    // a snapshot.
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(seqs(&ws, &["d.txt"]), [6]);
}
