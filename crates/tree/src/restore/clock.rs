//! The filesystem's clock and stats as the racy rule compares them (docs/FORMAT.md 6.1), for
//! the two judgments a restore bases on a stat: the content id of a file another process may
//! hold open ([`super::guard`]) and the stat cache rows a restore vouches for
//! ([`super::write`]).

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use snap_store::StatKey;

/// How many times a caller waiting for the clock to pass a stat reads it, [`TICK_WAIT`]
/// apart: a coarse clock ticks every 1-10 ms.
pub(super) const CLOCK_WAITS: usize = 8;
pub(super) const TICK_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// The clock of the filesystem `dir` is on: the mtime of an unnamed file made in it now.
/// `None` where unnamed files cannot be made (then nothing is judged by the clock).
pub(super) fn fs_clock(dir: &OwnedFd) -> Option<i64> {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, ".", flags, Mode::RUSR).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    Some(crate::scan::walker::stat_key(&st).mtime_ns)
}

/// The stat of an open regular file; `None` for anything else.
pub(super) fn stat_of(fd: impl AsFd) -> Option<StatKey> {
    let st = rustix::fs::fstat(fd).ok()?;
    let is_file = rustix::fs::FileType::from_raw_mode(st.st_mode).is_file();
    is_file.then(|| crate::scan::walker::stat_key(&st))
}

/// True when `key` was last modified and changed strictly before `clock`: a later change
/// falls in a later tick, and shows in the stat.
pub(super) fn settled(key: &StatKey, clock: i64) -> bool {
    key.mtime_ns < clock && key.ctime_ns < clock
}
