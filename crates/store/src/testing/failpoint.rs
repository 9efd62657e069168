//! Failpoints: named steps of the write protocols where a test can make the process die, as
//! a kill -9 or power cut would, to prove that every step leaves a recoverable state.
//!
//! `SNAP_FAILPOINT=name` (or `name@N`, the N-th time the step is reached) aborts the process
//! at that step; `name@N:term` sends the process SIGTERM there instead, as a harness's timeout
//! would, and carries on. Only builds with the `testing` feature have it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Every failpoint, for tests that drive them all.
pub const FAILPOINTS: &[&str] = &[
    "pack-written",
    "pack-synced",
    "pack-renamed",
    "before-commit",
    "after-commit",
    "marker-written",
    "restore-file",
    "restore-chunk",
    "before-head-commit",
    "after-head-commit",
    "gc-after-commit",
    "merge-after-commit",
    "repair-built",
    "repair-linked",
    "expunge-after-rewrite",
    "purge-after-commit",
];

static HITS: AtomicU64 = AtomicU64::new(0);

/// Dies here if `SNAP_FAILPOINT` names this step (`testing` builds only).
#[inline]
pub fn failpoint(name: &str) {
    if cfg!(feature = "testing") {
        check(name);
    }
}

fn check(name: &str) {
    let Ok(spec) = std::env::var("SNAP_FAILPOINT") else {
        return;
    };
    let (spec, action) = spec.split_once(':').unwrap_or((&spec, "abort"));
    let (want, nth) = match spec.split_once('@') {
        Some((w, n)) => (w, n.parse::<u64>().unwrap_or(1)),
        None => (spec, 1),
    };
    if want != name || HITS.fetch_add(1, Ordering::Relaxed) + 1 != nth {
        return;
    }
    if action == "term" {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM);
        return;
    }
    eprintln!("snap: failpoint {name} reached, aborting");
    std::process::abort();
}
