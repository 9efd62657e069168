//! History a person reads and takes back: `snap revert` of one snapshot and of a turn, its
//! conflicts, its preview and its refusals, and the undo of a revert.

use snap_e2e::*;

/// Three tool calls; the middle one is taken back and the other two stay.
#[test]
fn revert_takes_back_one_of_three_and_keeps_the_later_two() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "base.txt", b"base\n");
    ok(d, &["save", "-m", "start"]);
    for (n, name) in ["one", "two", "three"].iter().enumerate() {
        write(d, &format!("{name}.txt"), format!("{name}\n").as_bytes());
        write(d, "base.txt", format!("base\n{n}\n").as_bytes());
        ok(d, &["save", "-m", name, "--meta", "tool=Write"]);
    }
    // #3 wrote two.txt and base.txt; base.txt changed again in #4, so it is a conflict.
    let preview = json(d, &["revert", "#3", "--dry-run"]);
    assert_eq!(preview["dry_run"], true);
    assert_eq!(preview["conflicts"], serde_json::json!(["base.txt"]));
    assert!(d.join("two.txt").exists(), "a preview writes nothing");
    let out = conserving(d, &["revert", "#3"]);
    assert_eq!(out.status.code(), Some(0));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stdout.contains("took back #3") && stdout.contains("D two.txt"),
        "{stdout}"
    );
    assert!(
        stderr.contains("conflict: base.txt changed since #3"),
        "{stderr}"
    );
    assert!(!d.join("two.txt").exists());
    assert_eq!(read(d, "one.txt"), "one\n");
    assert_eq!(read(d, "three.txt"), "three\n");
    assert_eq!(read(d, "base.txt"), "base\n2\n");
    let head = json(d, &["show", "@"]);
    assert_eq!(head["kind"], "restore");
    assert_eq!(head["message"], "revert #3");
    assert_eq!(head["meta"]["revert"].as_str().unwrap().len(), 64);
    // The revert is itself undone like any restore.
    ok(d, &["undo"]);
    assert_eq!(read(d, "two.txt"), "two\n");
    ok(d, &["verify"]);
}

#[test]
fn revert_of_a_turn_and_its_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"0\n");
    ok(d, &["save", "-m", "start"]);
    let turn = ["--session", "s1", "--step", "1"];
    write(d, "a.txt", b"1\n");
    ok(d, &[&["save", "-m", "edit a"][..], &turn].concat());
    write(d, "b.txt", b"1\n");
    ok(d, &[&["save", "-m", "write b"][..], &turn].concat());
    write(d, "c.txt", b"later\n");
    ok(d, &["save", "-m", "by hand"]);
    // --turn names the turn by any of its snapshots.
    let out = conserving(d, &["--json", "revert", "--turn", "#2"]);
    let out: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out["op"], "revert");
    assert_eq!(out["reverted"]["seq"], 3);
    assert_eq!(out["before"]["seq"], 1);
    assert_eq!(read(d, "a.txt"), "0\n");
    assert!(!d.join("b.txt").exists());
    assert_eq!(read(d, "c.txt"), "later\n");
    for (args, code, says) in [
        (&["revert", "#1"][..], 1, "the snapshot before it"),
        (&["revert", "--turn"], 3, "nothing to revert"),
        (&["revert", "#5", "--", "nowhere"], 3, "nothing to revert"),
        (&["revert"], 2, "required"),
    ] {
        let out = conserving(d, args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
    // A missing reference hints at the shell's `#` comment.
    let said = text(&snap(d, &["restore"]).stderr);
    assert!(
        said.contains("hint: an unquoted # starts a shell comment"),
        "{said}"
    );
    ok(d, &["verify"]);
}

/// `revert --turn` names the whole turn it took back, not only its newest snapshot.
#[test]
fn revert_of_a_turn_names_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"0\n");
    ok(d, &["save", "-m", "start"]);
    let turn = ["--session", "s1", "--step", "1"];
    write(d, "a.txt", b"1\n");
    ok(d, &[&["save", "-m", "edit a"][..], &turn].concat());
    write(d, "b.txt", b"1\n");
    ok(d, &[&["save", "-m", "write b"][..], &turn].concat());
    let said = ok(d, &["revert", "--turn"]);
    assert!(
        said.contains("took back the turn after #1 through #3"),
        "{said}"
    );
    let said = ok(d, &["revert", "#4"]);
    assert!(said.contains("took back #4,"), "{said}");
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `prune --keep-last N` counts HEAD's line: three abandoned snapshots take none of its
/// places, and the baseline stays. The oldest kept snapshot, whose parent went, is shown
/// as the first kept, never as every file added (issue 53, item 5).
#[test]
fn prune_keeps_heads_line_and_shows_the_first_kept_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in 1..=5 {
        write(d, "a.txt", format!("{n}\n").as_bytes());
        write(d, &format!("f{n}.txt"), b"x\n");
        ok(d, &["save", "-m", &format!("s{n}")]);
    }
    ok(d, &["undo", "3"]);
    for n in 6..=8 {
        write(d, "b.txt", format!("{n}\n").as_bytes());
        ok(d, &["save", "-m", &format!("s{n}")]);
    }
    let before = everything(d);
    let count = |all: bool| {
        let args: &[&str] = if all { &["log", "--all"] } else { &["log"] };
        json(d, args)["snapshots"].as_array().unwrap().len()
    };
    // The undo saved nothing (a clean tree), so HEAD's line is #8, #7, #6, #2, #1.
    assert_eq!((count(false), count(true)), (5, 8));
    ok(d, &["prune", "--keep-last", "5"]);
    assert_eq!((count(false), count(true)), (5, 8), "the baseline #1 stays");
    ok(d, &["prune", "--keep-last", "2"]);
    ok(d, &["gc"]);
    assert_conserved(d, &before, "prune");
    assert_eq!((count(false), count(true)), (2, 2));
    let first = json(d, &["show", "#7"]);
    assert_eq!(first["first_kept"], true);
    assert_eq!(first["changes"].as_array().unwrap().len(), 0);
    let said = ok(d, &["show", "#7"]);
    assert!(said.contains("first snapshot kept"), "{said}");
    assert_eq!(json(d, &["show", "#8"])["first_kept"], false);
}

/// An undo over unsaved edits says that it took those edits back, and where they went.
#[test]
fn undo_over_unsaved_edits_says_it_took_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"1\n");
    ok(d, &["save", "-m", "one"]);
    write(d, "a", b"2\n");
    ok(d, &["save", "-m", "two"]);
    write(d, "a", b"3\n");
    let said = ok(d, &["undo"]);
    assert!(
        said.contains("took back your unsaved changes: saved as #3"),
        "{said}"
    );
    assert_eq!(read(d, "a"), "2\n");
    ok(d, &["redo"]);
    assert_eq!(read(d, "a"), "3\n");
}
