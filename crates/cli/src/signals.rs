//! SIGTERM, SIGHUP and SIGINT during a command that writes. The default action would kill the
//! process wherever it is; that is safe (every write is crash-safe), but says nothing. Here a
//! first signal only sets a flag: an undo, redo, restore or roll-forward stops at the next
//! file boundary with its marker kept, a command still waiting for the store lock stops
//! waiting (having changed nothing), any other command finishes, and snap exits with
//! 128 + the signal number (143 for SIGTERM, what a harness's timeout sends). A second
//! signal ends the process at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The signal received, if any (0: none).
static RECEIVED: std::sync::OnceLock<Arc<AtomicUsize>> = std::sync::OnceLock::new();

/// Turns the three signals into the library's stop request for the rest of the process.
pub(crate) fn watch() -> std::io::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::clone(RECEIVED.get_or_init(Arc::default));
    for signal in [SIGTERM, SIGHUP, SIGINT] {
        // Registered first, so it acts only on a signal arriving after `stop` was set.
        signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(&stop))?;
        signal_hook::flag::register_usize(signal, Arc::clone(&received), signal as usize)?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    snap_tree::stop_lock_wait_on(Arc::clone(&stop));
    snap_tree::stop_moves_on(stop);
    Ok(())
}

/// The exit code for the signal received (128 + its number), if one was.
pub(crate) fn exit_code() -> Option<u8> {
    let signal = RECEIVED.get()?.load(Ordering::Relaxed);
    (signal != 0).then(|| u8::try_from(128 + signal).unwrap_or(u8::MAX))
}
