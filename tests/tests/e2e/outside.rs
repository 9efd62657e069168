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
    if !test_hooks() {
        return;
    }
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

/// Runs snap with `args`, killing it (and failing) if it has not finished in 60 s.
fn within_a_minute(d: &Path, args: &[&str]) -> std::process::Output {
    let mut child = snap_cmd(d, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("snap {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

#[test]
fn a_fifo_named_like_an_ignore_file_hangs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_saves(d);
    mkfifo(&d.join(".gitignore"));
    write(d, "sub/a", b"a\n");
    mkfifo(&d.join("sub/.snapignore"));
    for args in [&["save"][..], &["status"], &["diff"], &["undo"], &["redo"]] {
        let before = everything(d);
        let out = within_a_minute(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_conserved(d, &before, &format!("{args:?}"));
    }
    assert_eq!(read(d, "sub/a"), "a\n");
}

#[test]
fn what_the_agent_writes_never_drives_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "k", b"k\n");
    let evil = "\x1b]0;owned\x07\x1b[2J";
    let meta = format!("tool={evil}");
    ok(d, &["save", "-m", evil, "--session", evil, "--meta", &meta]);
    for args in [&["log"][..], &["show", "@"]] {
        let shown = ok(d, args);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07'),
            "{args:?}: {shown:?}"
        );
        assert!(shown.contains("\\x1b]0;owned\\x07"), "{args:?}: {shown}");
    }
    let doc = json(d, &["log"]);
    assert_eq!(
        doc["snapshots"][0]["message"], evil,
        "JSON carries the text as it is"
    );
}

#[test]
fn a_store_that_lost_its_scratch_directory_mends_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_saves(d);
    std::fs::remove_dir_all(d.join(".snap/tmp")).unwrap();
    let doc = json(d, &["verify"]);
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["recreated"].as_array().map(Vec::len), Some(1), "{doc}");
    std::fs::remove_dir_all(d.join(".snap/tmp")).unwrap();
    write(d, "k", b"three\n");
    let out = conserving(d, &["save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_dir_all(d.join(".snap/tmp")).unwrap();
    let out = conserving(d, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "k"), "two\n");
}

/// The unprivileged uid the permission cases run snap as (CI runs as root, and root reads
/// 0600 files and writes into 0555 directories). `None` when not root, or without setpriv.
fn nobody() -> Option<u32> {
    let root = rustix::process::geteuid().is_root();
    let setpriv = Path::new("/usr/bin/setpriv").exists();
    if !(root && setpriv) {
        eprintln!("skipped: needs root and setpriv to run snap as another uid");
    }
    (root && setpriv).then_some(65534)
}

/// snap `args` in `d`, as uid and gid `uid`.
fn snap_as(uid: u32, d: &Path, args: &[&str]) -> std::process::Output {
    let id = uid.to_string();
    std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid", &id, "--regid", &id, "--clear-groups"])
        .arg(bin("snap"))
        .arg("-C")
        .arg(d)
        .args(args)
        .env_remove("SNAP_STORE")
        .env("HOME", "/nonexistent-home")
        .output()
        .unwrap()
}

/// As [`snap_as`], checking the conservation oracle around it (read as root).
fn conserving_as(uid: u32, d: &Path, args: &[&str]) -> std::process::Output {
    let before = everything(d);
    let out = snap_as(uid, d, args);
    assert_conserved(d, &before, &format!("{args:?} as {uid}"));
    out
}

/// As [`conserving_as`], asserting that the command succeeded.
fn ok_as(uid: u32, d: &Path, args: &[&str]) -> std::process::Output {
    let out = conserving_as(uid, d, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

fn chown_all(d: &Path, uid: u32) {
    let id = format!("{uid}:{uid}");
    let done = std::process::Command::new("chown")
        .args(["-R", &id])
        .arg(d)
        .status()
        .unwrap();
    assert!(done.success());
}

#[test]
fn an_unreadable_file_is_reported_and_kept_and_the_rest_is_saved() {
    let Some(uid) = nobody() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("w");
    write(d, "k", b"one\n");
    chown_all(dir.path(), uid);
    let ran = |args: &[&str]| ok_as(uid, d, args);
    ran(&["save"]);
    // A container, as root, writes a private file; the agent edits another.
    write(d, "private.key", b"root's own\n");
    chmod(d, "private.key", 0o600);
    write(d, "k", b"two\n");
    let out = ran(&["--json", "save"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = &doc["skipped"]["skipped_unreadable"];
    assert_eq!(skipped[0]["path"], "private.key", "{doc}");
    assert!(
        skipped[0]["error"].as_str().unwrap().contains("ermission"),
        "{doc}"
    );
    let out = ran(&["status"]);
    assert!(
        stderr(&out).contains("skipped private.key"),
        "{}",
        stderr(&out)
    );
    ran(&["undo"]);
    assert_eq!(read(d, "k"), "one\n");
    assert_eq!(read(d, "private.key"), "root's own\n", "never touched");
}

/// A directory snap may not open (root's 0700, once tracked): every save names it and
/// records the rest, and undo and redo get past it, leaving it exactly as it is.
#[test]
fn an_unreadable_directory_is_reported_and_kept_and_moves_get_past_it() {
    let Some(uid) = nobody() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("w");
    write(d, "k", b"one\n");
    write(d, "priv/s", b"root's own\n");
    ok(d, &["save"]);
    write(d, "k", b"two\n");
    ok(d, &["save"]);
    chown_all(dir.path(), uid);
    let root_only = std::process::Command::new("chown")
        .args(["-R", "0:0"])
        .arg(d.join("priv"))
        .status()
        .unwrap();
    assert!(root_only.success());
    chmod(d, "priv", 0o700);
    let ran = |args: &[&str]| ok_as(uid, d, args);
    write(d, "k", b"three\n");
    chown_all(&d.join("k"), uid);
    let out = ran(&["--json", "save"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["skipped"]["skipped_unreadable"][0]["path"], "priv",
        "{doc}"
    );
    let count = snapshot_count(d);
    ran(&["undo"]);
    assert_eq!(read(d, "k"), "two\n");
    ran(&["undo"]);
    assert_eq!(read(d, "k"), "one\n", "undo got past the directory");
    ran(&["redo"]);
    assert_eq!(read(d, "k"), "two\n");
    assert_eq!(snapshot_count(d), count, "no abandoned auto snapshots");
    assert_eq!(read(d, "priv/s"), "root's own\n", "never touched");
}

/// `data.bin` and `k` saved twice, with `max_file_size` lowered to 1000 after the first.
fn small_then_limited(d: &Path) {
    write(d, "data.bin", b"small\n");
    write(d, "k", b"k1\n");
    ok(d, &["save"]);
    std::fs::write(d.join(".snap/config.toml"), "max_file_size = 1000\n").unwrap();
    write(d, "k", b"k2\n");
    ok(d, &["save"]);
}

fn snapshot_count(d: &Path) -> usize {
    json(d, &["log", "--all"])["snapshots"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn undo_gets_past_a_file_that_became_untrackable() {
    for fifo in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        small_then_limited(d);
        std::fs::remove_file(d.join("data.bin")).unwrap();
        if fifo {
            mkfifo(&d.join("data.bin"));
        } else {
            write(d, "data.bin", &[7u8; 5000]);
        }
        let before = snapshot_count(d);
        let out = conserving(d, &["--json", "undo"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            doc["kept"],
            serde_json::json!(["data.bin"]),
            "fifo {fifo}: {doc}"
        );
        assert_eq!(read(d, "k"), "k1\n", "fifo {fifo}: undo went back a step");
        assert_eq!(
            snapshot_count(d),
            before,
            "fifo {fifo}: nothing to save first"
        );
        let out = conserving(d, &["undo"]);
        assert_eq!(out.status.code(), Some(3), "fifo {fifo}: {}", stderr(&out));
    }
}

#[test]
fn a_restore_records_what_is_on_disk_at_an_untrackable_path() {
    for fifo in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        small_then_limited(d);
        std::fs::remove_file(d.join("data.bin")).unwrap();
        ok(d, &["save"]);
        if fifo {
            mkfifo(&d.join("data.bin"));
        } else {
            write(d, "data.bin", &[7u8; 5000]);
        }
        let out = conserving(d, &["--json", "restore", "#1"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            doc["kept"],
            serde_json::json!(["data.bin"]),
            "fifo {fifo}: {doc}"
        );
        assert_eq!(read(d, "k"), "k1\n");
        let status = json(d, &["status"]);
        assert_eq!(status["clean"], true, "fifo {fifo}: {status}");
        let out = conserving(d, &["ls", "@"]);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("data.bin"));
    }
}

#[test]
fn a_move_writes_into_a_read_only_directory_and_gives_its_mode_back() {
    let Some(uid) = nobody() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("w");
    write(d, "ro/f", b"v1\n");
    write(d, "theirs/g", b"g1\n");
    chown_all(dir.path(), uid);
    chmod(d, "ro", 0o555);
    // A read-only directory of another owner, its file writable: snap may not lift it.
    let root_owned = std::process::Command::new("chown")
        .arg("0:0")
        .arg(d.join("theirs"))
        .status()
        .unwrap();
    assert!(root_owned.success());
    chmod(d, "theirs", 0o555);
    let ran = |args: &[&str]| conserving_as(uid, d, args);
    assert!(ran(&["save"]).status.success());
    write(d, "ro/f", b"v2\n");
    std::fs::write(d.join("theirs/g"), b"g2\n").unwrap();
    assert!(ran(&["save"]).status.success());
    // The redo finds theirs/g already as its target has it (the undo kept it).
    let moves = [
        (
            &["--json", "undo"][..],
            "v1\n",
            serde_json::json!(["theirs"]),
        ),
        (&["--json", "redo"][..], "v2\n", serde_json::json!([])),
    ];
    for (args, want, kept) in moves {
        let out = ran(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(read(d, "ro/f"), want, "{args:?}");
        assert_eq!(mode_of(d, "ro"), 0o555, "{args:?}: the mode is given back");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["kept"], kept, "{args:?}: {doc}");
        assert_eq!(read(d, "theirs/g"), "g2\n", "{args:?}: kept as it is");
    }
}

#[test]
fn a_huge_ignore_file_is_refused_and_its_directory_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "top", b"t1\n");
    write(d, "sub/a", b"a1\n");
    ok(d, &["save"]);
    write(d, "sub/a", b"a2\n");
    let huge: String = (0..100_000).map(|i| format!("gen-{i}-*.tmp\n")).collect();
    assert!(huge.len() > 1 << 20);
    write(d, "sub/.gitignore", huge.as_bytes());
    write(d, "top", b"t2\n");
    let out = within_a_minute(d, &["--json", "save"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused = &doc["skipped"]["ignore_files_refused"];
    assert_eq!(refused, &serde_json::json!(["sub/.gitignore"]), "{doc}");
    let listed = ok(d, &["ls", "@"]);
    assert!(
        !listed.contains("sub"),
        "its directory is left out: {listed}"
    );
    let status = within_a_minute(d, &["status"]);
    assert!(
        stderr(&status).contains("refused sub/.gitignore"),
        "{}",
        stderr(&status)
    );
    let out = conserving(d, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "top"), "t1\n");
    assert_eq!(read(d, "sub/a"), "a2\n", "kept, never touched");
    assert!(d.join("sub/.gitignore").exists());
}

/// A file under a directory chain whose path passes PATH_MAX (4,096 bytes).
fn deep_leaf() -> String {
    let dirs: Vec<String> = (0..22)
        .map(|i| format!("{i:02}{}", "d".repeat(198)))
        .collect();
    format!("{}/leaf.txt", dirs.join("/"))
}

/// Writes `content` at `rel` under `d`, one directory at a time (the whole path is too
/// long for one system call).
fn write_deep(d: &Path, rel: &str, content: &[u8]) {
    let cwd = std::env::current_dir().unwrap();
    let (dirs, leaf) = rel.rsplit_once('/').unwrap();
    let mut fd =
        rustix::fs::open(d, rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
    for name in dirs.split('/') {
        let _ = rustix::fs::mkdirat(&fd, name, rustix::fs::Mode::from_raw_mode(0o755));
        fd = rustix::fs::openat(
            &fd,
            name,
            rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
    }
    let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::TRUNC;
    let file =
        rustix::fs::openat(&fd, leaf, flags, rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
    rustix::io::write(&file, content).unwrap();
    assert_eq!(std::env::current_dir().unwrap(), cwd);
}

#[test]
fn a_path_past_path_max_is_saved_and_undone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let leaf = deep_leaf();
    assert!(d.join(&leaf).as_os_str().len() > 4096);
    write(d, "top", b"t1\n");
    write_deep(d, &leaf, b"deep1\n");
    ok(d, &["save"]);
    write_deep(d, &leaf, b"deep2\n");
    write(d, "top", b"t2\n");
    ok(d, &["save"]);
    assert_eq!(ok(d, &["cat", "@", &leaf]), "deep2\n");
    let out = snap(d, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "top"), "t1\n");
    assert_eq!(ok(d, &["cat", "@", &leaf]), "deep1\n");
    let status = json(d, &["status"]);
    assert_eq!(status["clean"], true, "{status}");
}
