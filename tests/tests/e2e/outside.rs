//! Breaks found from outside in the second hunt (names snap does not own, files snap cannot
//! read, what the agent writes reaching a terminal, a store that lost its scratch space):
//! one regression test each, through the conservation oracle where it writes.

use std::path::Path;

use snap_e2e::*;

/// Two saves of `k`, so that an undo has one file to write.
fn two_saves(d: &Path) {
    write(d, "k", b"one\n");
    ok(d, &["save"]);
    write(d, "k", b"two\n");
    ok(d, &["save"]);
}

#[test]
fn a_roll_forward_never_removes_a_file_for_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, ".gitignore", b".snap-tmp-*\n");
    two_saves(d);
    // Names of the shape an older snap swept, one ignored from before, one made after.
    write(d, ".snap-tmp-12-34", b"ignored, mine\n");
    killed_at(d, &["undo"], "restore-file");
    write(d, ".snap-tmp-56-78", b"made after the kill\n");
    write(d, ".snap-tmp-1-2-3", b"three numbers, still mine\n");
    let out = conserving(d, &["recover"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, ".snap-tmp-12-34"), "ignored, mine\n");
    assert_eq!(read(d, ".snap-tmp-56-78"), "made after the kill\n");
    assert_eq!(read(d, ".snap-tmp-1-2-3"), "three numbers, still mine\n");
    assert_eq!(read(d, "k"), "one\n", "the undo was finished");
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".snap-tmp-"))
        .collect();
    assert_eq!(
        left.len(),
        3,
        "the killed undo's own names are gone: {left:?}"
    );
}
