//! A watcher's files in the socket directory, one set per workspace: `<h>.sock` (where it
//! listens), `<h>.lock` (held for its life, so one watcher runs per workspace) and `<h>.log`
//! (the stderr of a watcher started in the background). A watcher removes its own set when
//! it exits cleanly, still holding the lock; one starting sweeps the sets of watchers gone
//! without doing so (killed, or failed at start): a set whose lock it can take and none of
//! whose files changed in the last [`SETTLING`] (a watcher being started now) is no one's.
//!
//! The lock is only ever taken on the file its path names: a watcher that locks a file a
//! sweep unlinked meanwhile opens the path again, so two watchers never hold two locks.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use rustix::fs::FlockOperation;

/// How long a new watcher waits for the lock of one that is exiting.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// A set younger than this may belong to a watcher being started: never swept.
const SETTLING: Duration = Duration::from_secs(60);

/// The socket directory's files of one workspace's watcher.
#[derive(Debug)]
pub(super) struct Files {
    sock: PathBuf,
    lock: PathBuf,
    log: PathBuf,
}

impl Files {
    /// The set of the watcher listening (or to listen) on `socket`.
    pub(super) fn of(socket: &Path) -> Files {
        Files {
            sock: socket.to_path_buf(),
            lock: socket.with_extension("lock"),
            log: socket.with_extension("log"),
        }
    }

    /// Removes the set: its holder's last act, or a sweep's, under its lock.
    pub(super) fn remove(&self) {
        for path in [&self.sock, &self.log, &self.lock] {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Removes the set if no watcher holds its lock (or it has none).
    pub(super) fn remove_unless_held(&self) {
        let file = match open_lock(&self.lock, false) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return,
        };
        if let Some(file) = &file {
            let free = rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive).is_ok();
            if !free || !still_at(file, &self.lock) {
                return;
            }
        }
        self.remove();
    }

    /// True when a file of the set changed within [`SETTLING`].
    fn settling(&self) -> bool {
        let now = SystemTime::now();
        [&self.sock, &self.lock, &self.log].iter().any(|path| {
            let changed = std::fs::symlink_metadata(path).and_then(|m| m.modified());
            changed.is_ok_and(|at| now.duration_since(at).ok().is_none_or(|age| age < SETTLING))
        })
    }
}

/// Takes the lock that makes one watcher per workspace, waiting [`LOCK_PATIENCE`] for one
/// that is exiting; held for the watcher's life.
pub(super) fn take_lock(socket: &Path, root: &Path) -> Result<File> {
    let path = socket.with_extension("lock");
    let asked = Instant::now();
    loop {
        let file =
            open_lock(&path, true).with_context(|| format!("cannot open {}", path.display()))?;
        // A watcher killed a moment ago may still hold it while the kernel tears it down.
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) if still_at(&file, &path) => return Ok(file),
            // Swept while we waited: lock the file its path names now.
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) if asked.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                bail!("a watcher already runs for {}", root.display())
            }
            Err(e) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

/// Sweeps the sets in `dir` that no live watcher holds, but that of `own` (a socket path).
pub(super) fn sweep(dir: &Path, own: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut sockets: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "sock" || x == "lock" || x == "log")
        })
        .map(|p| p.with_extension("sock"))
        .filter(|p| p != own)
        .collect();
    sockets.sort();
    sockets.dedup();
    for socket in sockets {
        let files = Files::of(&socket);
        if !files.settling() {
            files.remove_unless_held();
        }
    }
}

/// Marks a set as settling through its `log`, just opened for a watcher being started: a
/// sweep leaves the set alone until the watcher holds its lock.
pub(super) fn settle(log: &File) {
    let _ = log.set_modified(SystemTime::now());
}

fn open_lock(path: &Path, create: bool) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// True when `path` still names the file `file` has open.
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn aged(path: &Path) {
        let file = File::options()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        file.set_modified(SystemTime::now() - 2 * SETTLING).unwrap();
    }

    #[test]
    fn a_sweep_takes_only_stale_sets_and_a_lock_is_taken_on_the_file_its_path_names() {
        let dir = tempfile::tempdir().unwrap();
        let sock = |name: &str| dir.path().join(format!("{name}.sock"));
        let exists = |name: &str, ext: &str| dir.path().join(format!("{name}.{ext}")).exists();
        for ext in ["lock", "log", "sock"] {
            aged(&sock("stale").with_extension(ext));
            aged(&sock("held").with_extension(ext));
            aged(&sock("own").with_extension(ext));
        }
        aged(&sock("orphan").with_extension("log"));
        std::fs::write(sock("young").with_extension("log"), b"starting").unwrap();
        let held = take_lock(&sock("held"), dir.path()).unwrap();
        sweep(dir.path(), &sock("own"));
        for ext in ["lock", "log", "sock"] {
            assert!(!exists("stale", ext), "stale .{ext}");
            assert!(exists("held", ext) && exists("own", ext), ".{ext}");
        }
        assert!(!exists("orphan", "log") && exists("young", "log"));
        // A lock whose file is swept from under its taker is taken again on the new file.
        let path = sock("held").with_extension("lock");
        drop(held);
        let first = open_lock(&path, false).unwrap();
        std::fs::remove_file(&path).unwrap();
        let second = take_lock(&sock("held"), dir.path()).unwrap();
        assert!(still_at(&second, &path) && !still_at(&first, &path));
    }
}
