//! Injected I/O errors: a test makes a named I/O step fail, as a failing disk, a full disk or
//! a read-only mount would, to prove that every command then fails with one clear error and
//! loses nothing.
//!
//! `SNAP_FAULT=step[@N][+][:ERRNO]` makes the N-th time `step` is reached (the first by
//! default) fail with ERRNO (`EIO`, `ENOSPC`, `EROFS` or `EACCES`; `EIO` by default); with
//! `+`, that time and every later one, as a dead sector would. A test in the same process can
//! [`arm`] a fault directly. Only builds with the `testing` feature have it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

/// Every I/O step a fault can be injected at, for tests that drive them all.
pub const FAULT_POINTS: &[&str] = &[
    "scan-read",
    "pack-write",
    "pack-read",
    "catalog-write",
    "restore-write",
    "dir-sync",
];

/// One armed fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The step that fails, one of [`FAULT_POINTS`].
    pub point: String,
    /// Which time the step is reached that fails first (1-based).
    pub nth: u64,
    /// Whether every later time fails too.
    pub sticky: bool,
    /// The error number returned.
    pub errno: i32,
}

impl Fault {
    /// Parses `step[@N][+][:ERRNO]`; `None` when it is malformed.
    pub fn parse(spec: &str) -> Option<Fault> {
        let (rest, errno) = match spec.split_once(':') {
            Some((rest, name)) => (rest, errno_named(name)?),
            None => (spec, rustix::io::Errno::IO.raw_os_error()),
        };
        let (rest, sticky) = match rest.strip_suffix('+') {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let (point, nth) = match rest.split_once('@') {
            Some((p, n)) => (p, n.parse().ok().filter(|&n| n > 0)?),
            None => (rest, 1),
        };
        Some(Fault {
            point: point.to_string(),
            nth,
            sticky,
            errno,
        })
    }
}

fn errno_named(name: &str) -> Option<i32> {
    use rustix::io::Errno;
    let e = match name {
        "EIO" => Errno::IO,
        "ENOSPC" => Errno::NOSPC,
        "EROFS" => Errno::ROFS,
        "EACCES" => Errno::ACCESS,
        _ => return None,
    };
    Some(e.raw_os_error())
}

/// The armed fault and how often its step has been reached.
static ARMED: Mutex<Option<(Fault, u64)>> = Mutex::new(None);
/// Fast path: false while nothing is armed, so an unarmed step costs one load.
static ANY: AtomicBool = AtomicBool::new(false);
static FROM_ENV: Once = Once::new();
/// How many faults have fired in this process.
static FIRED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many injected faults have fired in this process so far.
pub fn fired() -> u64 {
    FIRED.load(Ordering::Relaxed)
}

/// Arms `fault` (or disarms with `None`), replacing any earlier one and its count.
pub fn arm(fault: Option<Fault>) {
    FROM_ENV.call_once(|| {});
    let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
    ANY.store(fault.is_some(), Ordering::SeqCst);
    *armed = fault.map(|f| (f, 0));
}

/// Fails here if a fault is armed for `point` (`testing` builds only).
#[inline]
pub fn inject(point: &str) -> std::io::Result<()> {
    if cfg!(feature = "testing") {
        check(point)
    } else {
        Ok(())
    }
}

fn check(point: &str) -> std::io::Result<()> {
    FROM_ENV.call_once(|| {
        if let Ok(spec) = std::env::var("SNAP_FAULT") {
            let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
            *armed = Fault::parse(&spec).map(|f| (f, 0));
            ANY.store(armed.is_some(), Ordering::SeqCst);
        }
    });
    if !ANY.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
    let Some((fault, hits)) = armed.as_mut().filter(|(f, _)| f.point == point) else {
        return Ok(());
    };
    *hits += 1;
    if *hits == fault.nth || (fault.sticky && *hits > fault.nth) {
        FIRED.fetch_add(1, Ordering::Relaxed);
        return Err(std::io::Error::from_raw_os_error(fault.errno));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let f = Fault::parse("pack-read@3+:ENOSPC").unwrap();
        assert_eq!((f.point.as_str(), f.nth, f.sticky), ("pack-read", 3, true));
        assert_eq!(f.errno, rustix::io::Errno::NOSPC.raw_os_error());
        assert_eq!(Fault::parse("scan-read").unwrap().nth, 1);
        assert!(Fault::parse("scan-read@0").is_none());
        assert!(Fault::parse("scan-read:EWHAT").is_none());
    }

    #[test]
    fn an_armed_step_fails_at_its_count() {
        arm(Fault::parse("unit-test-step@2"));
        assert!(inject("unit-test-step").is_ok());
        assert!(inject("other-step").is_ok());
        assert_eq!(
            inject("unit-test-step").unwrap_err().raw_os_error(),
            Some(rustix::io::Errno::IO.raw_os_error())
        );
        assert!(inject("unit-test-step").is_ok(), "not sticky");
        arm(None);
    }
}
