//! `snap ui` driven as a person drives it: the real binary in a pseudo-terminal (a tmux
//! server of the test's own), keys sent, the screen read back, files and `snap log` checked.
//! Without tmux the suite skips loudly; CI sets `SNAP_REQUIRE_TMUX`, which makes that a
//! failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use snap_e2e::*;

/// A tmux server of this test's own, running `snap ui` in one window.
struct Screen {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Screen {
    /// Starts `snap ui` on `workspace` in a `width` x `height` terminal, or says why not.
    fn start(workspace: &Path, width: u16, height: u16) -> Option<Screen> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("SNAP_REQUIRE_TMUX").is_none(),
                "tmux is missing and SNAP_REQUIRE_TMUX is set"
            );
            eprintln!("SKIPPED: the snap ui suite needs tmux (apt-get install tmux)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let screen = Screen {
            socket: dir.path().join("tmux.sock"),
            _dir: dir,
        };
        let command = format!(
            "env HOME=/nonexistent-home NO_COLOR=1 {} -C {} ui",
            bin("snap").display(),
            workspace.display()
        );
        let size = [width.to_string(), height.to_string()];
        screen.tmux(&[
            "new-session",
            "-d",
            "-s",
            "ui",
            "-x",
            &size[0],
            "-y",
            &size[1],
            &command,
        ]);
        Some(screen)
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

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", "-t", "ui", key]);
        }
    }

    fn text(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "ui"])
    }

    /// Waits until the screen shows `text`; fails showing the screen after 15 s.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.text();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{text:?} never showed:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends keys and waits until the screen shows `text`.
    fn press(&self, keys: &[&str], text: &str) -> String {
        self.keys(keys);
        self.wait_for(text)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn first_log_line(d: &Path) -> String {
    ok(d, &["log", "--oneline"])
        .lines()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn restore_from_the_ui_after_a_preview_then_undo_there() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\n");
    ok(d, &["save", "-m", "first"]);
    write(d, "a.txt", b"two\n");
    ok(
        d,
        &["save", "-m", "second", "--session", "s1", "--step", "1"],
    );
    write(d, "b.txt", b"b\n");
    ok(
        d,
        &["save", "-m", "third", "--session", "s1", "--step", "2"],
    );
    let Some(ui) = Screen::start(d, 100, 30) else {
        return;
    };
    ui.wait_for("HEAD #3");
    let screen = ui.press(&["G"], "#1 changed 1 file");
    assert!(screen.contains("session s1"), "{screen}");
    let screen = ui.press(&["Enter"], "Restore the working tree to #1?");
    assert!(
        screen.contains("M a.txt") && screen.contains("D b.txt"),
        "{screen}"
    );
    assert_eq!(read(d, "a.txt"), "two\n", "the preview changed nothing");
    ui.press(&["y"], "restored: now at #4");
    assert_eq!(read(d, "a.txt"), "one\n");
    assert!(!d.join("b.txt").exists());
    let head = first_log_line(d);
    assert!(
        head.starts_with("HEAD") && head.contains("#4") && head.contains("restore"),
        "{head}"
    );

    ui.press(&["u"], "undo: now at #3");
    assert_eq!(read(d, "a.txt"), "two\n");
    assert_eq!(read(d, "b.txt"), "b\n");
    assert!(
        first_log_line(d).starts_with("redo"),
        "the restore is on the redo stack"
    );
    ui.keys(&["q"]);
}

#[test]
fn revert_one_snapshot_of_three_from_the_ui_and_the_later_two_stay() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "README.md", b"# project\n");
    ok(d, &["save", "-m", "base"]);
    write(d, "x.txt", b"x\n");
    ok(d, &["save", "-m", "adds x"]);
    write(d, "y.txt", b"y\n");
    ok(d, &["save", "-m", "adds y"]);
    write(d, "README.md", b"# project\nmore\n");
    ok(d, &["save", "-m", "edits readme"]);
    let before = everything(d);
    let Some(ui) = Screen::start(d, 100, 30) else {
        return;
    };
    ui.wait_for("HEAD #4");
    // The saves made outside a session are one group: rows 0-1 are its headers.
    ui.press(&["k", "k", "j", "j", "j", "j"], "#2 changed 1 file");
    let screen = ui.press(&["x"], "Take back what #2 changed");
    assert!(screen.contains("D x.txt"), "{screen}");
    ui.press(&["y"], "reverted #2: now at #5");
    assert!(!d.join("x.txt").exists());
    assert_eq!(read(d, "y.txt"), "y\n");
    assert_eq!(read(d, "README.md"), "# project\nmore\n");
    assert_conserved(d, &before, "a revert from snap ui");
    assert!(
        first_log_line(d).contains("revert #2"),
        "{}",
        first_log_line(d)
    );
    ui.keys(&["q"]);
}

#[test]
fn the_ui_holds_no_lock_and_shows_a_save_made_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\n");
    ok(d, &["save", "-m", "first"]);
    let Some(ui) = Screen::start(d, 80, 24) else {
        return;
    };
    ui.wait_for("HEAD #1");
    write(d, "a.txt", b"two\n");
    let out = snap_cmd(d, &["save", "-m", "meanwhile"])
        .env("SNAP_LOCK_TIMEOUT", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    ui.wait_for("HEAD #2");
    ui.keys(&["?"]);
    ui.wait_for("keys (any key closes)");
    ui.keys(&["q", "q"]);
}

#[test]
fn without_a_terminal_snap_ui_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let out = snap(d, &["ui"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("error: snap ui needs a terminal"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = snap(d, &["ui", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("snap log --json"));
}
