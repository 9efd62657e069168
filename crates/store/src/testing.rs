//! Hooks for snap's own test suites, gathered in one place: failpoints that make the process
//! die (or receive SIGTERM) at a named step, injected I/O faults, and the durability journal
//! the power-cut tests replay. Debug builds read their environment variables
//! (`SNAP_FAILPOINT`, `SNAP_FAULT`, `SNAP_DURABLE_LOG`); release builds compile them away.

pub use crate::failpoint::{FAILPOINTS, failpoint};

#[path = "fault.rs"]
pub mod fault;
#[path = "journal.rs"]
pub mod journal;
