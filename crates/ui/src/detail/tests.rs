#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use snap_tree::{Change, Workspace};

use super::{Base, DiffLineKind, changed_files, file_diff};
use crate::fixture::Fixture;

fn texts(lines: &[super::DiffLine]) -> Vec<String> {
    lines.iter().map(|l| l.text.clone()).collect()
}

#[test]
fn a_snapshot_s_files_and_diff_against_its_parent() {
    let f = Fixture::agent_history();
    let ws = Workspace::discover(f.root(), None).unwrap();
    let third = ws.resolve("#3").unwrap();
    let files = changed_files(&ws, &third).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        (files[0].path.as_slice(), files[0].change),
        (&b"b.txt"[..], Change::Modified)
    );
    let diff = file_diff(&ws, &third, b"b.txt", Base::Parent, None).unwrap();
    assert_eq!(texts(&diff), ["@@ -1 +1,2 @@", " b1", "+b2"]);
    assert_eq!(diff[2].kind, DiffLineKind::Added);

    // The first snapshot's files are all added, from nothing.
    let first = ws.resolve("#1").unwrap();
    let files = changed_files(&ws, &first).unwrap();
    assert_eq!(files[0].change, Change::Added);
}

#[test]
fn against_the_working_tree_and_a_marked_snapshot() {
    let f = Fixture::agent_history();
    f.write("b.txt", "b1\nb2\nb3\n");
    let ws = Workspace::discover(f.root(), None).unwrap();
    let third = ws.resolve("#3").unwrap();
    let diff = file_diff(&ws, &third, b"b.txt", Base::WorkingTree, None).unwrap();
    assert!(texts(&diff).contains(&"+b3".to_string()), "{diff:?}");

    let second = ws.resolve("#2").unwrap();
    let latest = ws.resolve("@").unwrap();
    let diff = file_diff(&ws, &latest, b"b.txt", Base::Marked, Some(&second)).unwrap();
    assert_eq!(texts(&diff), ["@@ -1 +1,2 @@", " b1", "+b2"]);
    let same = file_diff(&ws, &latest, b"b.txt", Base::Marked, Some(&third)).unwrap();
    assert_eq!(texts(&same), ["no difference"]);
}

#[test]
fn modes_and_binaries_are_said_in_words() {
    let f = Fixture::new();
    f.write("run.sh", "echo hi\n");
    std::fs::write(f.root().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    f.save("first");
    let script = f.root().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(f.root().join("blob.bin"), [0u8; 10]).unwrap();
    f.save("second");
    let ws = Workspace::discover(f.root(), None).unwrap();
    let head = ws.resolve("@").unwrap();
    let mode = file_diff(&ws, &head, b"run.sh", Base::Parent, None).unwrap();
    assert_eq!(mode[0].kind, DiffLineKind::Note);
    assert!(
        mode[0].text.contains("executable") || mode[0].text.contains("755"),
        "{mode:?}"
    );
    let blob = file_diff(&ws, &head, b"blob.bin", Base::Parent, None).unwrap();
    assert_eq!(texts(&blob), ["binary: 4 bytes -> 10 bytes"]);
}

#[test]
fn base_cycles_through_the_marked_snapshot_only_when_one_is_marked() {
    assert_eq!(Base::Parent.next(false), Base::WorkingTree);
    assert_eq!(Base::WorkingTree.next(false), Base::Parent);
    assert_eq!(Base::WorkingTree.next(true), Base::Marked);
    assert_eq!(Base::Marked.next(true), Base::Parent);
}

#[test]
fn a_file_moved_unchanged_is_one_renamed_row() {
    let f = Fixture::new();
    f.write("old.txt", "same\n");
    f.save("first");
    std::fs::create_dir_all(f.root().join("d")).unwrap();
    std::fs::rename(f.root().join("old.txt"), f.root().join("d/new.txt")).unwrap();
    f.save("moved");
    let ws = Workspace::discover(f.root(), None).unwrap();
    let head = ws.resolve("@").unwrap();
    let files = changed_files(&ws, &head).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].path, b"d/new.txt");
    assert_eq!(files[0].from.as_deref(), Some(&b"old.txt"[..]));
    let diff = file_diff(&ws, &head, b"d/new.txt", Base::Parent, None).unwrap();
    assert_eq!(
        texts(&diff),
        ["renamed from old.txt (100% alike)", "no line differs"]
    );
}
