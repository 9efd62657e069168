//! The store lock: an exclusive `flock` on `.snap/lock`, held by every command for its whole run.
//!
//! redb itself allows one process per database file, so readers take the lock too; commands are
//! short, and a waiter retries until a timeout, then names the holder (its pid, written into the
//! lock file after taking it).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
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
}

impl StoreLock {
    /// Takes the lock at `path`, waiting up to `timeout`.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<StoreLock, StoreError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io(path, e))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    return Err(StoreError::Locked {
                        holder: read_holder(&mut file),
                        waited_secs: start.elapsed().as_secs(),
                    });
                }
                Err(e) => return Err(StoreError::io(path, e.into())),
            }
        }
        let me = format!("pid {}\n", std::process::id());
        // Best effort: the holder's pid is only shown to a waiting command.
        let _ = file.set_len(0).and_then(|()| file.write_all(me.as_bytes()));
        Ok(StoreLock { _file: file })
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

/// The lock timeout: `SNAP_LOCK_TIMEOUT` seconds, or [`DEFAULT_LOCK_TIMEOUT`].
pub fn lock_timeout() -> Duration {
    std::env::var("SNAP_LOCK_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(DEFAULT_LOCK_TIMEOUT, Duration::from_secs_f64)
}
