//! Workspace-relative paths (the bytes the watcher's answers carry) on disk.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The workspace-relative `rel` on disk.
pub(crate) fn snap_abs(root: &Path, rel: &[u8]) -> PathBuf {
    match rel.is_empty() {
        true => root.to_path_buf(),
        false => root.join(OsStr::from_bytes(rel)),
    }
}
