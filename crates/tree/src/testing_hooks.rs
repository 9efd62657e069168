//! The seams the race suite observes a move through. Without the `testing` feature every
//! hook is an empty inline function; with it, [`crate::testing`] installs them.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;

/// Called with a path's absolute name just before a move exchanges, creates or removes it.
#[cfg(feature = "testing")]
pub type ExchangeHook = Box<dyn Fn(&std::path::Path) + Send + Sync>;

#[cfg(feature = "testing")]
pub(crate) static EXCHANGE_HOOK: std::sync::RwLock<Option<ExchangeHook>> =
    std::sync::RwLock::new(None);

/// Called just before a step puts a file at (or takes one away from) `name` in `dir`.
#[inline]
pub(crate) fn before_exchange(dir: &OwnedFd, name: &OsStr) {
    #[cfg(feature = "testing")]
    {
        let hook = EXCHANGE_HOOK.read().unwrap_or_else(|p| p.into_inner());
        if let Some(hook) = hook.as_ref() {
            use std::os::fd::AsRawFd;
            let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
            if let Ok(path) = std::fs::read_link(link) {
                hook(&path.join(name));
            }
        }
    }
    #[cfg(not(feature = "testing"))]
    let _ = (dir, name);
}
