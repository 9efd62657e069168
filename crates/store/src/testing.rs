//! Hooks for snap's own test suites, gathered in one place: failpoints that make the process
//! die (or receive SIGTERM) at a named step, injected I/O faults, and the durability journal
//! the power-cut tests replay, and a limit the crash suites lower to drive the large-restore
//! path with small trees. Debug builds read their environment variables (`SNAP_FAILPOINT`,
//! `SNAP_FAULT`, `SNAP_DURABLE_LOG`, `SNAP_TEST_EACH_PATH_MAX`); release builds compile them
//! away.

pub use crate::failpoint::{FAILPOINTS, failpoint};

#[path = "fault.rs"]
pub mod fault;
#[path = "journal.rs"]
pub mod journal;

/// `SNAP_TEST_EACH_PATH_MAX=n` (debug builds only): a restore of more than `n` paths is made
/// durable by one `syncfs` instead of path by path, so that the crash suites drive both ways
/// with the same small trees.
pub fn each_path_max() -> Option<usize> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var("SNAP_TEST_EACH_PATH_MAX").ok()?.parse().ok()
}
