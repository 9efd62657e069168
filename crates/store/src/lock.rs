//! The store lock: an exclusive `flock` on `.snap/lock`, held by every command for its whole run.
//!
//! redb itself allows one process per database file, so readers take the lock too; commands are
//! short, and a waiter retries until a timeout, then names the holder (its pid, written into the
//! lock file after taking it).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::StoreError;

/// How long a command waits for another to finish, unless `SNAP_LOCK_TIMEOUT` (seconds) says.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// A held store lock; released on drop (the kernel releases it if the process dies).
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
    read_only: bool,
}

impl StoreLock {
    /// Takes the lock at `path` (never through a symlink), waiting up to `timeout`. On a store this process cannot write
    /// (a read-only mount, no write permission) it takes a shared lock instead, which keeps
    /// writers out while it reads; [`StoreLock::is_read_only`] says which.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<StoreLock, StoreError> {
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(crate::fsio::O_NOFOLLOW)
            .open(path);
        let (mut file, read_only) = match opened {
            Ok(file) => (file, false),
            Err(e) if cannot_write(&e) => {
                let file = OpenOptions::new()
                    .read(true)
                    .custom_flags(crate::fsio::O_NOFOLLOW)
                    .open(path);
                (file.map_err(|_| StoreError::io(path, e))?, true)
            }
            Err(e) => return Err(crate::fsio::no_follow_error(path, e)),
        };
        let op = if read_only {
            FlockOperation::NonBlockingLockShared
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        wait_for(&mut file, op, path, timeout)?;
        if !read_only {
            let me = format!("pid {}\n", std::process::id());
            // Best effort: the holder's pid is only shown to a waiting command.
            let _ = file.set_len(0).and_then(|()| file.write_all(me.as_bytes()));
        }
        Ok(StoreLock {
            _file: file,
            read_only,
        })
    }

    /// Whether the store could only be opened for reading.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
}

fn cannot_write(e: &std::io::Error) -> bool {
    let errno = e.raw_os_error();
    errno == Some(rustix::io::Errno::ROFS.raw_os_error())
        || errno == Some(rustix::io::Errno::ACCESS.raw_os_error())
}

/// How long a command waits before it says that it is waiting.
const WAIT_NOTICE_AFTER: Duration = Duration::from_millis(300);

static WAIT_HOOK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Sets what hears, once per wait, that a command is waiting for the lock and who holds it
/// (the CLI prints it). Only the first call counts.
pub fn on_lock_wait(hook: fn(&str)) {
    let _ = WAIT_HOOK.set(hook);
}

/// The longest wait [`lock_timeout`] may give, in milliseconds (`u64::MAX`: no cap).
static WAIT_CAP_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Caps the lock wait of this process at `max`, whatever `SNAP_LOCK_TIMEOUT` says: an agent
/// hook must not hold up the agent (Codex runs matching hooks at once), and the next hook's
/// save captures whatever this one could not.
pub fn cap_lock_wait(max: Duration) {
    let ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    WAIT_CAP_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// Retries `op` until it succeeds or `timeout` passes, then names the holder. A wait longer
/// than [`WAIT_NOTICE_AFTER`] is reported once to the [`on_lock_wait`] hook.
fn wait_for(
    file: &mut File,
    op: FlockOperation,
    path: &Path,
    timeout: Duration,
) -> Result<(), StoreError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    let mut told = false;
    loop {
        match flock(&*file, op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < timeout => {
                if !told && start.elapsed() >= WAIT_NOTICE_AFTER {
                    told = true;
                    if let Some(hook) = WAIT_HOOK.get() {
                        hook(&format!(
                            "waiting for the store lock, held by {} (up to {}s)",
                            read_holder(file),
                            timeout.as_secs()
                        ));
                    }
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(StoreError::Locked {
                    holder: read_holder(file),
                    waited_secs: start.elapsed().as_secs(),
                });
            }
            Err(e) => return Err(StoreError::io(path, e.into())),
        }
    }
}

fn read_holder(file: &mut File) -> String {
    let mut s = String::new();
    let _ = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut s));
    match s.trim() {
        "" => "another process".to_string(),
        holder => holder.to_string(),
    }
}

/// The lock timeout: `SNAP_LOCK_TIMEOUT` seconds, or [`DEFAULT_LOCK_TIMEOUT`], at most the
/// [`cap_lock_wait`] cap. A value that is
/// not a finite, non-negative number of seconds is refused rather than guessed at.
pub fn lock_timeout() -> Result<Duration, StoreError> {
    let cap = Duration::from_millis(WAIT_CAP_MS.load(std::sync::atomic::Ordering::Relaxed));
    Ok(configured_lock_timeout()?.min(cap))
}

fn configured_lock_timeout() -> Result<Duration, StoreError> {
    let Some(value) = std::env::var_os("SNAP_LOCK_TIMEOUT") else {
        return Ok(DEFAULT_LOCK_TIMEOUT);
    };
    let text = value.to_string_lossy();
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| StoreError::BadEnv {
            name: "SNAP_LOCK_TIMEOUT",
            value: text.into_owned(),
            why: "expected a number of seconds, 0 or more".into(),
        })
}
