//! The filesystem layer under the store: durable writes and directory fsyncs, the refusal
//! to follow links among the store's own files, the store lock, workspace-relative path
//! bytes, the spill buffer that moves a commit's rows out of memory, and the staging
//! directories of data in flight (`staging.rs`, swept once their process is gone). It
//! knows nothing of objects or packs; every layer above may use it.

pub(crate) mod io;
pub(crate) mod lock;
pub(crate) mod relpath;
pub(crate) mod spill;
pub mod staging;

use std::sync::{Mutex, MutexGuard};

pub(crate) use io::remove_if_present;
pub use io::{
    O_NOFOLLOW, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, create_private_dir_all, sync_dir, write_atomic,
};
pub use relpath::{join, split};

/// Locks `m`, taking the value over from a thread that panicked while it held it: the maps
/// kept behind these mutexes are left consistent by every insert (each is one operation).
pub(crate) fn lock_poisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
