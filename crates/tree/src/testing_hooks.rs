//! The seams the race suite observes a move through. Without the `testing` feature every
//! hook is an empty inline function; with it, [`crate::testing`] installs them.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;

/// Called with a path's absolute name just before and just after a move exchanges, creates
/// or removes it: the exchange happened at some instant between the two calls.
#[cfg(feature = "testing")]
pub type ExchangeHook = Box<dyn Fn(&std::path::Path, Edge) + Send + Sync>;

/// Which side of an exchange a hook call is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The path is about to be exchanged, created or removed.
    Before,
    /// The call that exchanged, created or removed it has returned (done or refused).
    After,
}

#[cfg(feature = "testing")]
pub(crate) static EXCHANGE_HOOK: std::sync::RwLock<Option<ExchangeHook>> =
    std::sync::RwLock::new(None);

/// Called just before and just after a step puts a file at (or takes one away from) `name`
/// in `dir`.
#[inline]
pub(crate) fn exchange_edge(dir: &OwnedFd, name: &OsStr, edge: Edge) {
    #[cfg(feature = "testing")]
    {
        let hook = EXCHANGE_HOOK.read().unwrap_or_else(|p| p.into_inner());
        if let Some(hook) = hook.as_ref() {
            use std::os::fd::AsRawFd;
            let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
            if let Ok(path) = std::fs::read_link(link) {
                hook(&path.join(name), edge);
            }
        }
    }
    #[cfg(not(feature = "testing"))]
    let _ = (dir, name, edge);
}
