//! The safety invariant (docs/SAFETY.md): every byte that was there is still somewhere; signals and permission bits.

use std::path::Path;

use serde_json::Value;
use snap_e2e::*;

#[test]
fn undo_keeps_a_tracked_file_that_grew_past_max_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "data.bin", b"small\n");
    write(d, "k", b"k\n");
    ok(d, &["save"]);
    std::fs::write(d.join(".snap/config.toml"), "max_file_size = 1000\n").unwrap();
    write(d, "k", b"k2\n");
    ok(d, &["save"]);
    let big = vec![7u8; 5000];
    write(d, "data.bin", &big);
    // The tree differs from HEAD only where no save can record the file: not a step.
    let out = conserving(d, &["--json", "undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(d.join("data.bin")).unwrap(), big);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kept"], serde_json::json!(["data.bin"]));
    assert_eq!(read(d, "k"), "k\n", "the rest of the undo is carried out");
}

#[test]
fn undo_never_overwrites_an_ignored_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "out.log", b"v1\n");
    ok(d, &["save"]);
    write(d, ".gitignore", b"out.log\n");
    ok(d, &["save"]);
    write(d, "out.log", b"IMPORTANT\n");
    let out = conserving(d, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "out.log"), "IMPORTANT\n");
    assert!(stderr(&out).contains("kept out.log"), "{}", stderr(&out));
    assert!(
        !d.join(".gitignore").exists(),
        "the rest of the undo is carried out"
    );
}

/// An undo that takes a `.gitignore` away keeps the file it ignored; the redo (or restore)
/// that brings the `.gitignore` back keeps it too, where it once removed it: the target's
/// rules ignore it, so the target says nothing about it. Nested rules and a whole ignored
/// directory the same.
#[test]
fn a_move_never_removes_what_the_rules_it_brings_ignore() {
    for last in [&["redo"][..], &["restore", "#2"]] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "app.py", b"print(1)\n");
        ok(d, &["save"]);
        write(d, ".gitignore", b".env\ngen/\n");
        write(d, ".env", b"API_KEY=secret\n");
        write(d, "gen/out.o", b"obj\n");
        write(d, "d/.gitignore", b"*.log\n");
        write(d, "d/x.log", b"log\n");
        ok(d, &["save"]);
        let out = conserving(d, &["undo"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!d.join(".gitignore").exists() && d.join(".env").exists());
        let dry = json(d, &[last, &["--dry-run"]].concat());
        let out = conserving(d, last);
        assert!(out.status.success(), "{last:?}: {}", stderr(&out));
        for (path, content) in [
            (".env", "API_KEY=secret\n"),
            ("gen/out.o", "obj\n"),
            ("d/x.log", "log\n"),
        ] {
            assert_eq!(read(d, path), content, "{last:?} removed {path}");
        }
        let err = stderr(&out);
        assert!(
            err.contains("kept .env") && err.contains("kept gen"),
            "{last:?}: {err}"
        );
        assert_eq!(
            dry["kept"],
            serde_json::json!([".env", "d/x.log", "gen"]),
            "{last:?}"
        );
        assert_eq!(json(d, &["status"])["clean"], true, "{last:?}");
    }
}

/// A restore of a path the config excludes now keeps the file there and records what a save
/// right after it would (docs/SAFETY.md): the new snapshot does not hold the source's copy
/// (it did, so status then called the file deleted and the next undo saved that). The
/// same for a whole restore, whose snapshot is otherwise the source's tree.
#[test]
fn a_restore_records_nothing_at_a_path_it_keeps_as_ignored() {
    for args in [
        &["restore", "#1", "--", "secret.log"][..],
        &["restore", "#1"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "a.txt", b"a1\n");
        write(d, "secret.log", b"v1\n");
        ok(d, &["save"]);
        write(
            d,
            ".snap/config.toml",
            b"exclude_paths = [\"secret.log\"]\n",
        );
        write(d, "a.txt", b"a2\n");
        write(d, "secret.log", b"v2, ignored\n");
        ok(d, &["save"]);
        let out = conserving(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(read(d, "secret.log"), "v2, ignored\n");
        assert!(stderr(&out).contains("kept secret.log"), "{}", stderr(&out));
        let status = json(d, &["status"]);
        assert_eq!(status["clean"], true, "{args:?}: {status}");
        let head = json(d, &["ls", "@"]).to_string();
        assert!(!head.contains("secret.log"), "{args:?}: {head}");
        assert!(head.contains("a.txt"), "{head}");
    }
}

#[test]
fn undo_never_creates_a_path_the_ignore_rules_leave_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "keep.txt", b"1\n");
    write(d, "gen/out.o", b"obj\n");
    ok(d, &["save"]);
    std::fs::remove_file(d.join("gen/out.o")).unwrap();
    ok(d, &["save"]);
    write(d, ".snapignore", b"*.o\n");
    let v = json(d, &["undo", "2", "--dry-run"]);
    assert_eq!(v["kept"], serde_json::json!(["gen/out.o"]));
    let out = conserving(d, &["undo", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!d.join("gen/out.o").exists());
}

#[test]
fn a_move_meeting_an_ignored_directory_where_it_would_write_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "thing", b"file\n");
    ok(d, &["save"]);
    std::fs::remove_file(d.join("thing")).unwrap();
    write(d, "thing/x", b"DEEP\n");
    write(d, ".gitignore", b"thing/\n");
    ok(d, &["save"]);
    let out = conserving(d, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "thing/x"), "DEEP\n");
    assert!(stderr(&out).contains("kept thing"), "{}", stderr(&out));
}

#[test]
fn a_failed_undo_puts_back_only_what_it_touched() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..6 {
        write(d, &format!("f{i}"), format!("one {i}\n").as_bytes());
    }
    write(d, "keep/data.log", b"ignored, never to be touched\n");
    ok(d, &["save"]);
    for i in 0..6 {
        write(d, &format!("f{i}"), format!("two {i}\n").as_bytes());
    }
    write(d, ".gitignore", b"*.log\n");
    ok(d, &["save"]);
    let before = everything(d);
    let out = snap_cmd(d, &["undo"])
        .env("SNAP_FAULT", "restore-write@3:ENOSPC")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        everything(d),
        before,
        "the rollback restores exactly the state before"
    );
    assert!(!d.join(".snap/.undoing").exists());
    assert_eq!(json(d, &["status"])["clean"], true);
}

#[test]
fn finishing_an_interrupted_undo_touches_only_its_plan() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_states(d);
    ok(d, &["save"]);
    killed_at(d, &["undo"], "restore-file@5");
    // After the kill: an agent writes a new file, a build writes an ignored directory.
    write(d, "agent.txt", b"new work\n");
    write(d, ".snapignore", b"target/\n");
    write(d, "target/debug/out", b"build output\n");
    let pending = everything(d);
    for args in [
        &["status"][..],
        &["log"],
        &["diff"],
        &["show", "@"],
        &["verify"],
    ] {
        let out = snap(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("pending"),
            "{args:?} names the pending undo"
        );
        assert_eq!(everything(d), pending, "{args:?} only reads");
    }
    assert_eq!(json(d, &["status"])["pending"]["op"], "undo");
    let out = conserving(d, &["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("finished an interrupted undo"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(d, "agent.txt"), "new work\n");
    assert_eq!(read(d, "target/debug/out"), "build output\n");
    assert!(!d.join(".snap/.undoing").exists());
}

#[test]
fn a_roll_forward_saves_a_planned_file_changed_since_the_kill() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"one\n");
    write(d, "b", b"one\n");
    ok(d, &["save"]);
    write(d, "a", b"two\n");
    write(d, "b", b"two\n");
    ok(d, &["save"]);
    killed_at(d, &["undo"], "marker-written");
    write(d, "b", b"edited after the kill\n");
    // A save finishes the undo first, and says which file it saved before replacing it.
    let out = conserving(d, &["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: b had changed since the interrupted undo: saved as"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        (read(d, "a"), read(d, "b")),
        ("one\n".into(), "one\n".into())
    );
    assert_eq!(
        saved_in(d, "auto-before-undo", "b"),
        "edited after the kill\n"
    );
}

/// An undo that replaces a directory by a file, killed once the file is written: the
/// roll-forward finds the file where the directory was, and the plan's removal of the file
/// that was inside it is done, not an error (every command then failed on it, and nothing
/// could be saved any more).
#[test]
fn a_roll_forward_past_a_directory_replaced_by_a_file_finishes() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "x", b"a file\n");
    ok(d, &["save"]);
    std::fs::remove_file(d.join("x")).unwrap();
    write(d, "x/inner", b"inside\n");
    ok(d, &["save"]);
    killed_at(d, &["undo"], "restore-file");
    assert_eq!(read(d, "x"), "a file\n");
    let out = conserving(d, &["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!d.join(".snap/.undoing").exists());
    assert_eq!(json(d, &["status"])["clean"], true);
    ok(d, &["redo"]);
    assert_eq!(read(d, "x/inner"), "inside\n");
}

/// As above, with a symlink for the file: a redo that replaces a directory tree by the
/// target's symlink, killed once the symlink is written, finds it where the directory was.
/// The plan's removals below it are done (every command failed on them before); the
/// symlink is the target's own, so nothing is followed through it.
#[test]
fn a_roll_forward_past_a_directory_replaced_by_the_targets_symlink_finishes() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a/b/c/leaf", b"deep\n");
    write(d, "other", b"1\n");
    ok(d, &["save"]);
    std::fs::remove_dir_all(d.join("a")).unwrap();
    std::os::unix::fs::symlink("elsewhere", d.join("a")).unwrap();
    ok(d, &["save"]);
    ok(d, &["undo"]);
    assert_eq!(read(d, "a/b/c/leaf"), "deep\n");
    killed_at(d, &["redo"], "restore-file");
    assert!(d.join(".snap/.redoing").exists());
    let out = conserving(d, &["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!d.join(".snap/.redoing").exists());
    assert_eq!(
        std::fs::read_link(d.join("a")).unwrap(),
        Path::new("elsewhere")
    );
    assert_eq!(json(d, &["status"])["clean"], true);
    ok(d, &["undo"]);
    assert_eq!(read(d, "a/b/c/leaf"), "deep\n");
}

/// A restore that turns a directory tree back into a file, killed once the file is
/// written; the file is then edited, and the roll-forward saves the edit before replacing
/// it. The snapshot it saves must not hold the file and the old directory's entries at one
/// path (its tree was unsorted, and verify called the store damaged).
#[test]
fn a_roll_forward_saves_an_edited_file_where_a_directory_was_in_a_sound_tree() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a/b", b"v1\n");
    ok(d, &["save"]);
    std::fs::remove_file(d.join("a/b")).unwrap();
    write(d, "a/b/c/d", b"deep\n");
    ok(d, &["save"]);
    killed_at(d, &["restore", "#1"], "restore-file");
    write(d, "a/b", b"edited after the kill\n");
    let out = conserving(d, &["recover"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "a/b"), "v1\n");
    let verify = json(d, &["verify", "--read-data"]);
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(
        saved_in(d, "auto-before-restore", "a/b"),
        "edited after the kill\n"
    );
}

#[test]
fn sigterm_during_undo_stops_between_files_and_recover_finishes() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..200 {
        write(d, &format!("f{i:03}"), b"old");
    }
    ok(d, &["save"]);
    for i in 0..200 {
        write(d, &format!("f{i:03}"), b"new");
    }
    ok(d, &["save"]);
    let before = everything(d);
    let out = snap_cmd(d, &["undo"])
        .env("SNAP_FAILPOINT", "restore-file@50:term")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: stopped by a signal") && err.lines().count() == 1,
        "{err}"
    );
    assert!(d.join(".snap/.undoing").exists(), "the marker stays");
    let olds = (0..200)
        .filter(|i| read(d, &format!("f{i:03}")) == "old")
        .count();
    assert!((50..200).contains(&olds), "{olds} files undone");
    assert_conserved(d, &before, "the stopped undo");
    assert_eq!(json(d, &["status"])["pending"]["op"], "undo");
    let out = conserving(d, &["recover"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!((0..200).all(|i| read(d, &format!("f{i:03}")) == "old"));
    assert_eq!(json(d, &["status"])["clean"], true);
    assert!(!d.join(".snap/.undoing").exists());
}

#[test]
fn permission_bits_are_kept_by_undo_redo_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "secret", b"one");
    write(d, "private/key", b"k");
    write(d, "ro/file", b"r");
    chmod(d, "secret", 0o600);
    chmod(d, "private", 0o700);
    chmod(d, "ro", 0o555);
    ok(d, &["save"]);
    // An edit, a deleted directory, and a mode-only change are each undone exactly.
    write(d, "secret", b"two");
    chmod(d, "secret", 0o644);
    std::fs::remove_dir_all(d.join("private")).unwrap();
    ok(d, &["save"]);
    let status = json(d, &["status"]);
    assert_eq!(status["clean"], true);
    chmod(d, "ro/file", 0o640);
    let status = json(d, &["status"]);
    assert_eq!(
        status["changes"][0]["path"], "ro/file",
        "a mode change is a change"
    );
    ok(d, &["save"]);
    ok(d, &["undo", "2"]);
    assert_eq!(read(d, "secret"), "one");
    assert_eq!(mode_of(d, "secret"), 0o600);
    assert_eq!(mode_of(d, "private"), 0o700);
    assert_eq!(
        mode_of(d, "ro"),
        0o555,
        "set after its contents were written"
    );
    assert_eq!(mode_of(d, "ro/file"), 0o644);
    assert_eq!(json(d, &["status"])["clean"], true);
    ok(d, &["redo", "2"]);
    assert_eq!(mode_of(d, "secret"), 0o644);
    assert_eq!(mode_of(d, "ro/file"), 0o640);
    ok(d, &["restore", "#1", "--", "secret"]);
    assert_eq!(mode_of(d, "secret"), 0o600);
    chmod(d, "ro", 0o755);
}

#[test]
fn setuid_setgid_and_sticky_bits_are_never_recorded_or_restored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "tool", b"#!/bin/sh\n");
    write(d, "shared/x", b"x");
    chmod(d, "tool", 0o4755);
    chmod(d, "shared", 0o1777);
    ok(d, &["save"]);
    write(d, "tool", b"changed");
    ok(d, &["save"]);
    ok(d, &["undo"]);
    assert_eq!(mode_of(d, "tool"), 0o755);
    let ls = json(d, &["ls", "@"]);
    assert!(ls["entries"].as_array().unwrap().len() >= 3);
}

#[test]
fn status_names_every_directory_change_a_save_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    write(d, "sub/g", b"2");
    ok(d, &["save"]);
    std::fs::create_dir_all(d.join("empty/inner")).unwrap();
    let v = json(d, &["status"]);
    assert_eq!(
        v["clean"], false,
        "an empty directory is tracked, so not clean"
    );
    assert_eq!(
        v["dirs"],
        serde_json::json!([{"path": "empty/inner", "status": "added"}])
    );
    assert!(ok(d, &["status"]).contains("A empty/inner/"));
    assert_eq!(json(d, &["save"])["created"], true);
    assert_eq!(json(d, &["status"])["clean"], true);
    chmod(d, "sub", 0o700);
    let v = json(d, &["status"]);
    assert_eq!(
        v["dirs"],
        serde_json::json!([{"path": "sub", "status": "modified"}])
    );
    assert_eq!(json(d, &["save"])["created"], true);
    std::fs::remove_dir_all(d.join("empty")).unwrap();
    let v = json(d, &["status"]);
    assert_eq!(
        v["dirs"],
        serde_json::json!([{"path": "empty/inner", "status": "deleted"}])
    );
    assert_eq!(json(d, &["save"])["created"], true);
    assert_eq!(json(d, &["status"])["clean"], true);
    assert_eq!(json(d, &["save"])["created"], false);
}

fn pack_files(d: &Path) -> Vec<std::path::PathBuf> {
    let packs = std::fs::read_dir(d.join(".snap/packs")).unwrap();
    packs.map(|e| e.unwrap().path()).collect()
}

/// Flips every payload byte of the frames of object kind `kind` (5: blocks, 3: trees) in the
/// packs of `d` not in `old`; the other frames stay sound.
fn rot_new_frames(d: &Path, old: &[std::path::PathBuf], kind: u8) {
    for pack in pack_files(d).into_iter().filter(|p| !old.contains(p)) {
        let mut bytes = std::fs::read(&pack).unwrap();
        let footer = bytes.len() - 56;
        let index = u64::from_le_bytes(bytes[footer + 8..footer + 16].try_into().unwrap());
        let mut at = 16;
        while at < index as usize {
            let stored = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            if bytes[at] == kind {
                bytes[at + 44..at + 44 + stored]
                    .iter_mut()
                    .for_each(|b| *b ^= 0x5a);
            }
            at += 44 + stored;
        }
        std::fs::write(&pack, bytes).unwrap();
    }
}

/// Found from outside: a restore over a pack whose block had rotted replaced and removed the
/// files whose only sound copy was on disk (the catalog still named their contents).
#[test]
fn a_restore_over_a_rotted_pack_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"hello A\n");
    ok(d, &["save"]);
    let old = pack_files(d);
    write(d, "a.txt", b"version 2 of A, its only copy\n");
    write(d, "b.txt", b"b, its only copy\n");
    ok(d, &["save"]);
    rot_new_frames(d, &old, 5);
    write(d, "c.txt", b"unsaved c\n");
    let out = conserving(d, &["restore", "#1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"hello A\n");
}

/// A move that cannot read what it needs from a damaged store changes nothing, and its one
/// `error:` line says where to go from there.
#[test]
fn an_undo_over_rotted_trees_changes_nothing_and_points_at_verify_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "sub/a.txt", b"one\n");
    ok(d, &["save"]);
    let old = pack_files(d);
    write(d, "sub/a.txt", b"two\n");
    ok(d, &["save"]);
    rot_new_frames(d, &old, 3);
    write(d, "sub/a.txt", b"three, unsaved\n");
    let out = conserving(d, &["undo"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("snap repair"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(d.join("sub/a.txt")).unwrap(),
        b"three, unsaved\n"
    );
}

/// What `path` holds in the snapshot of `kind` that `log --all` lists.
fn saved_in(d: &Path, kind: &str, path: &str) -> String {
    let all = json(d, &["log", "--all"]);
    let saved = (all["snapshots"].as_array().unwrap().iter())
        .find(|s| s["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} snapshot: {all}"));
    ok(d, &["cat", saved["id"].as_str().unwrap(), path])
}
