//! The store lock: an exclusive `flock` on `.snap/lock`, held by every command for its whole run.
//!
//! redb itself allows one process per database file, so readers take the lock too; commands are
//! short, and a waiter retries until a timeout, then names the holder (its pid, written into the
//! lock file after taking it).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
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
            .mode(crate::fs::io::PRIVATE_FILE_MODE)
            .custom_flags(crate::fs::io::O_NOFOLLOW)
            .open(path);
        let (mut file, read_only) = match opened {
            Ok(file) => (file, false),
            Err(e) if cannot_write(&e) => {
                let file = OpenOptions::new()
                    .read(true)
                    .custom_flags(crate::fs::io::O_NOFOLLOW)
                    .open(path);
                (file.map_err(|_| StoreError::io(path, e))?, true)
            }
            Err(e) => return Err(crate::fs::io::no_follow_error(path, e)),
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

/// Takes the lock with `op`, waiting up to `timeout`, then names the holder. A wait longer
/// than [`WAIT_NOTICE_AFTER`] is reported once to the [`on_lock_wait`] hook.
///
/// A waiter blocks in the kernel (`flock` without `LOCK_NB`) rather than polling: the kernel
/// wakes waiters the moment the holder lets go, where a poller sleeping between attempts
/// loses the race to whoever arrives during its sleep, again and again (with 8 agents' hooks
/// saving at once, polling left the slowest save waiting 70 times the median). The blocking
/// call runs on a helper thread so that the wait can end at `timeout`.
fn wait_for(
    file: &mut File,
    op: FlockOperation,
    path: &Path,
    timeout: Duration,
) -> Result<(), StoreError> {
    match flock(&*file, op) {
        Ok(()) => return Ok(()),
        Err(rustix::io::Errno::WOULDBLOCK) if timeout.is_zero() => {
            return Err(StoreError::Locked {
                holder: read_holder(file),
                waited_secs: 0,
            });
        }
        Err(rustix::io::Errno::WOULDBLOCK) => {}
        Err(e) => return Err(StoreError::io(path, e.into())),
    }
    let start = Instant::now();
    let granted = block_in_kernel(file, op, path)?;
    let notice = WAIT_NOTICE_AFTER.min(timeout);
    let answer = match wait_on(&granted, notice) {
        Err(Waited::TimedOut) if timeout > notice => {
            if let Some(hook) = WAIT_HOOK.get() {
                hook(&format!(
                    "waiting for the store lock, held by {} (up to {}s)",
                    read_holder(file),
                    timeout.as_secs()
                ));
            }
            wait_on(&granted, timeout - notice)
        }
        other => other,
    };
    match answer {
        Ok(result) => result.map_err(|e| StoreError::io(path, e.into())),
        Err(Waited::TimedOut) => Err(StoreError::Locked {
            holder: read_holder(file),
            waited_secs: start.elapsed().as_secs(),
        }),
        Err(Waited::Stopped) => Err(StoreError::LockWaitStopped {
            holder: read_holder(file),
        }),
    }
}

/// Why a wait for the lock ended without it.
enum Waited {
    TimedOut,
    /// The process was asked to stop (see [`stop_lock_wait_on`]).
    Stopped,
}

/// How often a waiter looks at the stop request.
const STOP_POLL: Duration = Duration::from_millis(50);

static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

/// Makes every later wait for the lock end, with [`StoreError::LockWaitStopped`], soon after
/// `flag` is set (the CLI sets it on SIGTERM, SIGHUP and SIGINT). Only the first call counts.
pub fn stop_lock_wait_on(flag: Arc<AtomicBool>) {
    let _ = STOP.set(flag);
}

/// Waits up to `limit` for the helper thread's answer, looking at the stop request between
/// slices, so a signal never waits out the whole lock timeout.
fn wait_on<T>(granted: &Receiver<T>, limit: Duration) -> Result<T, Waited> {
    let end = Instant::now() + limit;
    loop {
        if STOP.get().is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            return Err(Waited::Stopped);
        }
        let left = end.saturating_duration_since(Instant::now());
        match granted.recv_timeout(left.min(STOP_POLL)) {
            Ok(answer) => return Ok(answer),
            Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
            Err(_) => return Err(Waited::TimedOut),
        }
    }
}

/// Starts a thread that takes the lock on a duplicate of `file`'s descriptor (a `flock`
/// belongs to the open file, which the duplicate shares) and reports the outcome. A waiter
/// that gave up has dropped the receiver: the thread then lets the lock go at once, so a
/// timed-out wait never leaves the lock held. (Until then the thread stays queued in the
/// kernel, which matters only to a long-lived process whose waits time out: each such wait
/// takes and drops the lock once, when its turn comes.)
fn block_in_kernel(
    file: &File,
    op: FlockOperation,
    path: &Path,
) -> Result<Receiver<Result<(), rustix::io::Errno>>, StoreError> {
    let blocking = match op {
        FlockOperation::NonBlockingLockShared => FlockOperation::LockShared,
        _ => FlockOperation::LockExclusive,
    };
    let twin = file.try_clone().map_err(|e| StoreError::io(path, e))?;
    let (tell, granted) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("snap-lock-wait".into())
        .spawn(move || {
            let result = flock(&twin, blocking);
            if tell.send(result).is_err() && result.is_ok() {
                let _ = flock(&twin, FlockOperation::Unlock);
            }
        })
        .map_err(|e| StoreError::io(path, e))?;
    Ok(granted)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A wait that times out names the holder and leaves nothing held: once the holder lets
    /// go, the lock is free at once (the given-up waiter's thread released what it got).
    #[test]
    fn a_timed_out_wait_leaves_the_lock_free() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = StoreLock::acquire(&path, Duration::ZERO).unwrap();
        let err = StoreLock::acquire(&path, Duration::from_millis(50)).unwrap_err();
        assert!(
            matches!(&err, StoreError::Locked { holder, .. } if holder.contains(&std::process::id().to_string())),
            "{err}"
        );
        drop(held);
        std::thread::sleep(Duration::from_millis(20));
        StoreLock::acquire(&path, Duration::ZERO).unwrap();
    }

    /// A waiter gets the lock when the holder lets go, well before its timeout: it is woken,
    /// not left to poll.
    #[test]
    fn a_waiter_gets_the_lock_when_it_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = StoreLock::acquire(&path, Duration::ZERO).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || StoreLock::acquire(&path, Duration::from_secs(30)))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished());
        drop(held);
        let got = waiter.join().unwrap().unwrap();
        assert!(!got.is_read_only());
        // And it holds it: another try fails.
        assert!(StoreLock::acquire(&path, Duration::ZERO).is_err());
    }
}
