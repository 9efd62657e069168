//! Many processes at once, killed at random; a store on a read-only mount.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use snap_e2e::*;

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

/// A writing command waiting for the lock honours SIGTERM at once (exit 143, one `error:`
/// line, nothing changed) instead of waiting out the lock timeout.
#[test]
fn sigterm_ends_a_wait_for_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a", b"one\n");
    ok(d, &["save"]);
    write(d, "a", b"two\n");
    let lock = std::fs::File::open(d.join(".snap/lock")).unwrap();
    use rustix::fs::{FlockOperation, flock};
    flock(&lock, FlockOperation::NonBlockingLockExclusive).unwrap();
    let waiter = snap_cmd(d, &["save"])
        .env("SNAP_LOCK_TIMEOUT", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let pid = rustix::process::Pid::from_raw(waiter.id() as i32).unwrap();
    let asked = std::time::Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = waiter.wait_with_output().unwrap();
    let waited = asked.elapsed();
    flock(&lock, FlockOperation::Unlock).unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: stopped while waiting for the store lock"),
        "{err}"
    );
    // Well inside the 60 s timeout (a generous bound: not a speed claim).
    assert!(waited < Duration::from_secs(20), "waited {waited:?}");
    assert_eq!(json(d, &["log"])["snapshots"].as_array().unwrap().len(), 1);
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
    assert!(st["head"]["id"].is_string());
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
