//! Stopping a move between two files. A program that turns SIGTERM, SIGHUP or SIGINT into a
//! flag hands it to [`stop_moves_on`]; every workspace opened afterwards checks it before
//! each path an undo, redo, restore or roll-forward touches, and stops there with
//! [`crate::TreeError::Interrupted`], leaving its marker for the next writing command to
//! roll forward. The flag is process-wide because signals are.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

static PROCESS: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Makes `flag` the stop request of every workspace opened from now on. Only the first call
/// counts; returns false for a later one.
pub fn stop_moves_on(flag: Arc<AtomicBool>) -> bool {
    PROCESS.set(flag).is_ok()
}

/// The process's stop request, if a program set one.
pub(crate) fn process_flag() -> Option<Arc<AtomicBool>> {
    PROCESS.get().cloned()
}
