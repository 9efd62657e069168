//! `snap watch`: with the watcher running, every save records exactly the tree a whole walk
//! of a fresh store records (tree id for tree id), reading only what changed; and whatever
//! happens to the watcher (killed with -9, its queue overflowed, its socket left stale, a
//! filesystem it cannot trust, the workspace deleted under it) no save misrecords a change.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use snap_e2e::{assert_conserved, everything, snap_cmd, write};
use snap_tree::{ObjectId, SaveOptions, Workspace};

/// A workspace, and a socket directory of its own so that suites never share a watcher.
struct Watched {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: tempfile::TempDir,
}

impl Watched {
    fn new() -> Watched {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let runtime = tempfile::tempdir().unwrap();
        std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        for d in 0..6 {
            for f in 0..5 {
                write(
                    &root,
                    &format!("src/m{d}/sub/f{f}.rs"),
                    format!("fn f{f}() {{}}\n").as_bytes(),
                );
            }
        }
        write(&root, ".gitignore", b"target/\n*.log\n");
        write(&root, "target/debug/out", b"ignored");
        let w = Watched {
            _dir: dir,
            root,
            runtime,
        };
        w.ok(&["init"]);
        w
    }

    fn snap(&self, args: &[&str]) -> Output {
        snap_cmd(&self.root, args)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env("SNAP_TIMING", "1")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.snap(args);
        assert!(
            out.status.success(),
            "snap {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Saves; returns whether the save read only what the watcher named.
    fn save(&self) -> bool {
        let out = self.ok(&["save"]);
        String::from_utf8_lossy(&out.stderr).contains("changed directories read")
    }

    /// Starts a watcher in the background with `env` set (the testing-only switches).
    fn start_with(&self, env: &[(&str, &str)]) {
        let mut cmd = snap_cmd(&self.root, &["watch", "--background"]);
        cmd.env("XDG_RUNTIME_DIR", self.runtime.path());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The running watcher's pid.
    fn pid(&self) -> rustix::process::Pid {
        let pid = self.status()["pid"].as_i64().unwrap() as i32;
        rustix::process::Pid::from_raw(pid).unwrap()
    }

    /// Waits (up to 10 s) for the watcher's socket to go, as it does when the watcher exits.
    fn assert_socket_goes(&self, what: &str) {
        let socket_dir = self.runtime.path().join("snap");
        let gone = std::time::Instant::now();
        while std::fs::read_dir(&socket_dir)
            .unwrap()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "sock"))
        {
            assert!(gone.elapsed().as_secs() < 10, "{what}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn status(&self) -> serde_json::Value {
        serde_json::from_slice(&self.ok(&["--json", "watch", "--status"]).stdout).unwrap()
    }

    /// HEAD's root in the workspace's own store.
    fn head_root(&self) -> ObjectId {
        let ws = Workspace::discover_reading(&self.root, None).unwrap();
        ws.head().unwrap().unwrap().record.root
    }

    /// Asserts that HEAD is what a fresh store's whole walk finds now.
    fn assert_head_is_the_walk(&self, what: &str) {
        let store = tempfile::tempdir().unwrap();
        // Under the workspace's own config.
        if let Ok(config) = std::fs::read(self.root.join(".snap/config.toml")) {
            std::fs::write(store.path().join("config.toml"), config).unwrap();
        }
        let fresh = Workspace::init(&self.root, Some(store.path()), true).unwrap();
        let opts = SaveOptions {
            allow_empty: true,
            ..SaveOptions::default()
        };
        fresh.save(&opts).unwrap();
        let walked = fresh.head().unwrap().unwrap().record.root;
        let head = self.head_root();
        if head != walked {
            let ws = Workspace::discover_reading(&self.root, None).unwrap();
            let ours = snap_tree::flat::flatten(ws.store(), &head).unwrap();
            let theirs = snap_tree::flat::flatten(fresh.store(), &walked).unwrap();
            let diff = snap_tree::flat::diff_files(&theirs, &ours);
            let modes: Vec<_> = (ours.iter())
                .filter(|(p, n)| theirs.get(*p).is_some_and(|t| t != *n))
                .map(|(p, n)| (String::from_utf8_lossy(p).into_owned(), *n, theirs[p]))
                .collect();
            panic!("{what}: HEAD differs from the walk: {diff:?}\n{modes:?}");
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.snap(&["watch", "--stop"]);
    }
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One random edit of the kinds agents and editors make.
fn edit(root: &Path, rng: &mut Rng, n: usize) {
    let m = rng.below(8);
    let f = rng.below(7);
    let dir = root.join(format!("src/m{m}/sub"));
    let file = dir.join(format!("f{f}.rs"));
    match rng.below(9) {
        0 | 1 => {
            std::fs::create_dir_all(&dir).unwrap();
            if file.is_symlink() {
                std::fs::remove_file(&file).unwrap();
            }
            std::fs::write(&file, format!("edit {n}\n")).unwrap();
        }
        2 => {
            let _ = std::fs::remove_file(&file);
        }
        3 => {
            let _ = std::fs::rename(&file, dir.join(format!("moved{n}.rs")));
        }
        4 => {
            let mode = if n.is_multiple_of(2) { 0o755 } else { 0o644 };
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode));
        }
        5 => {
            let new = root.join(format!("src/new{n}/deep/er"));
            std::fs::create_dir_all(&new).unwrap();
            std::fs::write(new.join("x.rs"), b"new\n").unwrap();
            std::fs::write(new.join("x.log"), b"ignored\n").unwrap();
        }
        6 => {
            let _ = std::fs::remove_dir_all(root.join(format!("src/m{m}")));
        }
        7 => {
            let rules = if n.is_multiple_of(2) {
                "target/\n*.log\nsub/f1.rs\n"
            } else {
                "target/\n"
            };
            std::fs::write(root.join(format!("src/m{m}/.gitignore")), rules).ok();
        }
        _ => {
            let _ = std::fs::remove_file(&file);
            let _ = std::os::unix::fs::symlink("../sub", &file);
        }
    }
}

#[test]
fn a_watched_session_records_what_the_walk_records_reading_only_what_changed() {
    let w = Watched::new();
    w.ok(&["save"]);
    let started = w.ok(&["--json", "watch", "--background"]);
    let started: serde_json::Value = serde_json::from_slice(&started.stdout).unwrap();
    assert!(
        started["directories_watched"].as_u64().unwrap() >= 13,
        "{started}"
    );
    assert!(
        !w.save(),
        "the first save after the watcher starts has no token: it walks"
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut partial = 0;
    for batch in 0..40 {
        for n in 0..=rng.below(4) as usize {
            edit(&w.root, &mut rng, batch * 10 + n);
        }
        partial += usize::from(w.save());
        w.assert_head_is_the_walk(&format!("batch {batch}"));
        if batch % 5 == 4 {
            let before = everything(&w.root);
            let (op, timing) = match batch % 10 {
                9 => ("undo", w.ok(&["undo"])),
                _ => ("undo", w.ok(&["undo", "2"])),
            };
            assert!(String::from_utf8_lossy(&timing.stderr).contains("changed directories read"));
            assert_conserved(&w.root, &before, &format!("{op} after batch {batch}"));
            w.assert_head_is_the_walk(&format!("undo after batch {batch}"));
            if batch % 10 == 4 {
                let before = everything(&w.root);
                w.ok(&["redo"]);
                assert_conserved(&w.root, &before, &format!("redo after batch {batch}"));
                w.assert_head_is_the_walk(&format!("redo after batch {batch}"));
            }
            partial += usize::from(w.save());
            w.assert_head_is_the_walk(&format!("save after the undo of batch {batch}"));
        }
    }
    assert!(partial >= 40, "only {partial} saves read from the watcher");
    assert_eq!(w.status()["doubt"], serde_json::Value::Null);
}

#[test]
fn a_watcher_killed_stale_or_overflowed_never_misrecords_a_change() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    write(&w.root, "src/m0/sub/f0.rs", b"before the kill\n");
    assert!(w.save());
    let pid = w.pid();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Its socket is left behind: saves cannot reach it and walk.
    write(&w.root, "src/m1/sub/f1.rs", b"while no watcher runs\n");
    assert!(!w.save());
    w.assert_head_is_the_walk("after the watcher was killed");
    assert_eq!(w.status()["running"], false);
    // A new watcher takes the stale socket's place; its first answer is *everything*.
    w.ok(&["watch", "--background"]);
    write(&w.root, "src/m2/sub/f2.rs", b"new epoch\n");
    assert!(!w.save());
    w.assert_head_is_the_walk("after a new watcher started");
    // Stopped, it reads nothing: a burst in a watched directory overflows its queue.
    let burst = w.root.join("src/burst");
    std::fs::create_dir_all(&burst).unwrap();
    w.save();
    let pid = w.pid();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    for i in 0..6000 {
        std::fs::write(burst.join(format!("{i}")), b"x").unwrap();
        std::fs::write(burst.join(format!("{i}")), b"xy").unwrap();
    }
    for i in (0..6000).step_by(3) {
        std::fs::remove_file(burst.join(format!("{i}"))).unwrap();
    }
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    w.save();
    w.assert_head_is_the_walk("after the queue overflowed");
    assert!(
        w.status()["epoch"].as_u64().unwrap() >= 2,
        "the overflow starts an epoch"
    );
    write(&w.root, "src/burst/after", b"after the overflow\n");
    assert!(w.save(), "a new epoch's token is answered again");
    w.assert_head_is_the_walk("a save after the overflow");
}

#[test]
fn a_watcher_on_a_filesystem_it_cannot_trust_answers_everything() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.start_with(&[("SNAP_WATCH_ASSUME_NETWORK_FS", "1")]);
    assert!(w.status()["doubt"].as_str().unwrap().contains("network"));
    for n in 0..3 {
        write(&w.root, "src/m0/sub/f0.rs", format!("{n}\n").as_bytes());
        assert!(!w.save());
        w.assert_head_is_the_walk("on an untrusted filesystem");
    }
}

#[test]
fn one_watcher_per_workspace_and_it_exits_when_the_workspace_goes() {
    let w = Watched::new();
    w.ok(&["watch", "--background"]);
    let again = w.ok(&["--json", "watch", "--background"]);
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        again["pid"],
        w.status()["pid"],
        "a second start finds the first"
    );
    let foreground = w.snap(&["watch"]);
    assert_eq!(foreground.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&foreground.stderr).starts_with("error: a watcher already runs")
    );
    // Two clients at once both get answers.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| w.snap(&["status"]));
        let b = s.spawn(|| w.snap(&["status"]));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(a.status.success() && b.status.success());
    std::fs::remove_dir_all(&w.root).unwrap();
    w.assert_socket_goes("the watcher outlived its workspace");
}

/// `snap exec` saves before and after the command, autosaves between its quiet moments (never
/// mid-burst), tags every snapshot with one session of its own and the command's name only,
/// passes the command's exit code on, and leaves no watcher behind.
#[test]
fn exec_makes_a_command_undoable_step_by_step() {
    let w = Watched::new();
    let script = "echo one > step1; sleep 2.5; \
                  for i in 1 2 3 4 5 6 7 8; do echo $i >> burst; sleep 0.1; done; sleep 2.5; \
                  echo secret-token > step3; exit 7";
    let out = snap_cmd(
        &w.root,
        &["exec", "--quiet-for", "1s", "--", "sh", "-c", script],
    )
    .env("XDG_RUNTIME_DIR", w.runtime.path())
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log: serde_json::Value = serde_json::from_slice(&w.ok(&["--json", "log"]).stdout).unwrap();
    let entries = log["snapshots"].as_array().unwrap().clone();
    assert!(entries.len() >= 3, "{log}");
    let sessions: std::collections::HashSet<String> = entries
        .iter()
        .map(|e| e["session"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(sessions.len(), 1, "one session per run: {sessions:?}");
    assert!(sessions.iter().all(|s| s.starts_with("exec-sh-")));
    let text = log.to_string();
    assert!(
        !text.contains("secret-token") && !text.contains("echo one"),
        "arguments are never recorded"
    );
    // Step by step back: every snapshot holds the burst whole or not at all.
    for e in &entries {
        let id = e["id"].as_str().unwrap();
        let burst = w.snap(&["cat", id, "burst"]);
        if burst.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&burst.stdout),
                "1\n2\n3\n4\n5\n6\n7\n8\n",
                "mid-burst snapshot {id}"
            );
        }
    }
    assert_eq!(
        w.status()["running"],
        false,
        "exec stops the watcher it started"
    );
    w.ok(&["undo"]);
    assert!(!w.root.join("step3").exists());
    assert!(w.root.join("burst").exists());
}

/// Directories made in a burst (`mkdir -p a/b/c/d`, as agents do) are all watched, however the
/// burst interleaves with the watcher's reading of it: each directory is watched before it is
/// listed. A file written later in the deepest of them is seen by the next save.
#[test]
fn directories_made_in_a_burst_are_all_watched() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    let deep = |n: usize| w.root.join(format!("gen/p{n}/q/r/s/t"));
    for n in 0..40 {
        std::fs::create_dir_all(deep(n)).unwrap();
        std::fs::write(deep(n).join("first"), b"1").unwrap();
    }
    assert!(w.save());
    w.assert_head_is_the_walk("after the burst");
    for n in 0..40 {
        std::fs::write(deep(n).join("second"), b"2").unwrap();
    }
    assert!(w.save());
    w.assert_head_is_the_walk("a file in each directory the burst made");
}

/// `--stop` returns once the watcher is gone, so a new one starts at once; `--status` and
/// `--stop` with none running say so and succeed.
#[test]
fn a_stopped_watcher_can_be_started_again_at_once() {
    let w = Watched::new();
    for _ in 0..3 {
        w.ok(&["watch", "--background"]);
        assert_eq!(w.status()["running"], true);
        w.ok(&["watch", "--stop"]);
        assert_eq!(w.status()["running"], false);
    }
    let again: serde_json::Value =
        serde_json::from_slice(&w.ok(&["--json", "watch", "--stop"]).stdout).unwrap();
    assert_eq!(again["stopped"], false);
}

/// A watcher that stops hearing a directory (the test's stand-in for a filesystem that does
/// not report every write) catches itself at its next check: a new epoch, so the next save
/// walks everything and records the change it missed; `snap doctor` names it.
#[test]
fn a_silent_watcher_catches_itself_and_the_next_save_walks() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.start_with(&[
        ("SNAP_WATCH_DEAF", "src/m1"),
        ("SNAP_WATCH_CHECK_MS", "200"),
    ]);
    w.save();
    write(
        &w.root,
        "src/m1/sub/unheard.rs",
        b"made where the watcher does not hear\n",
    );
    let waited = std::time::Instant::now();
    while w.status()["silent_changes"] == 0 {
        assert!(
            waited.elapsed().as_secs() < 10,
            "the check never ran: {}",
            w.status()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(w.status()["epoch"].as_u64().unwrap() >= 2);
    assert!(!w.save(), "a new epoch: the save walks");
    w.assert_head_is_the_walk("after a change the watcher did not hear");
    let doctor: serde_json::Value =
        serde_json::from_slice(&w.ok(&["--json", "doctor"]).stdout).unwrap();
    assert_eq!(doctor["watcher"]["last_silent_change"], "src/m1/sub");
}

/// A config change while the watcher runs (a directory excluded by default made tracked)
/// starts a new epoch and watches what is tracked now; a config that cannot be read puts it
/// in doubt until it can.
#[test]
fn the_watcher_follows_the_config() {
    let w = Watched::new();
    write(&w.root, "build/out/a.o", b"built\n");
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    std::fs::write(w.root.join(".snap/config.toml"), "exclude_dirs = []\n").unwrap();
    assert!(!w.save(), "another config: the save walks");
    w.assert_head_is_the_walk("build/ tracked now");
    write(&w.root, "build/out/b.o", b"built later\n");
    assert!(w.save());
    w.assert_head_is_the_walk("a file in build/, watched since the config changed");
    std::fs::write(w.root.join(".snap/config.toml"), "exclude_dirs = 3\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(w.status()["doubt"].as_str().unwrap().contains("config"));
    std::fs::write(w.root.join(".snap/config.toml"), "exclude_dirs = []\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(w.status()["doubt"], serde_json::Value::Null);
}

/// Past its watch budget the watcher answers everything (and says how to raise the limit);
/// the workspace moved away from under it, it exits.
#[test]
fn a_watcher_past_its_budget_doubts_and_one_whose_root_moves_exits() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.start_with(&[("SNAP_WATCH_BUDGET", "5")]);
    let doubt = w.status()["doubt"].as_str().unwrap().to_string();
    assert!(doubt.contains("max_user_watches"), "{doubt}");
    write(&w.root, "src/m0/sub/f0.rs", b"changed\n");
    assert!(!w.save());
    w.assert_head_is_the_walk("past the budget");
    let moved = w.root.with_file_name(format!(
        "{}-moved",
        w.root.file_name().unwrap().to_string_lossy()
    ));
    std::fs::rename(&w.root, &moved).unwrap();
    w.assert_socket_goes("the watcher outlived its workspace's move");
    std::fs::rename(&moved, &w.root).unwrap();
}

/// Writes racing saves (a writer making files and directories while saves run) are never
/// lost to later saves: once the writer stops, the next save records what a walk records.
/// The watcher killed with -9 at random moments of a save, and started again, loses nothing
/// either.
#[test]
fn writes_racing_saves_and_a_watcher_killed_mid_save_lose_nothing() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let dir = w.root.join(format!("race/d{}/e{}", n % 7, n % 3));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(format!("f{}", n % 11)), format!("{n}\n")).unwrap();
                if n % 5 == 0 {
                    let _ = std::fs::remove_file(dir.join(format!("f{}", (n + 3) % 11)));
                }
            }
        });
        for _ in 0..12 {
            w.ok(&["save"]);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    w.save();
    w.assert_head_is_the_walk("after the writer stopped");
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for round in 0..6 {
        write(
            &w.root,
            &format!("race/kill{round}"),
            b"made before the kill\n",
        );
        let pid = w.pid();
        let save = snap_cmd(&w.root, &["save", "-q"])
            .env("XDG_RUNTIME_DIR", w.runtime.path())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(rng.below(4000)));
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        assert!(save.wait_with_output().unwrap().status.success());
        w.ok(&["watch", "--background"]);
        w.save();
        w.assert_head_is_the_walk(&format!("after kill {round}"));
    }
}

/// A watcher that is stopped (SIGSTOP) accepts a save's connection but never answers: the
/// save gives up waiting, walks, and records what a walk records.
#[test]
fn a_save_does_not_wait_forever_for_a_stopped_watcher() {
    let w = Watched::new();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    let pid = w.pid();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    write(
        &w.root,
        "src/m3/sub/while-stopped.rs",
        b"written while the watcher is stopped\n",
    );
    assert!(!w.save(), "no answer: the save walks");
    w.assert_head_is_the_walk("with the watcher stopped");
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
}

/// Writes `body` over the file at `path` in place (the same inode, as an editor that
/// truncates does), whatever other names it has.
fn overwrite(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
}

/// A file with two names raises an event only in the directory of the name written
/// through: a save still records what the walk records, for names linked before the watcher
/// starts and while it runs, inside the workspace and outside it.
#[test]
fn a_file_written_through_another_name_is_recorded() {
    let w = Watched::new();
    let outside = tempfile::tempdir().unwrap();
    let at = |rel: &str| w.root.join(rel);
    std::fs::hard_link(at("src/m0/sub/f0.rs"), at("src/m1/sub/linked.rs")).unwrap();
    std::fs::hard_link(at("src/m2/sub/f0.rs"), outside.path().join("x.rs")).unwrap();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    overwrite(&at("src/m0/sub/f0.rs"), "through src/m0\n");
    assert!(
        w.save(),
        "a write in a watched directory: the save reads what changed"
    );
    w.assert_head_is_the_walk("written through src/m0/sub/f0.rs, also src/m1/sub/linked.rs");
    overwrite(&at("src/m1/sub/linked.rs"), "through src/m1\n");
    w.save();
    w.assert_head_is_the_walk("written through src/m1/sub/linked.rs");
    overwrite(&outside.path().join("x.rs"), "through a name outside\n");
    w.save();
    w.assert_head_is_the_walk("written through a name outside the workspace");
    // A second name made while the watcher runs, of a file that had one.
    std::fs::hard_link(at("src/m3/sub/f1.rs"), at("src/m4/sub/late.rs")).unwrap();
    w.save();
    w.assert_head_is_the_walk("a second name made");
    overwrite(&at("src/m4/sub/late.rs"), "through the late name\n");
    w.save();
    w.assert_head_is_the_walk("written through the name made while watched");
    // One brought in from outside, of a file the workspace holds under another name.
    std::fs::hard_link(at("src/m5/sub/f2.rs"), outside.path().join("y.rs")).unwrap();
    std::fs::hard_link(outside.path().join("y.rs"), at("src/m0/sub/in.rs")).unwrap();
    w.save();
    overwrite(&outside.path().join("y.rs"), "through y\n");
    w.save();
    w.assert_head_is_the_walk("written through a name outside, linked in while watched");
    assert_eq!(w.status()["doubt"], serde_json::Value::Null);
}

/// The config removed, renamed away, replaced by a hard link, or written through another
/// name while the watcher runs: each is a new epoch, and what the config tracks now is
/// watched.
#[test]
fn any_change_to_the_config_is_a_new_epoch() {
    let w = Watched::new();
    let config = w.root.join(".snap/config.toml");
    let excluding = "exclude_paths = [\"src/m5\"]\n";
    let outside = tempfile::tempdir().unwrap();
    let shared = outside.path().join("config.toml");
    std::fs::write(&config, excluding).unwrap();
    w.ok(&["save"]);
    w.ok(&["watch", "--background"]);
    w.save();
    let epochs = || w.status()["epoch"].as_u64().unwrap();
    let mut edits = 0;
    let mut edit_m5 = |what: &str| {
        edits += 1;
        write(
            &w.root,
            "src/m5/sub/f0.rs",
            format!("edit {edits}\n").as_bytes(),
        );
        w.save();
        w.assert_head_is_the_walk(what);
    };
    let steps: [(&str, &dyn Fn()); 4] = [
        ("removed", &|| std::fs::remove_file(&config).unwrap()),
        ("renamed away", &|| {
            std::fs::rename(&config, w.root.join(".snap/config.old")).unwrap();
        }),
        ("replaced by a hard link", &|| {
            std::fs::write(&shared, "exclude_paths = []\n").unwrap();
            std::fs::remove_file(&config).unwrap();
            std::fs::hard_link(&shared, &config).unwrap();
        }),
        ("written through another name", &|| {
            std::fs::write(&shared, "exclude_paths = []\n# edited elsewhere\n").unwrap();
        }),
    ];
    for (what, change) in steps {
        if what != "written through another name" {
            std::fs::write(&config, excluding).unwrap();
            w.save();
            w.assert_head_is_the_walk(&format!("excluding src/m5 again, before: {what}"));
        }
        let before = epochs();
        change();
        assert!(!w.save(), "config {what}: the save walks");
        assert!(epochs() > before, "config {what}: a new epoch");
        w.assert_head_is_the_walk(&format!("config {what}"));
        edit_m5(&format!("src/m5 edited after the config was {what}"));
    }
    assert_eq!(w.status()["doubt"], serde_json::Value::Null);
}

/// A tmpfs mounted over a tracked directory and a bind mount made while the watcher runs
/// raise no event: the mount table changing is a new epoch, and mount points below the root
/// are read by every save. Runs in a user and mount namespace of its own (`unshare -rm`);
/// skipped, saying why, where that is not allowed.
#[test]
fn filesystems_mounted_inside_the_root_are_read_by_every_save() {
    let probe = std::process::Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            "mount -t tmpfs none /mnt 2>/dev/null || mount -t tmpfs none /tmp",
        ])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: cannot mount in a user namespace here (unshare -rm, then mount)");
        return;
    }
    let w = Watched::new();
    w.ok(&["save"]);
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // Each save with the watcher, then a status of a process that cannot find the watcher
    // (another runtime directory): it walks, and must find HEAD is the tree.
    let script = r#"
set -e
check() {
    "$SNAP" save >/dev/null 2>>"$LOG"
    echo "$1 $(XDG_RUNTIME_DIR="$ELSEWHERE" "$SNAP" --json status | tr -d ' \n')"
}
"$SNAP" watch --background >/dev/null
check first
echo start > src/m0/sub/f0.rs
check watched
mount -t tmpfs none src/m0/sub
echo on tmpfs > src/m0/sub/new.rs
check tmpfs-mounted
echo again > src/m0/sub/new.rs
check tmpfs-written
mount --bind "$OUTSIDE" src/m1/sub
echo via outside > "$OUTSIDE/x.rs"
check bind-mounted
echo again > "$OUTSIDE/x.rs"
check bind-written-outside
umount src/m0/sub
check tmpfs-unmounted
grep -c "changed directories read" "$LOG" | sed 's/^/partial /'
"$SNAP" watch --stop >/dev/null
"#;
    let log = outside.path().join("timing.log");
    let out = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .current_dir(&w.root)
        .env("SNAP", snap_e2e::bin("snap"))
        .env("XDG_RUNTIME_DIR", w.runtime.path())
        .env("ELSEWHERE", elsewhere.path())
        .env("OUTSIDE", outside.path())
        .env("LOG", &log)
        .env("SNAP_TIMING", "1")
        .env("HOME", "/nonexistent-home")
        .env_remove("SNAP_STORE")
        .env_remove("SNAP_DISABLE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: Vec<&str> = stdout.lines().filter(|l| l.contains('{')).collect();
    assert_eq!(steps.len(), 7, "{stdout}");
    for line in steps {
        assert!(
            line.contains("\"clean\":true"),
            "HEAD is not the tree: {line}"
        );
    }
    let partial = stdout.lines().find_map(|l| l.strip_prefix("partial "));
    assert!(
        partial.is_some_and(|n| n.trim().parse::<u32>().unwrap() >= 2),
        "saves still read from the watcher: {stdout}"
    );
}

/// docs/JSON.md's watcher documents against what the binary prints: a running watcher's
/// status, none running, and a stop.
#[test]
fn docs_json_md_watcher_documents_match_what_the_binary_prints() {
    let doc = std::fs::read_to_string(snap_e2e::docs_dir().join("JSON.md")).unwrap();
    let section = doc.split("\n## `snap watch --status`\n").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let running = section.split("```text\n").nth(1).unwrap();
    let running = running.split("```").next().unwrap();
    let documented = crate::output::documented_keys(running);
    let keys = |v: &serde_json::Value| {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let w = Watched::new();
    let none = w.status();
    assert_eq!(keys(&none), ["root", "running"], "{none}");
    assert_eq!(none["running"], false);
    w.start_with(&[]);
    let status = w.status();
    assert_eq!(vec![keys(&status)], documented, "{status}");
    assert_eq!(status["running"], true);
    assert_eq!(status["root"], w.root.to_string_lossy().as_ref());
    let stop = w.ok(&["--json", "watch", "--stop"]);
    let stop: serde_json::Value = serde_json::from_slice(&stop.stdout).unwrap();
    assert_eq!(keys(&stop), ["pid", "running", "stopped"], "{stop}");
    assert_eq!(stop["pid"], status["pid"]);
    assert_eq!(stop["stopped"], true);
    w.assert_socket_goes("stopped");
}
