//! `snap exec` always ends well, and a watcher leaves nothing in the socket directory: the
//! watcher an exec starts is its own (no idle timeout while the command runs, stopped when it
//! ends or cannot start); a watcher killed mid-run still lets the run save after and pass the
//! command's code on; a watcher's `.sock`, `.lock` and `.log` go when it exits cleanly, and
//! those of dead watchers are swept by the next one to start. A run is one turn: its
//! autosaves and its save after are taken back by one `undo --turn` and folded into one
//! line of `snap log`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use snap_e2e::{assert_conserved, everything, snap_cmd, write};

/// A workspace with a socket directory of its own.
struct Run {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let runtime = tempfile::tempdir().unwrap();
        std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        write(&root, "src/a.rs", b"fn a() {}\n");
        let run = Run {
            _dir: dir,
            root,
            runtime,
        };
        run.ok(&["init"]);
        run
    }

    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = snap_cmd(&self.root, args);
        cmd.env("XDG_RUNTIME_DIR", self.runtime.path());
        cmd
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "snap {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let all: Vec<&str> = ["--json"].iter().chain(args).copied().collect();
        serde_json::from_slice(&self.ok(&all).stdout).unwrap()
    }

    fn watcher(&self) -> Value {
        self.json(&["watch", "--status"])
    }

    /// Waits (10 s at most) for a watcher to answer; returns its status.
    fn wait_for_watcher(&self) -> Value {
        let asked = Instant::now();
        loop {
            let status = self.watcher();
            if status["running"] == true {
                return status;
            }
            assert!(asked.elapsed() < Duration::from_secs(10), "no watcher came");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn sockets(&self) -> PathBuf {
        self.runtime.path().join("snap")
    }

    /// The names in the socket directory.
    fn socket_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.sockets())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn head(&self) -> Value {
        self.json(&["show", "@"])
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.cmd(&["watch", "--stop"]).output();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A command quiet for four times `[watch] idle_timeout` keeps its watcher (which has no
/// idle timeout while the command runs), ends with the command's code and no warning, and
/// leaves no watcher and no file in the socket directory.
#[test]
fn a_command_outliving_the_idle_timeout_ends_well() {
    let run = Run::new();
    std::fs::write(
        run.root.join(".snap/config.toml"),
        "[watch]\nidle_timeout = \"1s\"\n",
    )
    .unwrap();
    let child = run
        .cmd(&[
            "exec",
            "--",
            "sh",
            "-c",
            "sleep 4; echo done > out.txt; exit 3",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mid_run = run.wait_for_watcher();
    assert_eq!(mid_run["idle_timeout_s"], Value::Null, "{mid_run}");
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        !stderr.contains("warning:") && !stderr.contains("error:"),
        "{stderr}"
    );
    let head = run.head();
    assert_eq!(head["message"], "after sh", "{head}");
    assert_eq!(head["meta"]["exit"], "3");
    let saved = run.ok(&["cat", "@", "out.txt"]);
    assert_eq!(text(&saved.stdout), "done\n");
    assert_eq!(run.watcher()["running"], false);
    assert_eq!(run.socket_files(), Vec::<String>::new());
}

/// A command that cannot start is one `error:` line and exit 127, and leaves no watcher to
/// autosave later edits under the dead run's session.
#[test]
fn a_missing_command_leaves_no_watcher() {
    let run = Run::new();
    let out = run
        .cmd(&[
            "exec",
            "--quiet-for",
            "1s",
            "--",
            "no-such-command-snap-e2e",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("no-such-command-snap-e2e"), "{stderr}");
    assert_eq!(run.watcher()["running"], false);
    assert_eq!(run.socket_files(), Vec::<String>::new());
    let before = run.json(&["log"])["snapshots"].as_array().unwrap().len();
    write(&run.root, "src/later.rs", b"an edit after the run\n");
    std::thread::sleep(Duration::from_millis(2500));
    let after = run.json(&["log"])["snapshots"].as_array().unwrap().len();
    assert_eq!(before, after, "nothing autosaved after the run");
}

/// The watcher killed with -9 mid-run: the run still saves after, exits with the command's
/// code, warns once, and sweeps what the dead watcher left in the socket directory.
#[test]
fn a_watcher_killed_during_the_run_still_ends_well() {
    let run = Run::new();
    let child = run
        .cmd(&[
            "exec",
            "--",
            "sh",
            "-c",
            "sleep 3; echo late > late.txt; exit 5",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = run.wait_for_watcher();
    let pid = rustix::process::Pid::from_raw(status["pid"].as_i64().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("warning:")).count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("error:"), "{stderr}");
    assert_eq!(run.head()["message"], "after sh");
    let saved = run.ok(&["cat", "@", "late.txt"]);
    assert_eq!(text(&saved.stdout), "late\n");
    assert_eq!(run.watcher()["running"], false);
    assert_eq!(run.socket_files(), Vec::<String>::new());
}

/// Makes `path` (and its file) look a few minutes old.
fn aged(path: &Path) {
    let file = std::fs::File::options()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    let then = SystemTime::now() - Duration::from_secs(300);
    file.set_modified(then).unwrap();
}

/// `snap watch --stop` leaves the socket directory as it found it; a watcher starting sweeps
/// the files of watchers that died without cleaning up, and leaves those of live ones.
#[test]
fn a_watchers_files_go_with_it_and_stale_ones_are_swept() {
    let run = Run::new();
    run.ok(&["watch", "--background"]);
    let exts: Vec<String> = (run.socket_files().iter())
        .filter_map(|n| Some(n.rsplit_once('.')?.1.to_string()))
        .collect();
    assert_eq!(exts, ["lock", "log", "sock"], "{:?}", run.socket_files());
    run.ok(&["watch", "--stop"]);
    assert_eq!(run.socket_files(), Vec::<String>::new());
    // A dead watcher's set, a log of one that failed to start, and a live watcher's lock.
    let dir = run.sockets();
    for name in [
        "dead.lock",
        "dead.log",
        "dead.sock",
        "failed.log",
        "live.lock",
    ] {
        aged(&dir.join(name));
    }
    let live = std::fs::File::options()
        .write(true)
        .open(dir.join("live.lock"))
        .unwrap();
    rustix::fs::flock(&live, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    run.ok(&["watch", "--background"]);
    let left: Vec<String> = (run.socket_files().into_iter())
        .filter(|n| n.split('.').next().is_some_and(|stem| stem.len() != 24))
        .collect();
    assert_eq!(left, ["live.lock"]);
    run.ok(&["watch", "--stop"]);
    assert_eq!(run.socket_files(), ["live.lock"]);
}

/// A run whose command writes over time, autosaved in between, is one turn: one
/// `undo --turn` gives back the tree exactly as it was before the command (unsaved edits
/// made before it included), `redo --turn` the tree it left, nothing is lost either way,
/// and `snap log` shows the run's autosaves folded into one line (`-v` shows each).
#[test]
fn a_run_with_autosaves_is_one_turn() {
    let run = Run::new();
    run.ok(&["save", "-m", "base"]);
    write(&run.root, "src/a.rs", b"fn a() { unsaved(); }\n");
    let before = everything(&run.root);
    let script = "echo 1 > one.txt; sleep 2.5; echo 2 > two.txt; rm src/a.rs; sleep 2.5; \
                  mkdir -p d; echo 3 > d/three.txt";
    run.ok(&["exec", "--quiet-for", "1s", "--", "sh", "-c", script]);
    let after = everything(&run.root);
    let log = run.json(&["log"]);
    let snapshots = log["snapshots"].as_array().unwrap();
    let of_run: Vec<&Value> = (snapshots.iter())
        .filter(|s| {
            s["session"]
                .as_str()
                .is_some_and(|n| n.starts_with("exec-sh-"))
        })
        .collect();
    let autosaves = (of_run.iter())
        .filter(|s| s["meta"]["autosave"] == "1")
        .count();
    assert!(
        autosaves >= 2,
        "the run was autosaved twice at least: {log}"
    );
    for s in &of_run {
        let want = match s["message"].as_str() {
            Some("before sh") => 0,
            _ => 1,
        };
        assert_eq!(s["step"], want, "one turn: {s}");
    }
    assert_eq!(log["head"]["step"], 1, "{log}");

    // The log folds the run's autosaves into its line; -v and --json list them all.
    let folded = text(&run.ok(&["log"]).stdout);
    let every = text(&run.ok(&["log", "-v"]).stdout);
    assert_eq!(
        every.lines().count() - folded.lines().count(),
        autosaves,
        "{folded}\n{every}"
    );
    assert!(
        folded.contains(&format!("(+{autosaves} autosaves)")),
        "{folded}"
    );

    let undone = run.json(&["undo", "--turn"]);
    assert_eq!(everything(&run.root), before, "undo --turn: {undone}");
    assert_conserved(&run.root, &after, "undo --turn of a run");
    assert_eq!(undone["head"]["message"], "before sh", "{undone}");

    let redone = run.json(&["redo", "--turn"]);
    assert_eq!(everything(&run.root), after, "redo --turn: {redone}");
    assert_conserved(&run.root, &before, "redo --turn of a run");
    assert_eq!(redone["head"]["id"], log["head"]["id"], "{redone}");
}
