//! Where things are in a workspace: the names snap never tracks (its store, other VCS
//! directories), the ignore file of its own, and workspace-relative paths made absolute.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Names never tracked at any depth: other tools' stores.
pub const VCS_DIRS: [&str; 4] = [".git", ".hg", ".svn", ".jj"];

/// The store's directory name in a workspace root.
pub const STORE_DIR: &str = ".snap";

/// The name of snap's own ignore files.
pub const SNAPIGNORE: &str = ".snapignore";

/// The absolute path of a workspace-relative path.
pub fn abs(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}
