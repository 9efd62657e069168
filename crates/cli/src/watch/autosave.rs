//! `snap watch --autosave`: a save of its own once the tree has been quiet for a while, so
//! that writers without hooks (an agent without them, a person's editor) get snapshots as
//! they work. The save is `snap-undo save` in a child process: it takes the store's lock like
//! any writer (the watcher itself never opens the store), and asks this watcher what changed
//! like any save, so the loop keeps serving while it runs. No save starts mid-burst (the
//! quiet period restarts at every change) nor while a move's marker is in the store.
//!
//! Each autosave carries meta `autosave=1` (`snap log` folds it into the line of the save
//! above it in the same turn), and the session and step it was given (`snap exec`'s run).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The markers of a move in progress (FORMAT.md 4.8): no autosave while one exists.
const MARKERS: [&str; 3] = [".undoing", ".redoing", ".restoring"];

/// What autosaves are tagged with: a session, and a turn of it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tag {
    pub(crate) session: Option<String>,
    pub(crate) step: Option<u64>,
}

/// What autosaving keeps between ticks.
#[derive(Debug)]
pub(crate) struct Autosave {
    quiet: Duration,
    tag: Tag,
    store: Option<PathBuf>,
    /// The change log's sequence number when the last autosave started.
    saved_seq: u64,
    /// The sequence number last seen, and when it last moved.
    seen_seq: u64,
    last_change: Instant,
    child: Option<Child>,
    /// Autosaves started.
    pub(crate) saves: u64,
}

impl Autosave {
    pub(crate) fn new(quiet: Duration, tag: Tag, store: Option<PathBuf>) -> Autosave {
        Autosave {
            quiet,
            tag,
            store,
            saved_seq: 0,
            seen_seq: 0,
            last_change: Instant::now(),
            child: None,
            saves: 0,
        }
    }

    /// Starts a save when the tree changed since the last one and has been quiet for the
    /// quiet period; returns how long until it should be asked again.
    pub(crate) fn tick(&mut self, root: &Path, store_dir: &Path, seq: u64) -> Duration {
        if seq != self.seen_seq {
            self.seen_seq = seq;
            self.last_change = Instant::now();
        }
        if let Some(child) = &mut self.child {
            match child.try_wait() {
                Ok(None) => return Duration::from_millis(100),
                Ok(Some(_)) | Err(_) => self.child = None,
            }
        }
        if seq <= self.saved_seq {
            return Duration::from_secs(3600);
        }
        let quiet_left = self.quiet.saturating_sub(self.last_change.elapsed());
        if !quiet_left.is_zero() {
            return quiet_left;
        }
        if MARKERS.iter().any(|m| store_dir.join(m).exists()) {
            return self.quiet;
        }
        match self.spawn(root) {
            Ok(child) => {
                self.child = Some(child);
                self.saved_seq = seq;
                self.saves += 1;
            }
            Err(e) => eprintln!("snap: autosave could not start: {e}"),
        }
        Duration::from_millis(100)
    }

    fn spawn(&self, root: &Path) -> std::io::Result<Child> {
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.arg("--dir").arg(root);
        if let Some(store) = &self.store {
            cmd.arg("--store").arg(store);
        }
        cmd.args(["save", "-q", "-m", "autosave", "--meta", "source=watch"]);
        cmd.arg("--meta")
            .arg(format!("{}=1", snap_tree::AUTOSAVE_KEY));
        if let Some(session) = &self.tag.session {
            cmd.arg("--session").arg(session);
        }
        if let Some(step) = self.tag.step {
            cmd.arg(format!("--step={step}"));
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).spawn()
    }

    /// Waits for a save still running, so that stopping the watcher never cuts one short.
    pub(crate) fn finish(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }
}
