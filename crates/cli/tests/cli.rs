//! End-to-end tests of the `snap` binary: every command, its exit codes, JSON and human output,
//! and a kill -9 test of an interrupted undo. Real filesystem, temp directories.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "support/powerloss.rs"]
mod powerloss;

fn snap_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snap"));
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("SNAP_STORE")
        .env_remove("SNAP_DISABLE")
        .env("HOME", "/nonexistent-home");
    cmd
}

fn snap(dir: &Path, args: &[&str]) -> Output {
    snap_cmd(dir, args).output().expect("run snap")
}

/// Runs snap and insists on success; returns stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = snap(dir, args);
    assert!(
        out.status.success(),
        "snap {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(dir, &all)).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(root: &Path, path: &str, content: &[u8]) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn init_creates_the_store_with_its_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(dir.path(), &["init"]);
    assert!(v["store"].as_str().unwrap().ends_with(".snap"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".snap/.gitignore")).unwrap(),
        "*\n"
    );
    assert!(
        ok(dir.path(), &["init"]).contains("already exists"),
        "init twice is fine, and says so"
    );
}

#[test]
fn save_reports_ids_and_nothing_changed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one");
    let v = json(
        d,
        &[
            "save",
            "-m",
            "first",
            "--step",
            "1",
            "--session",
            "s1",
            "--meta",
            "turn=12",
            "--meta",
            "tool=edit",
        ],
    );
    assert_eq!(v["created"], true);
    assert_eq!(v["seq"], 1);
    assert_eq!(v["id"].as_str().unwrap().len(), 64);
    assert_eq!(v["head"], v["id"]);
    assert_eq!(v["snapshot"]["meta"]["turn"], "12");
    assert_eq!(v["changes"][0]["path"], "a.txt");
    assert_eq!(v["changes"][0]["status"], "added");
    let again = json(d, &["save"]);
    assert_eq!(again["created"], false);
    assert_eq!(again["head"], v["id"]);
    assert!(ok(d, &["save"]).contains("nothing changed"));
    let empty = json(d, &["save", "--allow-empty"]);
    assert_eq!(empty["created"], true);
    assert_eq!(empty["seq"], 2);
}

#[test]
fn save_refuses_home_without_force_and_honours_snap_disable() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = snap_cmd(d, &["save"]).env("HOME", d).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: refusing"),
        "{}",
        stderr(&out)
    );
    assert!(!d.join(".snap").exists());
    let out = snap_cmd(d, &["save"])
        .env("SNAP_DISABLE", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        !d.join(".snap").exists(),
        "SNAP_DISABLE=1 makes save a no-op"
    );
    let out = snap_cmd(d, &["save", "--force"])
        .env("HOME", d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn undo_redo_and_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    ok(d, &["save"]);
    let out = snap(d, &["undo"]);
    assert_eq!(out.status.code(), Some(3), "nothing to undo");
    assert!(stderr(&out).starts_with("error: nothing to undo"));
    let out = snap(d, &["--json", "redo"]);
    assert_eq!(out.status.code(), Some(3), "nothing to redo");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("nothing to redo"));
    write(d, "f", b"2");
    ok(d, &["save"]);
    write(d, "f", b"3");
    ok(d, &["save"]);
    let v = json(d, &["undo", "2"]);
    assert_eq!(v["target"]["seq"], 1);
    assert_eq!(v["passed_count"], 2);
    assert_eq!(read(d, "f"), "1");
    ok(d, &["redo"]);
    assert_eq!(read(d, "f"), "2");
    ok(d, &["rewind"]);
    assert_eq!(read(d, "f"), "1");
    let v = json(d, &["redo", "2"]);
    assert_eq!(v["head"], v["target"]["id"]);
    assert_eq!(read(d, "f"), "3");
    assert_eq!(snap(d, &["redo"]).status.code(), Some(3));
    assert_eq!(
        snap(d, &["undo", "0"]).status.code(),
        Some(2),
        "0 steps is a usage error"
    );
}

#[test]
fn undo_saves_hand_edits_first_so_redo_brings_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"saved");
    ok(d, &["save"]);
    write(d, "f", b"hand edit");
    write(d, "new", b"new file");
    let v = json(d, &["undo"]);
    assert_eq!(v["auto_saved"]["kind"], "auto-before-undo");
    assert_eq!(read(d, "f"), "saved");
    assert!(!d.join("new").exists());
    ok(d, &["redo"]);
    assert_eq!(read(d, "f"), "hand edit");
    assert_eq!(read(d, "new"), "new file");
}

#[test]
fn dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    ok(d, &["save", "--meta", "turn=1"]);
    write(d, "f", b"2");
    ok(d, &["save", "--meta", "turn=2"]);
    let v = json(d, &["undo", "--dry-run"]);
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["target"]["meta"]["turn"], "1");
    assert_eq!(v["passed"][0]["meta"]["turn"], "2");
    assert_eq!(v["changes"][0]["status"], "modified");
    assert_eq!(read(d, "f"), "2");
    let v = json(d, &["restore", "#1", "--dry-run"]);
    assert_eq!(v["changes"][0]["path"], "f");
    assert_eq!(read(d, "f"), "2");
    assert_eq!(json(d, &["log"])["snapshots"].as_array().unwrap().len(), 2);
}

#[test]
fn restore_is_a_new_snapshot_that_undo_reverts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/a", b"1");
    write(d, "b", b"1");
    let first = json(d, &["save"]);
    write(d, "src/a", b"2");
    write(d, "b", b"2");
    ok(d, &["save"]);
    let v = json(d, &["restore", &first["id"].as_str().unwrap()[..8]]);
    assert_eq!(v["created"]["kind"], "restore");
    assert_eq!(v["created"]["seq"], 3);
    assert_eq!((read(d, "src/a"), read(d, "b")), ("1".into(), "1".into()));
    ok(d, &["undo"]);
    assert_eq!((read(d, "src/a"), read(d, "b")), ("2".into(), "2".into()));
    // Only some paths, given relative to -C.
    ok(&d.join("src"), &["restore", "#1", "--", "a"]);
    assert_eq!((read(d, "src/a"), read(d, "b")), ("1".into(), "2".into()));
    let out = snap(d, &["restore", "#1", "--", "../outside"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("outside the workspace"));
}

#[test]
fn references_resolve_and_bad_ones_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (i, step) in ["1", "2", "2"].iter().enumerate() {
        write(d, "f", i.to_string().as_bytes());
        ok(d, &["save", "--step", step]);
    }
    assert_eq!(json(d, &["show", "@"])["seq"], 3);
    assert_eq!(json(d, &["show", "@~2"])["seq"], 1);
    assert_eq!(json(d, &["show", "last"])["seq"], 3);
    assert_eq!(json(d, &["show", "#2"])["seq"], 2);
    assert_eq!(json(d, &["show", "step:2"])["seq"], 3);
    assert_eq!(json(d, &["show", "step:1"])["seq"], 1);
    for bad in ["nope", "#99", "@~9", "step:x", "abc"] {
        let out = snap(d, &["show", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{bad}: {err}"
        );
    }
}

#[test]
fn log_filters_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 1..=3 {
        write(d, "f", i.to_string().as_bytes());
        ok(
            d,
            &[
                "save",
                "--step",
                &i.to_string(),
                "--session",
                if i == 2 { "b" } else { "a" },
            ],
        );
    }
    ok(d, &["undo"]);
    write(d, "g", b"branch");
    ok(d, &["save"]);
    let rows = |v: Value| {
        v["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["seq"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows(json(d, &["log"])),
        vec![4, 2, 1],
        "the abandoned #3 is hidden"
    );
    assert_eq!(rows(json(d, &["log", "--all"])), vec![4, 3, 2, 1]);
    assert_eq!(rows(json(d, &["list", "-n", "1"])), vec![4]);
    assert_eq!(rows(json(d, &["log", "--step", "2"])), vec![2]);
    assert_eq!(
        rows(json(d, &["log", "--all", "--session", "a"])),
        vec![3, 1]
    );
    assert!(ok(d, &["log"]).starts_with("HEAD #4"));
}

#[test]
fn ls_cat_show_status_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    write(d, "bin/data", &binary);
    write(d, "text", b"hello\n");
    std::os::unix::fs::symlink("text", d.join("link")).unwrap();
    std::fs::create_dir(d.join("empty")).unwrap();
    ok(d, &["save"]);
    let out = snap(d, &["cat", "@", "bin/data"]);
    assert_eq!(out.stdout, binary);
    assert_eq!(ok(d, &["cat", "@", "link"]), "text");
    let ls = json(d, &["ls"]);
    let kinds: BTreeMap<String, String> = ls["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(kinds["empty"], "dir");
    assert_eq!(kinds["link"], "symlink");
    assert_eq!(
        json(d, &["ls", "@", "--", "bin"])["entries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(snap(d, &["cat", "@", "missing"]).status.code(), Some(1));
    assert_eq!(json(d, &["status"])["clean"], true);
    write(d, "text", b"changed\n");
    write(d, "added", b"x");
    let st = json(d, &["status"]);
    assert_eq!(st["clean"], false);
    assert_eq!(st["changes"].as_array().unwrap().len(), 2);
    assert_eq!(
        json(d, &["status", "--category", "added"])["changes"][0]["path"],
        "added"
    );
    assert!(ok(d, &["status"]).contains("M text"));
    let show = json(d, &["show", "@"]);
    assert_eq!(show["stats"]["files"], 3);
    assert!(ok(d, &["recover"]).contains("nothing to recover"));
    assert_eq!(
        json(d, &["recover"])["recovered"].as_array().unwrap().len(),
        0
    );
}

#[test]
fn commands_outside_a_workspace_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [&["log"][..], &["undo"], &["status"], &["show", "@"]] {
        let out = snap(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).starts_with("error: no snap store"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(snap(d, &["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        snap(d, &["save", "--meta", "novalue"]).status.code(),
        Some(2)
    );
    assert!(ok(d, &["--help"]).contains("undo"));
}

#[test]
fn store_elsewhere_and_w_alias() {
    let ws = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let d = ws.path();
    write(d, "f", b"1");
    let s = store.path().join("st");
    let out = Command::new(env!("CARGO_BIN_EXE_snap"))
        .arg("-w")
        .arg(d)
        .arg("save")
        .env("SNAP_STORE", &s)
        .env("HOME", "/nonexistent-home")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!d.join(".snap").exists());
    assert!(s.join("catalog.redb").exists());
    write(d, "f", b"2");
    ok(d, &["--store", s.to_str().unwrap(), "undo"]);
    assert_eq!(read(d, "f"), "1");
}

#[test]
fn ignored_files_are_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, ".gitignore", b"*.log\n");
    write(d, "f", b"1");
    write(d, "debug.log", b"log 1");
    write(d, "node_modules/m.js", b"m");
    ok(d, &["save"]);
    write(d, "f", b"2");
    write(d, "debug.log", b"log 2");
    ok(d, &["save"]);
    ok(d, &["undo"]);
    assert_eq!(read(d, "f"), "1");
    assert_eq!(read(d, "debug.log"), "log 2");
    assert_eq!(read(d, "node_modules/m.js"), "m");
    ok(d, &["restore", "#1"]);
    assert_eq!(read(d, "debug.log"), "log 2");
}

#[test]
fn the_workspace_git_directory_is_never_read_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, ".git/HEAD", b"ref: refs/heads/main\n");
    write(d, ".git/index", b"index bytes");
    write(d, "f", b"1");
    ok(d, &["save"]);
    write(d, "f", b"2");
    ok(d, &["save"]);
    ok(d, &["undo"]);
    ok(d, &["restore", "#2"]);
    assert_eq!(read(d, ".git/index"), "index bytes");
    assert!(
        json(d, &["ls"])["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["path"].as_str().unwrap().starts_with(".git/"))
    );
}

/// A digest of every tracked path in the tree: path, kind and content.
fn tree_digest(root: &Path) -> BTreeMap<String, Vec<u8>> {
    on_disk(root, true)
}

/// Every entry under `root` but the store: files with their bytes, symlinks with their
/// targets, and directories as `<dir>` when `dirs`.
fn on_disk(root: &Path, dirs: bool) -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let t = e.file_type().unwrap();
            if rel == ".snap" {
                continue;
            } else if t.is_dir() {
                stack.push(e.path());
                if dirs {
                    out.insert(rel, b"<dir>".to_vec());
                }
            } else if t.is_symlink() {
                let target = std::fs::read_link(e.path()).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

#[test]
fn kill_9_during_undo_and_redo_ends_in_old_or_target_state() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..3000 {
        write(
            d,
            &format!("dir{}/file{i}.txt", i % 40),
            format!("version A of {i}\n").repeat(20).as_bytes(),
        );
    }
    ok(d, &["save"]);
    let a = tree_digest(d);
    for i in 0..3000 {
        let path = format!("dir{}/file{i}.txt", i % 40);
        if i % 3 == 0 {
            std::fs::remove_file(d.join(&path)).unwrap();
        } else {
            write(
                d,
                &path,
                format!("version B of {i}\n").repeat(25).as_bytes(),
            );
        }
    }
    write(d, "newdir/added.txt", b"B only");
    ok(d, &["save"]);
    let b = tree_digest(d);
    let started = Instant::now();
    ok(d, &["undo"]);
    let full = started.elapsed();
    ok(d, &["redo"]);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let rounds = std::env::var("SNAP_KILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let (mut interrupted, mut recovered) = (0, 0);
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((seed >> 33) % (full.as_micros() as u64).max(1));
        let op = if tree_digest(d) == b { "undo" } else { "redo" };
        let mut child = snap_cmd(d, &[op])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        // Read-only commands leave an interrupted move alone; `recover` finishes it.
        recovered += json(d, &["recover"])["recovered"]
            .as_array()
            .map_or(0, Vec::len);
        let st = json(d, &["status"]);
        let now = tree_digest(d);
        assert!(
            now == a || now == b,
            "round {round}: after kill -9 of {op} at {delay:?} the tree is a mix"
        );
        assert_eq!(
            st["clean"], true,
            "round {round}: the tree must match HEAD after recovery"
        );
    }
    eprintln!(
        "kill -9: {rounds} rounds, {interrupted} interrupted, {recovered} rolled forward from a marker"
    );
    assert!(interrupted > 0, "no round interrupted a running command");
}

#[test]
fn lifecycle_commands_and_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..6 {
        write(d, "f", i.to_string().as_bytes());
        ok(d, &["save"]);
    }
    let v = json(d, &["prune", "--keep-last", "2", "--dry-run"]);
    assert_eq!(v["removed_count"], 4);
    assert_eq!(
        json(d, &["log"])["snapshots"].as_array().unwrap().len(),
        6,
        "a dry run drops nothing"
    );
    assert_eq!(json(d, &["prune", "--keep-last", "2"])["kept"], 2);
    let gc = json(d, &["gc"]);
    assert!(gc["reclaimed_bytes"].as_u64().unwrap() > 0);
    let stats = json(d, &["log", "--stats"]);
    assert_eq!(stats["stats"]["snapshots"], 2);
    assert_eq!(stats["stats"]["reclaimable_bytes"], 0);
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    // Damage: a missing pack makes verify fail with exit 1 and name it.
    let packs: Vec<_> = std::fs::read_dir(d.join(".snap/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let saved = std::fs::read(&packs[0]).unwrap();
    std::fs::remove_file(&packs[0]).unwrap();
    let out = snap(d, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("damaged"));
    assert!(stderr(&out).starts_with("error: the store is damaged"));
    std::fs::write(&packs[0], saved).unwrap();
    // A lost catalog: every command points at repair, and repair brings the snapshots back.
    std::fs::remove_file(d.join(".snap/catalog.redb")).unwrap();
    let out = snap(d, &["log"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("snap repair"));
    assert_eq!(json(d, &["repair"])["snapshots"], 2);
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    assert_eq!(
        snap(d, &["delete", "--all"]).status.code(),
        Some(1),
        "needs --yes"
    );
    assert_eq!(json(d, &["delete", "--all", "--yes"])["removed_count"], 2);
    assert_eq!(read(d, "f"), "5");
    assert_eq!(json(d, &["save"])["seq"], 1);
}

#[test]
fn gc_running_beside_saves_loses_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    write(&d, "base", b"base");
    ok(&d, &["save"]);
    let savers: Vec<_> = (0..2)
        .map(|w| {
            let d = d.clone();
            std::thread::spawn(move || {
                for i in 0..12 {
                    write(
                        &d,
                        &format!("w{w}/f{i}"),
                        format!("writer {w} step {i}").as_bytes(),
                    );
                    ok(&d, &["save", "--session", &format!("w{w}")]);
                }
            })
        })
        .collect();
    let gcs = {
        let d = d.clone();
        std::thread::spawn(move || {
            for _ in 0..8 {
                ok(&d, &["gc"]);
                ok(&d, &["prune", "--keep-last", "1000"]);
            }
        })
    };
    for t in savers {
        t.join().unwrap();
    }
    gcs.join().unwrap();
    assert_eq!(json(&d, &["verify", "--read-data"])["ok"], true);
    let log = json(&d, &["log", "--all"]);
    let seqs: Vec<u64> = log["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].as_u64().unwrap())
        .collect();
    for seq in &seqs {
        ok(&d, &["ls", &format!("#{seq}")]);
    }
    // Every snapshot's files read back: restore the newest, then check a file from each writer.
    ok(&d, &["restore", &format!("#{}", seqs[0])]);
    assert_eq!(read(&d, "w0/f11"), "writer 0 step 11");
    assert_eq!(read(&d, "w1/f11"), "writer 1 step 11");
}

/// Every key path of a JSON value (`a.b`, `list[].c`), arrays judged by their first element.
fn shape(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                shape(x, &p, out);
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                shape(first, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The `## \`snap ...\`` sections of docs/JSON.md with their example documents, in order.
fn documented_examples() -> Vec<(String, Value)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/JSON.md"))
            .unwrap();
    let mut out = Vec::new();
    let mut title = None;
    let mut block: Option<String> = None;
    for line in doc.lines() {
        if let Some(t) = line
            .strip_prefix("## `snap ")
            .and_then(|t| t.strip_suffix('`'))
        {
            title = Some(t.to_string());
        } else if line == "```json" {
            block = Some(String::new());
        } else if line == "```" {
            if let (Some(t), Some(b)) = (title.take(), block.take()) {
                out.push((t, serde_json::from_str(&b).unwrap()));
            }
        } else if let Some(b) = block.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}

#[test]
fn docs_json_md_matches_what_the_binary_prints() {
    let dir = tempfile::tempdir().unwrap();
    // In a subdirectory, so that `export` writes `../exported` inside this test's own dir.
    let d = &dir.path().join("w");
    std::fs::create_dir(d).unwrap();
    write(d, "a.txt", b"one\n");
    write(d, "src/main.rs", b"fn main() {}\n");
    let examples = documented_examples();
    assert!(
        examples.len() >= 18,
        "docs/JSON.md documents {} commands",
        examples.len()
    );
    for (title, documented) in examples {
        if title == "status" {
            write(d, "a.txt", b"one\ntwo\n");
            ok(
                d,
                &["save", "-m", "second", "--step", "2", "--meta", "turn=2"],
            );
            write(d, "a.txt", b"one\ntwo\nthree\n");
        }
        let mut args = vec!["--json".to_string()];
        args.extend(
            title
                .split_whitespace()
                .map(|a| a.trim_matches('\'').to_string()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = snap(d, &args);
        let actual: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("snap {title}: {e}"));
        let (mut want, mut got) = (Default::default(), Default::default());
        shape(&documented, "", &mut want);
        shape(&actual, "", &mut got);
        assert_eq!(
            want, got,
            "docs/JSON.md's example for `snap {title}` differs from the output"
        );
    }
}

#[test]
fn diff_pages_cuts_and_summarizes_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "t.txt", b"a\nb\nc\n");
    write(d, "bin", &[0u8, 1, 2, 3]);
    write(d, "long.txt", b"");
    ok(d, &["save"]);
    write(d, "t.txt", b"a\nB\nc\nd\n");
    write(d, "bin", &[0u8, 9]);
    let body: String = (0..50).map(|i| format!("line {i}\n")).collect();
    write(d, "long.txt", body.as_bytes());
    write(d, "new.txt", b"new\n");
    let human = ok(d, &["diff"]);
    assert!(
        human.contains("--- a/t.txt\n+++ b/t.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"),
        "{human}"
    );
    assert!(human.contains("Binary file bin differs (4 bytes -> 2 bytes)"));
    assert!(human.contains("--- /dev/null\n+++ b/new.txt"));
    assert!(
        !human.contains("\x1b["),
        "no colour when stdout is not a terminal"
    );
    let v = json(d, &["diff", "--max-lines", "5"]);
    assert_eq!(v["total_files"], 4);
    assert_eq!(v["to"], "working tree");
    let long = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "long.txt")
        .unwrap()
        .clone();
    assert_eq!(long["added"], 50);
    assert_eq!(long["lines"].as_array().unwrap().len(), 5);
    assert_eq!(long["lines_cut"], 46);
    assert!(ok(d, &["diff", "--max-lines", "5"]).contains("46 more diff lines cut"));
    let page2 = json(d, &["diff", "--files-per-page", "3", "--page", "2"]);
    assert_eq!(
        (
            page2["pages"].as_u64(),
            page2["files"].as_array().unwrap().len()
        ),
        (Some(2), 1)
    );
    assert!(ok(d, &["diff", "--files-per-page", "3"]).contains("page 1 of 2"));
    assert_eq!(
        ok(d, &["diff", "--name-status", "--", "t.txt", "new.txt"]),
        "A\tnew.txt\nM\tt.txt\n"
    );
    assert!(ok(d, &["diff", "--stat"]).contains("t.txt | +2 -1"));
    ok(d, &["save"]);
    assert_eq!(json(d, &["diff", "#1", "#2"])["total_files"], 4);
    assert!(ok(d, &["diff"]).contains("no differences"));
    let log = json(d, &["log", "-n", "1"]);
    assert_eq!(log["snapshots"][0]["stats"]["lines_added"], 53);
}

#[test]
fn completions_since_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(ok(d, &["completions", "bash"]).contains("_snap()"));
    assert!(ok(d, &["completions", "zsh"]).contains("#compdef snap"));
    assert!(ok(d, &["completions", "fish"]).contains("complete -c snap"));
    write(d, "f", b"1");
    ok(d, &["save"]);
    assert_eq!(
        json(d, &["log", "--since", "1h"])["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let out = snap(d, &["log", "--since", "soon"]);
    assert_eq!(out.status.code(), Some(2), "a bad value is a usage error");
    let help = ok(d, &["--help"]);
    for cmd in [
        "init",
        "save",
        "undo",
        "rewind",
        "redo",
        "restore",
        "log",
        "show",
        "ls",
        "cat",
        "diff",
        "status",
        "recover",
        "prune",
        "gc",
        "verify",
        "repair",
        "delete",
        "completions",
    ] {
        assert!(
            help.contains(&format!("\n  {cmd} ")),
            "`snap --help` does not list {cmd}"
        );
    }
}

#[test]
fn previews_of_redo_and_rewind_and_the_quiet_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    ok(d, &["save", "--step", "1"]);
    write(d, "f", b"2");
    ok(d, &["save", "--step", "2"]);
    let rewind = json(d, &["rewind", "--dry-run"]);
    assert_eq!(
        (rewind["op"].as_str(), rewind["target"]["step"].as_u64()),
        (Some("undo"), Some(1))
    );
    ok(d, &["undo", "-q", "--no-progress"]);
    let redo = json(d, &["redo", "--dry-run"]);
    assert_eq!(
        (
            redo["dry_run"].as_bool(),
            redo["target"]["step"].as_u64(),
            redo["passed_count"].as_u64()
        ),
        (Some(true), Some(2), Some(1))
    );
    assert_eq!(read(d, "f"), "1", "a preview changes nothing");
    let human = ok(d, &["redo", "--dry-run"]);
    assert!(human.starts_with("redo would move to #2"), "{human}");
    assert!(
        !ok(d, &["redo", "-q"]).contains("M f"),
        "-q leaves out the file list"
    );
    assert_eq!(read(d, "f"), "2");
}

/// Two states of a small tree: A is saved as #1, B as #2 (B's save is left to the caller).
fn two_states(d: &Path) -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>) {
    for i in 0..40 {
        write(
            d,
            &format!("dir{}/f{i}", i % 4),
            format!("A {i}\n").repeat(50).as_bytes(),
        );
    }
    ok(d, &["save"]);
    let a = tree_digest(d);
    for i in 0..40 {
        if i % 5 == 0 {
            std::fs::remove_file(d.join(format!("dir{}/f{i}", i % 4))).unwrap();
        } else {
            write(
                d,
                &format!("dir{}/f{i}", i % 4),
                format!("B {i}\n").repeat(60).as_bytes(),
            );
        }
    }
    write(d, "newdir/added", b"B only");
    (a, tree_digest(d))
}

/// Sets up `op` on a fresh workspace: returns the state before it, the state it moves to and
/// its arguments. `two_states` leaves A saved as #1 and B in the tree.
fn crash_setup(d: &Path, op: &str) -> (Tree, Tree, Vec<&'static str>) {
    let (a, b) = two_states(d);
    let args = match op {
        "save" => return (b.clone(), b, vec!["save"]),
        "undo" => vec!["undo"],
        "redo" => {
            ok(d, &["save"]);
            ok(d, &["undo"]);
            return (a, b, vec!["redo"]);
        }
        "restore" => vec!["restore", "#1"],
        "prune" => vec!["prune", "--keep-last", "1"],
        "gc" => {
            // More than 16 small packs, so that gc also writes a merged pack.
            for i in 0..18 {
                write(d, "newdir/added", format!("B only, take {i}").as_bytes());
                ok(d, &["save"]);
            }
            write(d, "newdir/added", b"B only");
            ok(d, &["save"]);
            ok(d, &["prune", "--keep-last", "18"]);
            return (b.clone(), b, vec!["gc"]);
        }
        other => panic!("no such op {other}"),
    };
    ok(d, &["save"]);
    match op {
        "undo" | "restore" => (b, a, args),
        _ => (b.clone(), b, args),
    }
}

type Tree = BTreeMap<String, Vec<u8>>;

fn seqs(d: &Path) -> Vec<Value> {
    json(d, &["log", "--all"])["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].clone())
        .collect()
}

/// Runs `op`, dying at `failpoint` (or running to the end with `None`), optionally followed by
/// a power cut that drops whatever was not fsynced. Then: the next command recovers, the tree
/// is exactly the old or the target state and matches HEAD, no snapshot listed before is lost
/// (prune aside), the store verifies, and every listed snapshot still reads back.
fn crash_and_check(op: &str, failpoint: Option<&str>, power_cut: Option<powerloss::Cut>) {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().canonicalize().unwrap();
    let (old, target, args) = crash_setup(d, op);
    let listed = seqs(d);
    let all_before = everything(d);
    let journal = tempfile::tempdir().unwrap();
    let before = power_cut.map(|_| powerloss::Durable::take(d));
    let mut cmd = snap_cmd(d, &args);
    if let Some(f) = failpoint {
        cmd.env("SNAP_FAILPOINT", f);
    }
    let out = cmd
        .env("SNAP_DURABLE_LOG", journal.path())
        .output()
        .unwrap();
    let at = format!("{op} at {failpoint:?}, power cut {power_cut:?}");
    let expected = if failpoint.is_some() { None } else { Some(0) };
    assert_eq!(out.status.code(), expected, "{at}: {}", stderr(&out));
    if let (Some(before), Some(cut)) = (&before, power_cut) {
        let changed = powerloss::power_cut(d, before, journal.path(), cut);
        // Mid-restore, files written but not yet synced must be lost, or the cut proves nothing.
        if failpoint.is_some_and(|f| f.starts_with("restore-file")) {
            assert!(changed > 0, "{at}: the power cut changed nothing");
        }
    }
    ok(d, &["recover"]);
    assert_conserved(d, &all_before, &at);
    let st = json(d, &["status"]);
    let now = tree_digest(d);
    assert!(now == old || now == target, "{at}: the tree is a mix");
    if failpoint.is_none() {
        assert!(now == target, "{at}: a finished {op} did not survive");
    }
    if failpoint.is_none() || matches!(op, "undo" | "redo" | "restore") {
        assert_eq!(st["clean"], true, "{at}: the tree must match HEAD");
    }
    let after = seqs(d);
    if op != "prune" {
        let lost: Vec<_> = listed.iter().filter(|s| !after.contains(s)).collect();
        assert!(lost.is_empty(), "{at}: snapshots {lost:?} were lost");
    }
    if failpoint.is_none() && matches!(op, "save" | "restore") {
        assert_eq!(
            after.len(),
            listed.len() + 1,
            "{at}: the new snapshot was lost"
        );
    }
    check_store(d, &at);
}

/// The store verifies, every snapshot the log lists reads back, and so after a gc.
fn check_store(d: &Path, at: &str) {
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true, "{at}");
    for s in json(d, &["log", "--all"])["snapshots"].as_array().unwrap() {
        let seq = format!("#{}", s["seq"]);
        for e in json(d, &["ls", &seq])["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "file")
        {
            ok(d, &["cat", &seq, e["path"].as_str().unwrap()]);
        }
    }
    ok(d, &["gc"]);
    assert_eq!(
        json(d, &["verify", "--read-data"])["ok"],
        true,
        "{at}, after gc"
    );
}

/// Each command, and the failpoints it passes.
const CRASH_CASES: &[(&str, &[&str])] = &[
    (
        "save",
        &[
            "pack-written",
            "pack-synced",
            "pack-renamed",
            "before-commit",
            "after-commit",
        ],
    ),
    (
        "undo",
        &[
            "marker-written",
            "restore-file",
            "restore-file@20",
            "before-head-commit",
            "after-head-commit",
        ],
    ),
    (
        "redo",
        &[
            "marker-written",
            "restore-file@7",
            "before-head-commit",
            "after-head-commit",
        ],
    ),
    (
        "restore",
        &[
            "marker-written",
            "restore-file@3",
            "before-head-commit",
            "after-head-commit",
        ],
    ),
    ("prune", &["before-commit", "after-commit"]),
    ("gc", &["pack-renamed", "before-commit", "gc-after-commit"]),
];

fn crash_cases(ops: &[&str], power_cut: Option<powerloss::Cut>) {
    for (op, failpoints) in CRASH_CASES.iter().filter(|(op, _)| ops.contains(op)) {
        for f in failpoints.iter().map(|f| Some(*f)).chain([None]) {
            crash_and_check(op, f, power_cut);
        }
    }
}

#[test]
fn every_failpoint_is_driven() {
    let covered: std::collections::BTreeSet<&str> = CRASH_CASES
        .iter()
        .flat_map(|(_, fs)| fs.iter().map(|f| f.split('@').next().unwrap()))
        .collect();
    for name in snap_tree::snap_store::testing::FAILPOINTS {
        assert!(covered.contains(name), "failpoint {name} is not driven");
    }
}

#[test]
fn a_crash_in_save_prune_or_gc_loses_nothing() {
    crash_cases(&["save", "prune", "gc"], None);
}

#[test]
fn a_crash_in_undo_redo_or_restore_loses_nothing() {
    crash_cases(&["undo", "redo", "restore"], None);
}

/// The same crashes followed by a power cut that drops every write no fsync covered: proves
/// the order of fsyncs and renames, directory fsyncs included (DESIGN §4, §7).
#[test]
fn a_power_cut_in_save_prune_or_gc_loses_nothing() {
    crash_cases(&["save", "prune", "gc"], Some(powerloss::Cut::DropUnsynced));
}

#[test]
fn a_power_cut_in_undo_redo_or_restore_loses_nothing() {
    crash_cases(
        &["undo", "redo", "restore"],
        Some(powerloss::Cut::DropUnsynced),
    );
}

/// A power cut that keeps every rename but no unsynced file bytes: the files a restore had
/// renamed into place before its sync come back empty, and the roll-forward rewrites them.
#[test]
fn a_power_cut_keeping_renames_but_not_their_data_loses_nothing() {
    let cut = Some(powerloss::Cut::KeepNames);
    crash_cases(&["save", "undo", "redo", "restore", "gc"], cut);
}

/// Each command, and the I/O faults injected into it (`SNAP_FAULT`, see snap_store::testing::fault).
const FAULT_CASES: &[(&str, &[&str])] = &[
    (
        "save",
        &[
            "scan-read@7",
            "pack-write@3:ENOSPC",
            "catalog-write",
            "catalog-write@5",
            "dir-sync",
        ],
    ),
    (
        "undo",
        &[
            "pack-read@4",
            "pack-read@4+",
            "restore-write@9:ENOSPC",
            "restore-write@2+:EROFS",
            "catalog-write@5",
            "dir-sync",
        ],
    ),
    ("redo", &["pack-read@6", "restore-write@3"]),
    ("restore", &["pack-read@2+", "restore-write@5:ENOSPC"]),
    ("prune", &["catalog-write@5"]),
    (
        "gc",
        &["pack-read@3", "pack-write@2:ENOSPC", "catalog-write@5"],
    ),
];

/// Runs `op` with `fault` injected: it fails with one `error:` line naming the OS error, and
/// the next command (with the disk healthy again) finds the tree exactly old or target and
/// matching HEAD, every snapshot listed before, and a store that verifies.
fn fault_and_check(op: &str, fault: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (old, target, args) = crash_setup(d, op);
    let listed = seqs(d);
    let all_before = everything(d);
    let out = snap_cmd(d, &args)
        .env("SNAP_FAULT", fault)
        .output()
        .unwrap();
    let at = format!("{op} with {fault}");
    assert_eq!(out.status.code(), Some(1), "{at}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "{at}: {err}"
    );
    let named = [
        "Input/output error",
        "No space left",
        "Read-only file system",
    ];
    assert!(named.iter().any(|n| err.contains(n)), "{at}: {err}");
    ok(d, &["recover"]);
    assert_conserved(d, &all_before, &at);
    let st = json(d, &["status"]);
    let now = tree_digest(d);
    assert!(now == old || now == target, "{at}: the tree is a mix");
    if matches!(op, "undo" | "redo" | "restore") {
        assert_eq!(st["clean"], true, "{at}: the tree must match HEAD");
    }
    let after = seqs(d);
    let lost: Vec<_> = listed.iter().filter(|s| !after.contains(s)).collect();
    assert!(lost.is_empty(), "{at}: snapshots {lost:?} were lost");
    check_store(d, &at);
}

#[test]
fn an_io_error_at_every_fault_point_fails_cleanly_and_loses_nothing() {
    let covered: std::collections::BTreeSet<&str> = FAULT_CASES
        .iter()
        .flat_map(|(_, fs)| fs.iter().map(|f| f.split(['@', ':']).next().unwrap()))
        .collect();
    for name in snap_tree::snap_store::testing::fault::FAULT_POINTS {
        assert!(covered.contains(name), "fault point {name} is not driven");
    }
    for (op, faults) in FAULT_CASES {
        for fault in *faults {
            fault_and_check(op, fault);
        }
    }
}

/// Bytes that zstd cannot shrink, so they fill a small filesystem as they are.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A small tmpfs, unmounted on drop. `None` where mounting is not allowed (not root).
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    fn mount(size: &str) -> Option<SmallFs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?;
        ok.status.success().then_some(SmallFs(dir))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).output();
    }
}

#[test]
fn a_full_disk_gives_one_error_line_and_loses_nothing() {
    let Some(fs) = SmallFs::mount("3m") else {
        eprintln!("cannot mount a tmpfs here (needs root); skipping the disk-full test");
        return;
    };
    let d = &fs.0.path().join("ws");
    std::fs::create_dir(d).unwrap();
    for i in 0..8 {
        write(d, &format!("f{i}"), &noise(100_000, i));
    }
    ok(d, &["save"]);
    let first = tree_digest(d);
    // A save that cannot fit: one error line, nothing committed, the store still valid.
    write(d, "big", &noise(1_500_000, 99));
    let out = snap(d, &["save"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "{err}"
    );
    assert!(err.contains("No space left"), "{err}");
    assert_eq!(
        json(d, &["log", "--all"])["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    assert_eq!(
        std::fs::read_dir(d.join(".snap/tmp")).unwrap().count(),
        0,
        "no half-written pack is left in tmp/"
    );
    // A smaller change fits.
    std::fs::remove_file(d.join("big")).unwrap();
    for i in 0..4 {
        write(d, &format!("f{i}"), &noise(100_000, 50 + i));
    }
    ok(d, &["save"]);
    let second = tree_digest(d);
    // An undo that runs out of space while writing files: it fails or rolls forward, and once
    // space is back the tree is exactly one state or the other, and nothing is lost.
    let filler = fs.0.path().join("filler");
    let free = rustix::fs::statvfs(fs.0.path())
        .map(|s| s.f_bavail * s.f_frsize)
        .unwrap_or(0);
    std::fs::write(&filler, noise(free.saturating_sub(40_000) as usize, 7)).ok();
    let out = snap(d, &["undo"]);
    if !out.status.success() {
        assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    }
    std::fs::remove_file(&filler).unwrap();
    let st = json(d, &["status"]);
    let now = tree_digest(d);
    let which = if now == first {
        "the target"
    } else {
        "the old state"
    };
    eprintln!(
        "undo on a full disk: exit {:?} ({}); the tree is {which}",
        out.status.code(),
        stderr(&out).trim()
    );
    assert!(
        now == first || now == second,
        "after a full disk the tree is a mix"
    );
    assert_eq!(st["clean"], true);
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    ok(d, &["restore", "#1"]);
    assert_eq!(tree_digest(d), first);
    ok(d, &["restore", "#2"]);
    assert_eq!(tree_digest(d), second);
}

/// Harnesses saving in one workspace at once each get their snapshot; a command that finds
/// the lock held says so while it waits, and names the holder when it gives up.
#[test]
fn concurrent_saves_all_land_and_lock_waits_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"start");
    ok(d, &["save"]);
    let children: Vec<_> = (0..8)
        .map(|i| {
            write(d, &format!("h{i}"), format!("harness {i}").as_bytes());
            snap_cmd(d, &["save", "--allow-empty", "-m", &format!("harness {i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let log = json(d, &["log", "--all"]);
    let messages: Vec<&str> = log["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["message"].as_str())
        .collect();
    for i in 0..8 {
        assert!(
            messages.contains(&format!("harness {i}").as_str()),
            "{messages:?}"
        );
    }
    // Hold the lock as another process would, with its pid in the file.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(d.join(".snap/lock"))
        .unwrap();
    std::fs::write(d.join(".snap/lock"), "pid 4242\n").unwrap();
    use rustix::fs::{FlockOperation, flock};
    flock(&lock, FlockOperation::NonBlockingLockExclusive).unwrap();
    let out = snap_cmd(d, &["log"])
        .env("SNAP_LOCK_TIMEOUT", "0.6")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("waiting for the store lock, held by pid 4242"),
        "{err}"
    );
    assert!(
        err.contains("error: the store is locked by pid 4242"),
        "{err}"
    );
    // A reader that finds the lock held waits, then reads once it is free.
    let waiter = snap_cmd(d, &["--json", "log"])
        .env("SNAP_LOCK_TIMEOUT", "20")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    flock(&lock, FlockOperation::Unlock).unwrap();
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("waiting for the store lock"));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listed["snapshots"].as_array().unwrap().len(),
        messages.len()
    );
}

/// A read-only bind mount of `src` at a new temp dir, unmounted on drop. `None` where
/// mounting is not allowed (not root).
struct ReadOnlyMount(tempfile::TempDir);

impl ReadOnlyMount {
    fn of(src: &Path) -> Option<ReadOnlyMount> {
        let dir = tempfile::tempdir().ok()?;
        let at = dir.path().to_path_buf();
        let run = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .arg(&at)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let src = src.to_str()?;
        if !run(&["--bind", src]) {
            return None;
        }
        let mount = ReadOnlyMount(dir);
        run(&["-o", "remount,ro,bind"]).then_some(mount)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).output();
    }
}

/// A store on a read-only mount: reading commands work; writing ones fail with one error line
/// and leave the tree and the store as they were.
#[test]
fn a_read_only_store_reads_and_refuses_writes_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, _) = two_states(d);
    ok(d, &["save"]);
    write(d, "dir1/f1", b"unsaved edit");
    let Some(ro) = ReadOnlyMount::of(&d.join(".snap")) else {
        eprintln!("cannot bind-mount read-only here (needs root); skipping");
        return;
    };
    let store = ro.0.path().to_str().unwrap().to_string();
    let before = tree_digest(d);
    let with_store = |args: &[&str]| {
        let mut all = vec!["--store", store.as_str()];
        all.extend_from_slice(args);
        snap(d, &all)
    };
    for args in [
        &["log"][..],
        &["status"],
        &["diff"],
        &["show", "#1"],
        &["cat", "#1", "dir1/f1"],
    ] {
        let out = with_store(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(
        json(d, &["--store", &store, "verify", "--read-data"])["ok"],
        true
    );
    for args in [
        &["save"][..],
        &["undo"],
        &["restore", "#1"],
        &["prune", "--keep-last", "1"],
        &["gc"],
    ] {
        let out = with_store(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(
            err.contains("read-only") || err.contains("Read-only"),
            "{args:?}: {err}"
        );
        assert_eq!(tree_digest(d), before, "{args:?} touched the tree");
    }
    drop(ro);
    assert_eq!(seqs(d).len(), 2);
    check_store(d, "after the read-only mount");
}

/// Several processes saving, undoing, redoing and collecting garbage at once in one workspace,
/// killed at random instants. Afterwards the store verifies and every snapshot restores.
#[test]
fn kill_9_thrash_of_concurrent_commands_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..200 {
        write(
            d,
            &format!("d{}/f{i}", i % 10),
            format!("start {i}\n").repeat(30).as_bytes(),
        );
    }
    ok(d, &["save"]);
    let rounds: u64 = std::env::var("SNAP_THRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut killed = 0;
    for round in 0..rounds {
        for i in 0..20 {
            let n = next() % 200;
            write(
                d,
                &format!("d{}/f{n}", n % 10),
                format!("round {round} edit {i}\n").repeat(40).as_bytes(),
            );
        }
        let ops: [&[&str]; 5] = [&["save"], &["save"], &["undo"], &["redo"], &["gc"]];
        let mut children: Vec<_> = ops
            .iter()
            .map(|args| {
                snap_cmd(d, args)
                    .env("SNAP_LOCK_TIMEOUT", "30")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(next() % 120));
        for child in children.iter_mut().filter(|_| next() % 2 == 0) {
            if child.try_wait().unwrap().is_none() {
                killed += 1;
            }
            let _ = child.kill();
        }
        for mut child in children {
            child.wait().unwrap();
        }
    }
    eprintln!("thrash: {rounds} rounds of 5 concurrent commands, {killed} killed mid-run");
    let st = json(d, &["status"]);
    assert!(st["head"].is_string());
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    let snapshots = json(d, &["log", "--all"])["snapshots"]
        .as_array()
        .unwrap()
        .clone();
    for s in &snapshots {
        let seq = format!("#{}", s["seq"]);
        ok(d, &["restore", &seq]);
        // status hashes every file against HEAD's tree: clean means byte for byte.
        let st = json(d, &["status"]);
        assert_eq!(st["clean"], true, "{seq} did not restore exactly");
        assert_eq!(
            json(d, &["show", "@"])["tree"],
            s["tree"],
            "{seq}: HEAD's tree is not the snapshot's"
        );
    }
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
}

// ---- The safety invariant (DESIGN §14, docs/SAFETY.md) ----

/// Every file and symlink under `root` (the store aside), ignored ones included, with its
/// bytes (a symlink's target for a link).
fn everything(root: &Path) -> Tree {
    on_disk(root, false)
}

/// The conservation oracle: every file that was in `before` is still at its path with its
/// bytes, or some snapshot that `log --all` lists holds those bytes at that path.
fn assert_conserved(d: &Path, before: &Tree, what: &str) {
    let now = everything(d);
    let seqs = seqs(d);
    for (path, bytes) in before {
        if now.get(path) == Some(bytes) {
            continue;
        }
        let saved = seqs.iter().any(|seq| {
            let out = snap(d, &["cat", &format!("#{seq}"), path]);
            out.status.success() && &out.stdout == bytes
        });
        assert!(saved, "{what}: {path} ({} bytes) was lost", bytes.len());
    }
}

/// Runs snap with `args`, checks the oracle around it, and returns the output.
fn conserving(d: &Path, args: &[&str]) -> Output {
    let before = everything(d);
    let out = snap(d, args);
    assert_ne!(
        out.status.code(),
        Some(101),
        "{args:?} panicked: {}",
        stderr(&out)
    );
    assert_conserved(d, &before, &format!("snap {args:?}"));
    out
}

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
    // The unsaved state (data.bin gone from the tracked tree) is saved first and is one step.
    let out = conserving(d, &["--json", "undo", "2"]);
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
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_states(d);
    ok(d, &["save"]);
    let out = snap_cmd(d, &["undo"])
        .env("SNAP_FAILPOINT", "restore-file@5")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "{}", stderr(&out));
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
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"one\n");
    write(d, "b", b"one\n");
    ok(d, &["save"]);
    write(d, "a", b"two\n");
    write(d, "b", b"two\n");
    ok(d, &["save"]);
    let out = snap_cmd(d, &["undo"])
        .env("SNAP_FAILPOINT", "marker-written")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "{}", stderr(&out));
    write(d, "b", b"edited after the kill\n");
    let out = conserving(d, &["recover"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        (read(d, "a"), read(d, "b")),
        ("one\n".into(), "one\n".into())
    );
}

#[test]
fn bad_lock_timeouts_are_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"a");
    ok(d, &["save"]);
    for value in ["-1", "inf", "NaN", "1e400", "soon"] {
        let out = snap_cmd(d, &["status"])
            .env("SNAP_LOCK_TIMEOUT", value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{value}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: SNAP_LOCK_TIMEOUT"),
            "{value}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{value}: {err}");
    }
}

#[test]
fn usage_errors_under_json_print_an_error_document() {
    let dir = tempfile::tempdir().unwrap();
    let out = snap(dir.path(), &["--json", "undo", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("--no-such-flag"),
        "{v}"
    );
}

#[test]
fn store_files_that_are_symlinks_are_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"a");
    ok(d, &["save"]);
    let victim = outside.path().join("victim");
    for name in ["clock", "lock"] {
        std::fs::write(&victim, b"keep me").unwrap();
        let _ = std::fs::remove_file(d.join(".snap").join(name));
        std::os::unix::fs::symlink(&victim, d.join(".snap").join(name)).unwrap();
        let out = snap(d, &["status"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(
            stderr(&out).contains("is a symlink"),
            "{name}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"keep me",
            "{name} followed"
        );
        std::fs::remove_file(d.join(".snap").join(name)).unwrap();
    }
    ok(d, &["status"]);
}

#[test]
fn a_damaged_catalog_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..30 {
        write(d, &format!("d{}/f{i}", i % 3), format!("{i}").as_bytes());
    }
    ok(d, &["save"]);
    write(d, "d0/f0", b"changed");
    ok(d, &["save"]);
    let catalog = d.join(".snap/catalog.redb");
    let pristine = std::fs::read(&catalog).unwrap();
    // SNAP_CATALOG_ROUNDS and SNAP_CATALOG_SEED run it longer or elsewhere (see the README).
    let rounds = std::env::var("SNAP_CATALOG_ROUNDS").map_or(24, |r| r.parse().unwrap());
    let mut seed = std::env::var("SNAP_CATALOG_SEED")
        .map_or(0x9e37_79b9_7f4a_7c15_u64, |s| s.parse().unwrap());
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..rounds {
        let mut bytes = pristine.clone();
        for _ in 0..20 {
            let at = (next() as usize) % bytes.len().saturating_sub(4).max(1);
            bytes[at..at + 4].copy_from_slice(&(next() as u32).to_le_bytes());
        }
        let commands = [
            &["log"][..],
            &["status"],
            &["verify"],
            &["diff"],
            &["save"],
            &["undo"],
            &["restore", "#1"],
        ];
        for args in commands {
            std::fs::write(&catalog, &bytes).unwrap();
            let out = snap(d, args);
            let err = stderr(&out);
            assert_ne!(
                out.status.code(),
                Some(101),
                "round {round} {args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "round {round} {args:?}: {err}");
            if !out.status.success() {
                // Notices may come first (`snap: an interrupted undo is pending`: an undo on
                // the damaged catalog moved the tree, then could not commit HEAD, so its
                // marker waits for a roll-forward); the failure itself is one error line.
                let last = err.lines().last().unwrap_or("");
                assert!(last.starts_with("error: "), "round {round} {args:?}: {err}");
                let errors = err.lines().filter(|l| l.starts_with("error: ")).count();
                assert_eq!(errors, 1, "round {round} {args:?}: {err}");
            }
        }
    }
    std::fs::write(&catalog, &pristine).unwrap();
}

/// `snap --store STORE ARGS` run in `dir` (which need not be a workspace root).
fn with_store(dir: &Path, store: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    snap(dir, &all)
}

#[test]
fn an_external_store_from_a_subdirectory_acts_on_its_recorded_root() {
    let (ws, st) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (d, s) = (ws.path(), st.path().join("store"));
    write(d, "a", b"a1");
    write(d, "sub/b", b"b1");
    assert!(with_store(d, &s, &["save"]).status.success());
    write(d, "a", b"a2");
    assert!(with_store(d, &s, &["save"]).status.success());
    let before = everything(d);
    let out = with_store(&d.join("sub"), &s, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "a"), "a1", "the undo acted on the recorded root");
    assert_eq!(read(d, "sub/b"), "b1");
    assert!(!d.join("sub/a").exists() && !d.join("sub/sub").exists());
    assert_conserved_with(d, &s, &before);
    let status = with_store(&d.join("sub"), &s, &["--json", "status"]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["root"], d.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(v["workspace_id"].as_str().map(str::len), Some(32));
}

/// [`assert_conserved`] for a workspace whose store is `store`: every file of `before` is on
/// disk or in one of its snapshots.
fn assert_conserved_with(d: &Path, store: &Path, before: &Tree) {
    let now = everything(d);
    let log = with_store(d, store, &["--json", "log", "--all"]);
    let log: Value = serde_json::from_slice(&log.stdout).unwrap();
    let seqs = log["snapshots"].as_array().unwrap();
    for (path, bytes) in before.iter().filter(|(p, b)| now.get(*p) != Some(*b)) {
        let saved = seqs.iter().any(|row| {
            let out = with_store(d, store, &["cat", &format!("#{}", row["seq"]), path]);
            out.status.success() && &out.stdout == bytes
        });
        assert!(saved, "{path} was lost");
    }
}

#[test]
fn a_store_recorded_for_another_workspace_is_refused() {
    let (a, b, st) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let s = st.path().join("store");
    write(a.path(), "x", b"from a");
    assert!(with_store(a.path(), &s, &["save"]).status.success());
    write(b.path(), "y", b"from b");
    let before = everything(b.path());
    for args in [
        &["save"][..],
        &["undo"],
        &["status"],
        &["restore", "#1"],
        &["log"],
    ] {
        let out = with_store(b.path(), &s, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(err.contains("belongs to the workspace at"), "{err}");
        assert_eq!(everything(b.path()), before, "{args:?} touched b");
    }
    assert!(!b.path().join(".snap").exists());
    assert!(
        !a.path().join(".snap").exists(),
        "a has no store of its own"
    );
    let log = with_store(a.path(), &s, &["--json", "log"]);
    let log: Value = serde_json::from_slice(&log.stdout).unwrap();
    assert_eq!(log["snapshots"].as_array().unwrap().len(), 1);
    // A workspace that moved claims its store again with `init --force`.
    let out = with_store(b.path(), &s, &["init", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(with_store(b.path(), &s, &["status"]).status.success());
    assert!(!with_store(a.path(), &s, &["status"]).status.success());
}

#[test]
fn a_workspace_with_its_own_store_can_be_moved() {
    let top = tempfile::tempdir().unwrap();
    let (old, new) = (top.path().join("old"), top.path().join("new"));
    write(&old, "f", b"1");
    ok(&old, &["save"]);
    let id = json(&old, &["status"])["workspace_id"].clone();
    write(&old, "f", b"2");
    ok(&old, &["save"]);
    std::fs::rename(&old, &new).unwrap();
    ok(&new.join("."), &["undo"]);
    assert_eq!(read(&new, "f"), "1");
    let v = json(&new, &["status"]);
    assert_eq!(v["root"], new.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(v["workspace_id"], id, "the id is kept when the root moves");
    // Named explicitly, the moved store is still its directory's own.
    let out = with_store(&new, &new.join(".snap"), &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Flips one bit of `id` wherever the catalog file holds it as a stat cache row's id (after
/// the row's mode `0o100644` and kind 0). Returns how many copies it found.
fn flip_stat_row_id(d: &Path, id: &[u8]) -> usize {
    let path = d.join(".snap/catalog.redb");
    let mut bytes = std::fs::read(&path).unwrap();
    let mut pattern = vec![0xa4, 0x81, 0x00, 0x00, 0x00];
    pattern.extend_from_slice(id);
    let at: Vec<usize> = bytes
        .windows(pattern.len())
        .enumerate()
        .filter(|(_, w)| *w == pattern.as_slice())
        .map(|(i, _)| i + 5)
        .collect();
    for &i in &at {
        bytes[i] ^= 0x01;
    }
    std::fs::write(&path, bytes).unwrap();
    at.len()
}

#[test]
fn a_flipped_bit_in_the_stat_cache_is_caught_and_never_recorded() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"hello");
    write(d, "g", b"one");
    std::fs::set_permissions(d.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    ok(d, &["save"]);
    let ls = json(d, &["ls", "@"]);
    let hex = ls["entries"][0]["id"].as_str().unwrap();
    let id: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert!(flip_stat_row_id(d, &id) > 0, "no stat cache row found");
    let out = snap(d, &["verify", "--read-data"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "verify passed a damaged cache row"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("stat_cache"),
        "{out:?}"
    );
    // A save that looks f up in the stat cache reads f again instead of trusting the row.
    write(d, "g", b"two");
    ok(d, &["save"]);
    assert_eq!(ok(d, &["cat", "@", "f"]), "hello");
    ok(d, &["verify", "--read-data"]);
}

#[test]
fn sigterm_during_undo_stops_between_files_and_recover_finishes() {
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

fn mode_of(d: &Path, path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(d.join(path))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn chmod(d: &Path, path: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
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

#[test]
fn snap_undo_is_the_same_program_under_a_second_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    ok(d, &["save"]);
    write(d, "f", b"2");
    let out = Command::new(env!("CARGO_BIN_EXE_snap-undo"))
        .arg("-C")
        .arg(d)
        .args(["--json", "undo"])
        .env_remove("SNAP_STORE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "f"), "1");
    let version = Command::new(env!("CARGO_BIN_EXE_snap-undo"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("snap "));
}

#[test]
fn polish_from_a_new_user_trial() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/a", b"1");
    write(d, "weird\nname\x1b[31m", b"x");
    assert!(ok(d, &["init"]).contains("initialized"));
    assert!(ok(d, &["init"]).contains("already exists"));
    assert_eq!(json(d, &["init"])["created"], false);
    ok(d, &["save"]);
    // A bad value is a usage error, as a bad number is.
    assert_eq!(
        snap(d, &["log", "--since", "yesterday"]).status.code(),
        Some(2)
    );
    assert_eq!(snap(d, &["log", "-n", "x"]).status.code(), Some(2));
    assert!(ok(d, &["log", "--since", "2h"]).contains("changed"));
    // A directory is named as one.
    let out = snap(d, &["cat", "@", "src"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));
    // Control characters in names never reach the terminal raw.
    write(d, "weird\nname\x1b[31m", b"y");
    let shown = ok(d, &["status"]);
    assert!(shown.contains("M weird\\nname\\x1b[31m"), "{shown}");
    assert!(!shown.contains('\x1b'));
    assert_eq!(
        json(d, &["status"])["changes"][0]["path"],
        "weird\nname\x1b[31m"
    );
}

#[test]
fn quiet_commands_print_nothing_on_success_but_kept_paths() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    for args in [&["-q", "init"][..], &["-q", "save"]] {
        assert_eq!(ok(d, args), "", "{args:?}");
    }
    write(d, "f", b"2");
    assert_eq!(ok(d, &["-q", "save"]), "");
    for args in [
        &["-q", "undo"][..],
        &["-q", "redo"],
        &["-q", "gc"],
        &["-q", "recover"],
    ] {
        let out = snap(d, args);
        assert!(out.status.success(), "{args:?}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{args:?}: {out:?}"
        );
    }
    // A path the move keeps is still named.
    std::fs::write(d.join(".snap/config.toml"), "max_file_size = 10\n").unwrap();
    write(d, "f", b"far more than ten bytes");
    let out = snap(d, &["-q", "undo"]);
    assert!(stderr(&out).contains("kept f as it is"), "{out:?}");
}

#[test]
fn diff_shows_modes_and_links_and_pages_keep_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "run.sh", b"echo\n");
    chmod(d, "run.sh", 0o644);
    std::os::unix::fs::symlink("run.sh", d.join("link")).unwrap();
    for i in 0..30 {
        write(d, &format!("many/f{i:02}"), b"1\n");
    }
    ok(d, &["save"]);
    chmod(d, "run.sh", 0o755);
    std::fs::remove_file(d.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", d.join("link")).unwrap();
    for i in 0..30 {
        write(d, &format!("many/f{i:02}"), b"2\n");
    }
    let full = ok(d, &["diff", "--", "run.sh", "link"]);
    assert!(full.contains("run.sh mode 644 -> 755"), "{full}");
    assert!(
        full.contains("link: symlink to run.sh -> symlink to elsewhere"),
        "{full}"
    );
    let v = json(d, &["diff", "--", "run.sh"]);
    assert_eq!(v["files"][0]["old_mode"], "644");
    assert_eq!(v["files"][0]["new_mode"], "755");
    // --stat shows every file; a full diff pages at 25, and the hint keeps the flags.
    let stat = ok(d, &["diff", "--stat"]);
    assert_eq!(
        stat.lines().filter(|l| l.contains(" | ")).count(),
        32,
        "{stat}"
    );
    assert!(stat.contains("run.sh | +0 -0 (mode 644 -> 755)"), "{stat}");
    let paged = ok(d, &["diff", "--max-lines", "3"]);
    assert!(
        paged.contains("next: snap diff --max-lines 3 --page 2"),
        "{paged}"
    );
}

#[test]
fn export_writes_a_snapshot_elsewhere_and_touches_nothing() {
    let top = tempfile::tempdir().unwrap();
    let d = &top.path().join("w");
    write(d, "src/a", b"one");
    write(d, "src/b", b"two");
    write(d, "doc/c", b"three");
    chmod(d, "src/a", 0o600);
    std::os::unix::fs::symlink("src/a", d.join("link")).unwrap();
    ok(d, &["save"]);
    write(d, "src/a", b"changed");
    let before = everything(d);
    let out = top.path().join("out");
    let v = json(d, &["export", "#1", out.to_str().unwrap()]);
    assert_eq!(v["files"], 4);
    assert_eq!(read(&out, "src/a"), "one");
    assert_eq!(mode_of(&out, "src/a"), 0o600);
    assert_eq!(
        std::fs::read_link(out.join("link")).unwrap(),
        Path::new("src/a")
    );
    assert_eq!(everything(d), before, "the workspace is untouched");
    assert_eq!(json(d, &["log"])["snapshots"].as_array().unwrap().len(), 1);
    // Only some paths; a non-empty or in-workspace target is refused, changing nothing.
    let part = top.path().join("part");
    ok(d, &["export", "@", part.to_str().unwrap(), "--", "src"]);
    assert!(part.join("src/b").exists() && !part.join("doc").exists());
    for target in [out.to_str().unwrap(), "inside"] {
        let res = snap(d, &["export", "@", target]);
        assert_eq!(res.status.code(), Some(1), "{target}");
        assert!(stderr(&res).starts_with("error: "), "{}", stderr(&res));
    }
    assert!(
        !d.join("inside").exists(),
        "nothing created inside the workspace"
    );
    assert_eq!(everything(d), before);
}
