//! Reading history as git and jj let you: short session ids taken back as unique prefixes,
//! a summary under `diff --stat`, colour in `log` on a terminal only, a pager on a terminal
//! (in a pseudo-terminal of a tmux server of the test's own), and renames (exact, and lines
//! at least half alike) shown as renames by `status`, `diff`, `show` and `log`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use snap_e2e::*;

const SESSION_A1: &str = "aaaa1111-0000-4000-8000-000000000001";
const SESSION_A2: &str = "aaaa2222-0000-4000-8000-000000000002";
const SESSION_B: &str = "bbbb3333-0000-4000-8000-000000000003";

/// Three sessions, two of which begin alike.
fn three_sessions(d: &Path) {
    for (n, session) in [SESSION_A1, SESSION_A2, SESSION_B].iter().enumerate() {
        write(d, "f.txt", format!("{n}\n").as_bytes());
        ok(
            d,
            &["save", "-m", &format!("turn {n}"), "--session", session],
        );
    }
}

#[test]
fn log_session_takes_the_short_id_as_a_unique_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    three_sessions(d);
    let oneline = ok(d, &["log", "--oneline"]);
    assert!(oneline.contains("bbbb3333 turn 2"), "{oneline}");
    // The 8 characters --oneline prints select that session's snapshots.
    let out = ok(d, &["log", "--session", "bbbb3333"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("turn 2"), "{out}");
    let full = json(d, &["log", "--session", SESSION_A1]);
    assert_eq!(full["snapshots"].as_array().unwrap().len(), 1);
    assert_eq!(full["snapshots"][0]["session"], SESSION_A1);
    let short = json(d, &["log", "--session", "aaaa2"]);
    assert_eq!(short["snapshots"][0]["session"], SESSION_A2);
    // A prefix of two sessions names both, and selects nothing.
    let out = snap(d, &["log", "--session", "aaaa"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains(SESSION_A1) && err.contains(SESSION_A2),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // No session at all is an error, not an empty history.
    let out = snap(d, &["log", "--session", "cccc"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("cccc") && err.lines().count() == 1,
        "{err}"
    );
    let out = snap(d, &["--json", "log", "--session", "cccc"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["error"].as_str().unwrap().contains("cccc"), "{doc}");
}

#[test]
fn diff_stat_ends_with_gits_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\ntwo\n");
    write(d, "b.txt", b"x\n");
    ok(d, &["save", "-m", "first"]);
    write(d, "a.txt", b"one\n2\nthree\n");
    write(d, "c.txt", b"new\n");
    let out = ok(d, &["diff", "--stat"]);
    assert_eq!(
        out.lines().last(),
        Some(" 2 files changed, 3 insertions(+), 1 deletion(-)"),
        "{out}"
    );
    std::fs::remove_file(d.join("c.txt")).unwrap();
    write(d, "a.txt", b"one\n");
    let out = ok(d, &["diff", "--stat"]);
    assert_eq!(
        out.lines().last(),
        Some(" 1 file changed, 1 deletion(-)"),
        "{out}"
    );
}

#[test]
fn log_lines_show_short_sessions_and_no_colour_down_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\n");
    ok(
        d,
        &["save", "--session", SESSION_B, "--step", "12", "-m", "m"],
    );
    let out = ok(d, &["log"]);
    assert!(!out.contains(SESSION_B), "{out}");
    assert!(out.contains("session bbbb3333"), "{out}");
    assert!(!out.contains('\x1b'), "colour down a pipe: {out:?}");
    // Before the message, a row with every field fits 100 columns.
    let line = out.lines().next().unwrap().trim_end_matches("  m");
    assert!(
        line.chars().count() <= 100,
        "{} columns: {line}",
        line.len()
    );
    // `show` keeps the whole session, on a line of its own.
    let show = ok(d, &["show", "@"]);
    assert!(show.contains(&format!("session {SESSION_B}")), "{show}");
}

/// A tmux server of the test's own, running one shell script in a pseudo-terminal.
struct Terminal {
    socket: PathBuf,
    dir: tempfile::TempDir,
}

impl Terminal {
    /// `None` (the test skips, saying so) without tmux, unless `SNAP_REQUIRE_TMUX` is set.
    fn new() -> Option<Terminal> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("SNAP_REQUIRE_TMUX").is_none(),
                "tmux is missing and SNAP_REQUIRE_TMUX is set"
            );
            eprintln!("SKIPPED: the pager tests need tmux (apt-get install tmux)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        Some(Terminal {
            socket: dir.path().join("tmux.sock"),
            dir,
        })
    }

    /// A pager script writing what it is given to `out`.
    fn pager_into(&self, out: &Path) -> PathBuf {
        let script = self.dir.path().join("pager.sh");
        let text = format!("#!/bin/sh\ncat > '{}'\n", out.display());
        std::fs::write(&script, text).unwrap();
        let run = Command::new("chmod").arg("+x").arg(&script).status();
        assert!(run.unwrap().success());
        script
    }

    /// Runs `snap ARGS` on `d` in the terminal with `env` set (and HOME, TERM), waits for it
    /// to exit, and returns its exit code and the screen.
    fn run(&self, env: &[(&str, &str)], d: &Path, args: &[&str]) -> (i32, String) {
        let name = format!("run{}", rand_ish());
        let rc = self.dir.path().join(format!("{name}.rc"));
        let mut line =
            String::from("env -u NO_COLOR -u PAGER -u SNAP_PAGER HOME=/nonexistent-home");
        for (k, v) in env {
            line.push_str(&format!(" {k}='{v}'"));
        }
        line.push_str(&format!(
            " '{}' -C '{}'",
            bin("snap").display(),
            d.display()
        ));
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        line.push_str(&format!("; echo $? > '{}'; sleep 60\n", rc.display()));
        let script = self.dir.path().join(format!("{name}.sh"));
        std::fs::write(&script, line).unwrap();
        let command = format!("sh '{}'", script.display());
        self.tmux(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "160",
            "-y",
            "40",
            &command,
        ]);
        let start = Instant::now();
        let code = loop {
            if let Ok(text) = std::fs::read_to_string(&rc)
                && let Ok(code) = text.trim().parse()
            {
                break code;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "snap {args:?} never exited"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // Each session stays until the server is killed: a server left with none exits,
        // racing the next `new-session`.
        let screen = self.tmux(&["capture-pane", "-p", "-t", &name]);
        (code, screen)
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// A number that differs from one call to the next, for session names.
fn rand_ish() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    u128::from(NEXT.fetch_add(1, Ordering::Relaxed))
}

#[test]
fn the_pager_runs_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("w");
    write(d, "a.txt", b"one\n");
    ok(d, &["save", "-m", "first", "--session", SESSION_B]);
    write(d, "a.txt", b"two\n");
    ok(d, &["save", "-m", "second"]);
    let paged = dir.path().join("paged.txt");
    // Down a pipe, SNAP_PAGER is never started: the output is stdout's.
    let pager = dir.path().join("pager.sh");
    std::fs::write(&pager, format!("#!/bin/sh\ncat > '{}'\n", paged.display())).unwrap();
    assert!(
        Command::new("chmod")
            .arg("+x")
            .arg(&pager)
            .status()
            .unwrap()
            .success()
    );
    for args in [
        &["log"][..],
        &["diff", "@~1"],
        &["show", "@"],
        &["blame", "a.txt"],
    ] {
        let out = snap_cmd(d, args)
            .env("SNAP_PAGER", &pager)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(!out.stdout.is_empty(), "snap {args:?} printed nothing");
        assert!(
            !paged.exists(),
            "snap {args:?} started the pager down a pipe"
        );
    }
    let Some(term) = Terminal::new() else {
        return;
    };
    let pager = term.pager_into(&paged);
    let pager = pager.to_str().unwrap();
    // On a terminal, each reading command goes through SNAP_PAGER, coloured.
    for args in [
        &["log"][..],
        &["diff", "@~1"],
        &["show", "@"],
        &["blame", "a.txt"],
    ] {
        let (code, _) = term.run(&[("SNAP_PAGER", pager)], d, args);
        assert_eq!(code, 0, "snap {args:?}");
        let text = std::fs::read_to_string(&paged)
            .unwrap_or_else(|_| panic!("snap {args:?} did not page"));
        assert!(!text.is_empty(), "snap {args:?} paged nothing");
        std::fs::remove_file(&paged).unwrap();
    }
    let (_, _) = term.run(&[("SNAP_PAGER", pager)], d, &["log"]);
    let text = std::fs::read_to_string(&paged).unwrap();
    assert!(
        text.contains("\x1b[33m") && text.contains("second"),
        "{text:?}"
    );
    std::fs::remove_file(&paged).unwrap();
    // PAGER when SNAP_PAGER is unset; NO_COLOR still rules out colour.
    let (_, _) = term.run(&[("PAGER", pager), ("NO_COLOR", "1")], d, &["log"]);
    let text = std::fs::read_to_string(&paged).unwrap();
    assert!(
        text.contains("second") && !text.contains('\x1b'),
        "{text:?}"
    );
    std::fs::remove_file(&paged).unwrap();
    // Never with --no-pager or --json, nor for a command that is not for reading.
    for args in [&["log", "--no-pager"][..], &["--json", "log"], &["status"]] {
        let (code, screen) = term.run(&[("SNAP_PAGER", pager)], d, args);
        assert_eq!(code, 0, "snap {args:?}");
        assert!(!paged.exists(), "snap {args:?} paged");
        assert!(
            screen.contains("first") || screen.contains("HEAD"),
            "{screen}"
        );
    }
    // A pager that cannot start: the log is printed on the terminal instead.
    let (code, screen) = term.run(&[("SNAP_PAGER", "/nonexistent/pager")], d, &["log"]);
    assert_eq!(code, 0);
    assert!(
        screen.contains("second") && screen.contains("first"),
        "{screen}"
    );
}

#[test]
fn quitting_the_pager_early_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("w");
    for n in 0..300 {
        write(d, &format!("f{n}.txt"), format!("{n}\n").as_bytes());
    }
    ok(d, &["save", "-m", "first"]);
    let more = "more\n".repeat(100);
    for n in 0..300 {
        write(d, &format!("f{n}.txt"), format!("{n}\n{more}").as_bytes());
    }
    let Some(term) = Terminal::new() else {
        return;
    };
    // Reads one line and quits, as a person pressing q does.
    let (code, screen) = term.run(
        &[("SNAP_PAGER", "head -n 1 >/dev/null")],
        d,
        &["diff", "--files-per-page", "300", "--max-lines", "0"],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("error"), "{screen}");
}

#[test]
fn an_exact_rename_reads_as_a_rename_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/old.rs", b"fn main() {}\n");
    write(d, "keep.txt", b"keep\n");
    write(d, "empty1", b"");
    ok(d, &["save", "-m", "first"]);
    std::fs::create_dir_all(d.join("lib")).unwrap();
    std::fs::rename(d.join("src/old.rs"), d.join("lib/new.rs")).unwrap();
    // Empty files are all alike: never paired.
    std::fs::rename(d.join("empty1"), d.join("empty2")).unwrap();
    write(d, "keep.txt", b"kept\n");

    let status = ok(d, &["status"]);
    assert!(status.contains("R src/old.rs -> lib/new.rs"), "{status}");
    assert!(!status.contains("D src/old.rs"), "{status}");
    assert!(
        status.contains("A empty2") && status.contains("D empty1"),
        "{status}"
    );
    let doc = json(d, &["status"]);
    let renamed: Vec<_> = (doc["changes"].as_array().unwrap().iter())
        .filter(|c| c["status"] == "renamed")
        .collect();
    assert_eq!(renamed.len(), 1, "{doc}");
    assert_eq!(renamed[0]["path"], "lib/new.rs");
    assert_eq!(renamed[0]["from"], "src/old.rs");

    let names = ok(d, &["diff", "--name-status"]);
    assert!(names.contains("R100\tsrc/old.rs\tlib/new.rs"), "{names}");
    assert!(!names.contains("D\tsrc/old.rs"), "{names}");
    let stat = ok(d, &["diff", "--stat"]);
    assert!(stat.contains("src/old.rs => lib/new.rs"), "{stat}");
    let full = ok(d, &["diff"]);
    assert!(
        full.contains("rename from src/old.rs\nrename to lib/new.rs"),
        "{full}"
    );
    let doc = json(d, &["diff"]);
    let file = (doc["files"].as_array().unwrap().iter())
        .find(|f| f["path"] == "lib/new.rs")
        .unwrap();
    assert_eq!(file["status"], "renamed");
    assert_eq!(file["from"], "src/old.rs");
    assert_eq!(doc["total_files"], 4, "{doc}");

    ok(d, &["save", "-m", "moved"]);
    // The log counts the move once: two added, two deleted, one of each a rename.
    let log = ok(d, &["log", "-n", "1"]);
    assert!(log.contains(" +1 ~1 -1 R1 "), "{log}");
    let show = ok(d, &["show", "@"]);
    assert!(show.contains("R src/old.rs -> lib/new.rs"), "{show}");
    let doc = json(d, &["show", "@"]);
    assert!(
        (doc["changes"].as_array().unwrap().iter())
            .any(|c| c["status"] == "renamed" && c["from"] == "src/old.rs"),
        "{doc}"
    );
    let names = ok(d, &["diff", "@~1", "@", "--name-status"]);
    assert!(names.contains("R100\tsrc/old.rs\tlib/new.rs"), "{names}");
}

#[test]
fn a_moved_and_edited_file_is_a_similar_rename() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\ntwo\nthree\nfour\nfive\n");
    write(d, "gone.txt", b"nothing like\nthe new one\n");
    ok(d, &["save", "-m", "first"]);
    std::fs::remove_file(d.join("a.txt")).unwrap();
    std::fs::remove_file(d.join("gone.txt")).unwrap();
    write(d, "c.txt", b"one\ntwo\nthree\nfour\nFIVE\n");
    write(d, "fresh.txt", b"unrelated\n");
    let status = ok(d, &["status"]);
    assert!(status.contains("R a.txt -> c.txt (79% alike)"), "{status}");
    assert!(
        status.contains("D gone.txt") && status.contains("A fresh.txt"),
        "{status}"
    );
    let names = ok(d, &["diff", "--name-status"]);
    assert!(names.contains("R079\ta.txt\tc.txt"), "{names}");
    let full = ok(d, &["diff"]);
    assert!(
        full.contains(
            "similarity index 79%\nrename from a.txt\nrename to c.txt\n--- a/a.txt\n+++ b/c.txt"
        ),
        "{full}"
    );
    assert!(full.contains("-five\n+FIVE"), "{full}");
    let doc = json(d, &["diff"]);
    let file = (doc["files"].as_array().unwrap().iter())
        .find(|f| f["path"] == "c.txt")
        .unwrap();
    assert_eq!(
        (&file["status"], &file["from"]),
        (&"renamed".into(), &"a.txt".into())
    );
    assert_eq!((&file["added"], &file["removed"]), (&1.into(), &1.into()));
    ok(d, &["save", "-m", "moved"]);
    let show = ok(d, &["show", "@"]);
    assert!(show.contains("R a.txt -> c.txt (79% alike)"), "{show}");
}
