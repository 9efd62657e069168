//! Crashes, power cuts, I/O faults and a full disk at every failpoint: nothing is lost.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use snap_e2e::powerloss;
use snap_e2e::*;
use snap_store::testing::noise;

#[test]
fn kill_9_during_undo_and_redo_ends_in_old_or_target_state() {
    if !test_hooks() {
        return;
    }
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

/// Sets up `op` on a fresh workspace: returns the state before it, the state it moves to and
/// its arguments. `two_states` leaves A saved as #1 and B in the tree.
fn crash_setup(d: &Path, op: &str) -> (Tree, Tree, Vec<&'static str>) {
    if op == "undo-large" {
        // Over the streaming threshold, several chunks each.
        write(d, "data/weights.bin", &noise(24 << 20, 3));
        write(d, "data/train.log", &noise(20 << 20, 4));
    }
    let (a, b) = two_states(d);
    if op == "undo-large" {
        std::fs::remove_file(d.join("data/weights.bin")).unwrap();
        std::fs::File::create(d.join("data/train.log")).unwrap();
    }
    let args = match op {
        "save" => return (b.clone(), b, vec!["save"]),
        "undo" | "undo-large" => vec!["undo"],
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
        // A repair of a sound store, killed anywhere, must leave a catalog that lists every
        // snapshot (a killed repair once left an empty one, and gc then deleted every pack).
        "repair" => {
            ok(d, &["save"]);
            return (b.clone(), b, vec!["repair"]);
        }
        "merge" => {
            // 32 packs: the next save seals the 33rd and merges the small ones.
            let saves = snap_store::AUTO_MERGE_PACKS - 1;
            for i in 0..saves {
                write(d, "newdir/added", format!("B only, take {i}").as_bytes());
                ok(d, &["save"]);
            }
            write(d, "newdir/added", b"B only");
            return (b.clone(), b, vec!["save"]);
        }
        // A token saved in #3, taken out of history: killed anywhere, the store is before
        // (the token still in #3) or after (gone from every file of the store).
        "expunge" => {
            ok(d, &["save"]);
            write(d, "secret.env", EXPUNGED_TOKEN);
            ok(d, &["save"]);
            let now = tree_digest(d);
            return (now.clone(), now, vec!["expunge", "secret.env", "--yes"]);
        }
        other => panic!("no such op {other}"),
    };
    ok(d, &["save"]);
    match op {
        "undo" | "undo-large" | "restore" => (b, a, args),
        _ => (b.clone(), b, args),
    }
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
    if WHOLE_FS_SYNC.with(|w| w.get()) {
        cmd.env("SNAP_TEST_EACH_PATH_MAX", "0");
    }
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
    if failpoint.is_none() || matches!(op, "undo" | "undo-large" | "redo" | "restore") {
        assert_eq!(st["clean"], true, "{at}: the tree must match HEAD");
    }
    let after = seqs(d);
    if op == "undo-large" {
        // A file killed half-written is the move's own, removed: never stored as found.
        assert_eq!(after.len(), listed.len(), "{at}: a snapshot was added");
    }
    if op != "prune" {
        let lost: Vec<_> = listed.iter().filter(|s| !after.contains(s)).collect();
        assert!(lost.is_empty(), "{at}: snapshots {lost:?} were lost");
    }
    // A merge runs after its save's commit: the snapshot is there whatever the merge did.
    if (failpoint.is_none() && matches!(op, "save" | "restore")) || op == "merge" {
        assert_eq!(
            after.len(),
            listed.len() + 1,
            "{at}: the new snapshot was lost"
        );
    }
    if op == "merge" && failpoint.is_none() {
        let packs = std::fs::read_dir(d.join(".snap/packs")).unwrap().count() as u64;
        assert!(packs < snap_store::AUTO_MERGE_PACKS, "{at}: {packs} packs");
    }
    if op == "expunge" {
        let still = snap(d, &["cat", "#3", "secret.env"]).status.success();
        let holds = snap_store::testing::store_holds(&d.join(".snap"), EXPUNGED_TOKEN);
        assert!(
            still || holds.is_empty(),
            "{at}: expunged, yet the store holds it: {holds:?}"
        );
        if failpoint.is_none() {
            assert!(!still, "{at}: a finished expunge left the path in history");
        }
    }
    check_store(d, &at);
}

/// What the expunge crash case takes out of history.
const EXPUNGED_TOKEN: &[u8] = b"AWS_SECRET=AKIAIOSFODNN7EXAMPLE-crash-case\n";

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
    // Large files deleted and truncated, brought back: killed between the chunks of one.
    (
        "undo-large",
        &[
            "marker-written",
            "restore-chunk",
            "restore-chunk@9",
            "restore-file",
            "before-head-commit",
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
    (
        "repair",
        &["before-commit", "repair-built", "repair-linked"],
    ),
    // A save whose commit makes the 33rd pack, then merges: the second pack and commit are
    // the merge's.
    (
        "merge",
        &["pack-renamed@2", "before-commit@2", "merge-after-commit"],
    ),
    // The rewrite's pack and commit, then the purge's pack, commit and unlinking, then the
    // commit that clears the purge row.
    (
        "expunge",
        &[
            "pack-renamed",
            "before-commit",
            "after-commit",
            "expunge-after-rewrite",
            "pack-renamed@2",
            "before-commit@2",
            "purge-after-commit",
            "before-commit@3",
        ],
    ),
];

thread_local! {
    /// Set by a test to make every restore durable by one `syncfs`, as a large one is: the
    /// crash suites' trees are small, so restores are otherwise made durable path by path.
    static WHOLE_FS_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn crash_cases(ops: &[&str], power_cut: Option<powerloss::Cut>) {
    for (op, failpoints) in CRASH_CASES.iter().filter(|(op, _)| ops.contains(op)) {
        for f in failpoints.iter().map(|f| Some(*f)).chain([None]) {
            crash_and_check(op, f, power_cut);
        }
    }
}

#[test]
fn every_failpoint_is_driven() {
    if !test_hooks() {
        return;
    }
    let covered: std::collections::BTreeSet<&str> = CRASH_CASES
        .iter()
        .flat_map(|(_, fs)| fs.iter().map(|f| f.split('@').next().unwrap()))
        .collect();
    for name in snap_store::testing::FAILPOINTS {
        assert!(covered.contains(name), "failpoint {name} is not driven");
    }
}

/// An expunge killed anywhere leaves the store before or after it; the next writing command
/// finishes a purge the kill interrupted, and then the bytes are gone.
#[test]
fn a_crash_in_expunge_leaves_it_before_or_after() {
    if !test_hooks() {
        return;
    }
    crash_cases(&["expunge"], None);
    crash_cases(&["expunge"], Some(powerloss::Cut::DropUnsynced));
}

#[test]
fn a_crash_in_save_prune_or_gc_loses_nothing() {
    if !test_hooks() {
        return;
    }
    crash_cases(&["save", "prune", "gc", "merge"], None);
}

/// A repair killed anywhere leaves a catalog that lists every snapshot, and a gc after it
/// deletes no pack that history needs (`check_store` reads every snapshot back).
#[test]
fn a_crash_in_repair_loses_nothing() {
    if !test_hooks() {
        return;
    }
    crash_cases(&["repair"], None);
    crash_cases(&["repair"], Some(powerloss::Cut::DropUnsynced));
}

#[test]
fn a_crash_in_undo_redo_or_restore_loses_nothing() {
    if !test_hooks() {
        return;
    }
    crash_cases(&["undo", "undo-large", "redo", "restore"], None);
}

/// The same crashes followed by a power cut that drops every write no fsync covered: proves
/// the order of fsyncs and renames, directory fsyncs included (docs/FORMAT.md 7).
#[test]
fn a_power_cut_in_save_prune_or_gc_loses_nothing() {
    if !test_hooks() {
        return;
    }
    crash_cases(
        &["save", "prune", "gc", "merge"],
        Some(powerloss::Cut::DropUnsynced),
    );
}

#[test]
fn a_power_cut_in_undo_redo_or_restore_loses_nothing() {
    if !test_hooks() {
        return;
    }
    crash_cases(
        &["undo", "undo-large", "redo", "restore"],
        Some(powerloss::Cut::DropUnsynced),
    );
}

/// The same power cuts with every restore made durable by one `syncfs`, as a restore of more
/// than `EACH_PATH_MAX_PATHS` paths or `EACH_PATH_MAX_BYTES` bytes is.
#[test]
fn a_power_cut_in_a_large_undo_redo_or_restore_loses_nothing() {
    if !test_hooks() {
        return;
    }
    WHOLE_FS_SYNC.with(|w| w.set(true));
    crash_cases(
        &["undo", "redo", "restore"],
        Some(powerloss::Cut::DropUnsynced),
    );
    crash_cases(&["undo", "restore"], Some(powerloss::Cut::KeepNames));
}

/// A power cut that keeps every rename but no unsynced file bytes: the files a restore had
/// renamed into place before its sync come back empty, and the roll-forward rewrites them.
#[test]
fn a_power_cut_keeping_renames_but_not_their_data_loses_nothing() {
    if !test_hooks() {
        return;
    }
    let cut = Some(powerloss::Cut::KeepNames);
    crash_cases(
        &["save", "undo", "undo-large", "redo", "restore", "gc"],
        cut,
    );
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
    if !test_hooks() {
        return;
    }
    let covered: std::collections::BTreeSet<&str> = FAULT_CASES
        .iter()
        .flat_map(|(_, fs)| fs.iter().map(|f| f.split(['@', ':']).next().unwrap()))
        .collect();
    for name in snap_store::testing::fault::FAULT_POINTS {
        assert!(covered.contains(name), "fault point {name} is not driven");
    }
    for (op, faults) in FAULT_CASES {
        for fault in *faults {
            fault_and_check(op, fault);
        }
    }
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
    if !test_hooks() {
        return;
    }
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
