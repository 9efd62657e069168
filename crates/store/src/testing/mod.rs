//! Hooks for snap's own test suites, gathered in one place: failpoints that make the process
//! die (or receive SIGTERM) at a named step, injected I/O faults, and the durability journal
//! the power-cut tests replay, incompressible test content ([`noise`]), and a limit the crash suites lower to drive the large-restore
//! path with small trees. Only a build with the `testing` feature has them (and reads their
//! environment variables `SNAP_FAILPOINT`, `SNAP_FAULT`, `SNAP_DURABLE_LOG`,
//! `SNAP_TEST_EACH_PATH_MAX`); the feature is turned on by the crates' dev-dependencies and the
//! e2e harness, never by a build of the binary. Without it every hook is an inline no-op
//! ([`off`]) and no failpoint or fault name is compiled in: call sites use the
//! [`failpoint!`](crate::failpoint) and [`fault!`](crate::fault) macros.

#[cfg(feature = "testing")]
mod failpoint;
#[cfg(feature = "testing")]
pub mod fault;
#[cfg(feature = "testing")]
pub mod journal;
#[cfg(feature = "testing")]
pub use crate::pack::search::store_holds;
#[cfg(feature = "testing")]
pub use failpoint::{FAILPOINTS, failpoint};

/// Deterministic bytes zstd cannot shrink, for suites that need content of a size: a
/// xorshift stream from `seed`, eight bytes a step.
#[cfg(feature = "testing")]
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The pack layer's readers, for the fuzz targets that feed them arbitrary bytes.
#[cfg(feature = "testing")]
pub mod pack {
    pub use crate::pack::delta::{DeltaHeader, decode as decode_delta};
    pub use crate::pack::slice::SliceRef;
    pub use crate::pack::{FrameInfo, PackReader};
}

#[cfg(not(feature = "testing"))]
mod off;
#[cfg(not(feature = "testing"))]
pub use off::journal;

/// Dies (or is sent SIGTERM) at the named step when `SNAP_FAILPOINT` says so; nothing, and
/// the name not even compiled in, without the `testing` feature.
#[cfg(feature = "testing")]
#[macro_export]
macro_rules! failpoint {
    ($name:expr) => {
        $crate::testing::failpoint($name)
    };
}

/// As above, without the `testing` feature: nothing.
#[cfg(not(feature = "testing"))]
#[macro_export]
macro_rules! failpoint {
    ($name:expr) => {
        ()
    };
}

/// The injected I/O error for the named step, if `SNAP_FAULT` arms one (an
/// `std::io::Result<()>`); always `Ok(())`, the name not compiled in, without `testing`.
#[cfg(feature = "testing")]
#[macro_export]
macro_rules! fault {
    ($point:expr) => {
        $crate::testing::fault::inject($point)
    };
}

/// As above, without the `testing` feature: always `Ok(())`.
#[cfg(not(feature = "testing"))]
#[macro_export]
macro_rules! fault {
    ($point:expr) => {
        ::std::io::Result::<()>::Ok(())
    };
}

/// `SNAP_TEST_EACH_PATH_MAX=n` (`testing` builds only): a restore of more than `n` paths is made
/// durable by one `syncfs` instead of path by path, so that the crash suites drive both ways
/// with the same small trees.
#[cfg(feature = "testing")]
pub fn each_path_max() -> Option<usize> {
    std::env::var("SNAP_TEST_EACH_PATH_MAX").ok()?.parse().ok()
}

/// Without the `testing` feature: never set.
#[cfg(not(feature = "testing"))]
#[inline(always)]
pub fn each_path_max() -> Option<usize> {
    None
}
