//! Every command as a user runs it: output, JSON, exit codes and usage errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use snap_e2e::*;

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
    // `head` is the same snapshot document wherever it appears.
    assert_eq!(v["head"], v["snapshot"]);
    assert_eq!(v["head"]["id"], v["id"]);
    assert_eq!(json(d, &["status"])["head"], v["snapshot"]);
    assert_eq!(json(d, &["log"])["head"], v["snapshot"]);
    assert_eq!(json(d, &["show", "@"])["id"], v["id"]);
    assert_eq!(v["snapshot"]["meta"]["turn"], "12");
    assert_eq!(v["changes"][0]["path"], "a.txt");
    assert_eq!(v["changes"][0]["status"], "added");
    let again = json(d, &["save"]);
    assert_eq!(again["created"], false);
    assert_eq!(again["head"]["id"], v["id"]);
    assert!(ok(d, &["save"]).contains("nothing changed"));
    let empty = json(d, &["save", "--allow-empty"]);
    assert_eq!(empty["created"], true);
    assert_eq!(empty["seq"], 2);
}

/// `save --empty-tree`: a new store's first snapshot holds nothing and touches no file (the
/// empty "Initial checkpoint" PraisonAI's checkpoint service starts from); the files are then
/// unsaved, and going back to it is an undo that redo takes back.
#[test]
fn save_empty_tree_starts_a_new_history_from_nothing_touching_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one");
    let v = json(d, &["save", "--empty-tree", "-m", "Initial checkpoint"]);
    assert_eq!(v["created"], true);
    assert_eq!(v["seq"], 1);
    assert_eq!(v["snapshot"]["stats"]["files"], 0);
    assert_eq!(read(d, "a.txt"), "one");
    let first = json(d, &["save", "-m", "first"]);
    assert_eq!(first["changes"][0]["path"], "a.txt");
    assert_eq!(first["changes"][0]["status"], "added");
    ok(d, &["undo"]);
    assert!(!d.join("a.txt").exists());
    ok(d, &["redo"]);
    assert_eq!(read(d, "a.txt"), "one");
    let out = snap(d, &["save", "--empty-tree"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--empty-tree starts a new store's history"),
        "{}",
        stderr(&out)
    );
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
    assert_eq!(v["head"], v["target"]);
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
    let out = Command::new(bin("snap"))
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

/// `--store` naming a directory that holds a person's files, or one that would hold the
/// workspace, is refused with one line, and the directory is left exactly as it was (a store
/// made there once overwrote its `lock` and gc swept its `tmp/`).
#[test]
fn a_store_is_never_made_over_other_files_or_around_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let d = &ws.path().join("w");
    write(d, "f", b"work");
    let docs = ws.path().join("docs");
    write(&docs, "thesis.txt", b"three years");
    write(&docs, "lock", b"my notes");
    write(&docs, "tmp/scratch.txt", b"scratch");
    let before = everything(&docs);
    let (docs_up, d_up) = (docs.join("new/.."), d.join("new/.."));
    let stores = [
        (&docs, "thesis.txt, which is not snap's"),
        (d, "would hold the workspace"),
        (&docs_up, "thesis.txt, which is not snap's"),
        (&d_up, "would hold the workspace"),
    ];
    for (store, why) in stores {
        for args in [&["save"][..], &["init"], &["status"], &["gc"]] {
            let out = with_store(d, store, args);
            assert_eq!(out.status.code(), Some(1), "{args:?} with {store:?}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with("error: "), "{err}");
            if args == ["save"] {
                assert!(err.contains(why), "{err}");
            }
        }
    }
    assert_eq!(everything(&docs), before);
    assert!(!d.join(".snap").exists() && !d.join("packs").exists());
    assert!(!d.join("new").exists() && !docs.join("new").exists());
    let parent = with_store(d, ws.path(), &["save"]);
    assert!(
        stderr(&parent).contains("would hold the workspace"),
        "{}",
        stderr(&parent)
    );
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

/// A catalog put back from an older copy (a backup, a synced folder) does not name the
/// packs of the history saved after it. gc once deleted them as a crashed save's leftovers;
/// it keeps them, and repair brings that history back beside what was saved on from the
/// older copy, though both lines numbered a snapshot #2.
#[test]
fn gc_after_a_rolled_back_catalog_keeps_the_newer_history() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"one");
    ok(d, &["save"]);
    let catalog = d.join(".snap/catalog.redb");
    let older = std::fs::read(&catalog).unwrap();
    write(d, "f", b"two");
    write(d, "g", b"only in the newer snapshot");
    ok(d, &["save"]);
    write(d, "h", b"three");
    ok(d, &["save"]);
    std::fs::write(&catalog, older).unwrap();
    write(d, "f", b"three");
    ok(d, &["save"]);
    let head = json(d, &["log"])["head"].clone();
    let gc = json(d, &["gc"]);
    assert_eq!(gc["orphan_packs_kept"].as_array().unwrap().len(), 2, "{gc}");
    let doctor = json(d, &["doctor"]);
    assert_eq!(
        doctor["history_outside_catalog"].as_array().unwrap().len(),
        2
    );
    let verify = json(d, &["verify"]);
    assert_eq!(verify["ok"], true, "not damage: {verify}");
    assert_eq!(
        verify["history_outside_catalog"],
        doctor["history_outside_catalog"]
    );
    let out = snap(d, &["verify"]);
    assert!(
        stderr(&out).contains("snap repair` takes them back"),
        "{}",
        stderr(&out)
    );
    assert_eq!(json(d, &["repair"])["snapshots"], 4);
    let doctor = json(d, &["doctor"]);
    assert_eq!(doctor["history_outside_catalog"], Value::Array(Vec::new()));
    assert_eq!(doctor["set_aside_catalogs"].as_array().unwrap().len(), 1);
    let all = json(d, &["log", "--all"]);
    assert_eq!(all["head"], head, "repair keeps the catalog's HEAD");
    let numbers: Vec<u64> = (all["snapshots"].as_array().unwrap().iter())
        .map(|s| s["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [3, 2, 2, 1], "newest first, by number");
    let twos: Vec<&str> = (all["snapshots"].as_array().unwrap().iter())
        .filter(|s| s["seq"] == 2)
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(twos.len(), 2, "{all}");
    let newer = twos.iter().find(|id| head != **id).unwrap();
    assert_eq!(ok(d, &["cat", newer, "g"]), "only in the newer snapshot");
    let out = snap(d, &["cat", "#2", "g"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("ambiguous"), "{}", stderr(&out));
    let verify = json(d, &["verify", "--read-data"]);
    assert_eq!(verify["ok"], true);
    assert_eq!(verify["history_outside_catalog"], Value::Array(Vec::new()));
    let gc = json(d, &["gc"]);
    assert_eq!(gc["orphan_packs_kept"].as_array().unwrap().len(), 0, "{gc}");
    // One past the largest key: the second #2 is keyed 4.
    write(d, "f", b"four");
    assert_eq!(json(d, &["save"])["seq"], 5);
}

/// A catalog put back from an older copy calls dead what the newer history still needs: the
/// files the older snapshots share with it. A prune then a gc must not delete those (gc
/// once kept the newer packs and deleted the shared objects), and the repair that takes the
/// newer history back leaves out the snapshots that prune dropped.
#[test]
fn gc_drops_nothing_while_history_is_outside_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"alpha");
    ok(d, &["save"]);
    write(d, "b", b"beta");
    ok(d, &["save"]);
    let catalog = d.join(".snap/catalog.redb");
    let older = std::fs::read(&catalog).unwrap();
    write(d, "c", b"gamma");
    let newer = json(d, &["save"])["id"].as_str().unwrap().to_string();
    std::fs::write(&catalog, older).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::remove_file(d.join(name)).unwrap();
    }
    ok(d, &["save"]);
    let pruned = json(d, &["prune", "--keep-last", "1", "--keep-within", "0s"]);
    assert_eq!(pruned["removed"].as_array().unwrap().len(), 2, "{pruned}");
    let gc = json(d, &["gc"]);
    assert_eq!(gc["held_back"], true, "{gc}");
    assert_eq!(gc["reclaimed_bytes"], 0, "{gc}");
    let out = snap(d, &["gc"]);
    assert!(
        stderr(&out).contains("gc dropped nothing"),
        "{}",
        stderr(&out)
    );
    let repair = json(d, &["repair"]);
    assert_eq!(repair["snapshots_left_dropped"], 2, "{repair}");
    assert_eq!(repair["snapshots"], 2, "{repair}");
    for (name, content) in [("a", "alpha"), ("b", "beta"), ("c", "gamma")] {
        assert_eq!(ok(d, &["cat", &newer, name]), content);
    }
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    assert_eq!(json(d, &["gc"])["held_back"], false);
    assert_eq!(ok(d, &["cat", &newer, "a"]), "alpha");
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
    for command in ["log", "init", "save", "gc"] {
        let out = snap(d, &[command]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        assert!(stderr(&out).contains("snap repair"), "{command}");
    }
    // `init` once made an empty catalog there, which said there was no history and let gc
    // delete every pack.
    assert!(!d.join(".snap/catalog.redb").exists());
    assert_eq!(json(d, &["repair"])["snapshots"], 2);
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true);
    // A catalog that is a directory is moved aside whole, and the repair goes on.
    let catalog = d.join(".snap/catalog.redb");
    std::fs::remove_file(&catalog).unwrap();
    write(&catalog, "inside", b"not a catalog");
    let repaired = json(d, &["repair"]);
    assert_eq!(repaired["snapshots"], 2);
    let aside = Path::new(repaired["old_catalog"].as_str().unwrap());
    assert_eq!(
        std::fs::read(aside.join("inside")).unwrap(),
        b"not a catalog"
    );
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
fn snap_undo_is_the_same_program_under_a_second_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    ok(d, &["save"]);
    write(d, "f", b"2");
    let out = Command::new(bin("snap-undo"))
        .arg("-C")
        .arg(d)
        .args(["--json", "undo"])
        .env_remove("SNAP_STORE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "f"), "1");
    let version = Command::new(bin("snap-undo"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("snap-undo "));
}

/// An export that fails part way (here a damaged pack holds half the snapshot's files)
/// takes back what it wrote: a new directory is gone again and an empty one stays empty, so
/// the same export can run again once the store is repaired.
/// An export killed before it finished leaves its staging directory in the destination; a
/// retry removes it (its owner file names a process that is gone) instead of refusing the
/// directory as not empty. A directory of the staging name that no export made (no owner
/// file), even one named for a dead process, is the user's: export refuses, and keeps it.
#[test]
fn an_export_after_a_killed_one_removes_only_its_staging_directory() {
    if !test_hooks() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("w");
    write(&d, "f", b"content");
    write(&d, "g", b"more");
    ok(&d, &["save"]);
    let dest = dir.path().join("out");
    killed_at(&d, &["export", "@", dest.to_str().unwrap()], "restore-file");
    let left = std::fs::read_dir(&dest).unwrap().count();
    assert_eq!(left, 1, "the killed export's staging directory");
    ok(&d, &["export", "@", dest.to_str().unwrap()]);
    assert_eq!(std::fs::read(dest.join("f")).unwrap(), b"content");
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 2);
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let users = dir.path().join("users");
    let theirs = format!(".snap-export-{gone_pid}/f");
    write(&users, &theirs, b"the user's own");
    let out = snap(&d, &["export", "@", users.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(read(&users, &theirs), "the user's own");
}

#[test]
fn a_failed_export_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ws");
    let save_files = |dir: &str, word: &str| {
        for i in 0..40 {
            let content = format!("{word} {i}\n").repeat(50);
            write(&d, &format!("{dir}/f{i:02}"), content.as_bytes());
        }
        ok(&d, &["save"]);
    };
    save_files("a", "first");
    let packs = |d: &Path| -> Vec<std::path::PathBuf> {
        let mut all: Vec<_> = std::fs::read_dir(d.join(".snap/packs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        all.sort();
        all
    };
    let first = packs(&d);
    save_files("b", "second");
    let second = packs(&d).into_iter().find(|p| !first.contains(p)).unwrap();
    let mut bytes = std::fs::read(&second).unwrap();
    let half = bytes.len() / 2;
    for b in &mut bytes[100..half] {
        *b ^= 0x55;
    }
    std::fs::write(&second, bytes).unwrap();
    let new = dir.path().join("new");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for dest in [&new, &empty] {
        let out = snap(&d, &["export", "@", dest.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).starts_with("error:"), "{}", stderr(&out));
    }
    assert!(!new.exists(), "the export made it, and took it back");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
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

/// `snap log -- PATHS` lists only the snapshots that changed them (a path given from a
/// subdirectory is taken from there); `--oneline` is one short line each, with the `tool`
/// meta; a path outside the workspace is one `error:` line.
#[test]
fn log_of_paths_and_oneline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/a.rs", b"1\n");
    write(d, "README.md", b"1\n");
    ok(d, &["save", "-m", "first"]);
    write(d, "src/a.rs", b"2\n");
    ok(
        d,
        &[
            "save",
            "-m",
            "edit a",
            "--meta",
            "tool=Edit",
            "--session",
            "sess-0123456789",
        ],
    );
    write(d, "README.md", b"2\n");
    ok(d, &["save", "-m", "readme"]);
    let listed = |args: &[&str]| -> Vec<u64> {
        let v = json(d, args);
        (v["snapshots"].as_array().unwrap().iter())
            .map(|s| s["seq"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(listed(&["log", "--", "src/a.rs"]), [2, 1]);
    assert_eq!(listed(&["log", "--", "src"]), [2, 1]);
    assert_eq!(listed(&["log", "--", "README.md"]), [3, 1]);
    assert_eq!(listed(&["log", "-n", "1", "--", "src", "README.md"]), [3]);
    let from_src = snap_cmd(&d.join("src"), &["--json", "log", "--", "a.rs"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&from_src.stdout).unwrap();
    assert_eq!(v["snapshots"].as_array().unwrap().len(), 2, "{v}");
    let oneline = ok(d, &["log", "--oneline"]);
    let lines: Vec<&str> = oneline.lines().collect();
    assert_eq!(lines.len(), 3, "{oneline}");
    assert!(
        lines[0].starts_with("HEAD ") && lines[0].contains("#3") && lines[0].contains("readme")
    );
    assert!(
        lines[1].contains("sess-012 ") && lines[1].ends_with("edit a [Edit]"),
        "{}",
        lines[1]
    );
    assert!(!lines[1].contains("sess-0123456789"));
    let outside = snap(d, &["log", "--", "/etc/passwd"]);
    assert_eq!(outside.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&outside.stderr).starts_with("error: "));
    assert_eq!(
        ok(d, &["log", "--", "nowhere"]).trim(),
        "no snapshot matches"
    );
}

/// `snap blame` names, for each line, the snapshot that brought it and its tool meta; an older
/// version is blamed with a reference; a binary file or a path the snapshot lacks is one
/// `error:` line.
#[test]
fn blame_names_the_snapshot_of_each_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f.txt", b"one\ntwo\n");
    ok(d, &["save", "-m", "first"]);
    write(d, "f.txt", b"one\nTWO\nthree\n");
    ok(
        d,
        &[
            "save",
            "-m",
            "edit",
            "--meta",
            "tool=Edit",
            "--meta",
            "agent=claude",
        ],
    );
    let v = json(d, &["blame", "f.txt"]);
    let lines = v["lines"].as_array().unwrap();
    let got: Vec<(&str, u64)> = lines
        .iter()
        .map(|l| (l["text"].as_str().unwrap(), l["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, [("one", 1), ("TWO", 2), ("three", 2)]);
    assert_eq!(lines[1]["tool"], "Edit");
    assert_eq!(lines[1]["agent"], "claude");
    let human = ok(d, &["blame", "f.txt"]);
    assert!(
        human.lines().nth(1).unwrap().contains("Edit") && human.contains("| TWO"),
        "{human}"
    );
    let old = json(d, &["blame", "f.txt", "#1"]);
    assert_eq!(old["lines"].as_array().unwrap().len(), 2);
    write(d, "bin", &[0, 1, 2]);
    ok(d, &["save"]);
    for args in [&["blame", "bin"][..], &["blame", "nowhere"]] {
        let out = snap(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    }
}
