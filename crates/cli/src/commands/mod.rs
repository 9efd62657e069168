//! One file per command (as jj lays out its CLI): its `...Args` type, its `run`, its body and
//! its JSON document; the store-lifecycle commands share `lifecycle.rs`, the remote ones
//! `remote*.rs`. Shared here: the path arguments' resolution.

pub(crate) mod blame;
pub(crate) mod cat;
pub(crate) mod completions;
pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod export;
pub(crate) mod expunge;
pub(crate) mod expunge_remote;
pub(crate) mod init;
pub(crate) mod lifecycle;
pub(crate) mod log;
pub(crate) mod ls;
pub(crate) mod moves;
pub(crate) mod recover;
#[cfg(feature = "remote")]
pub(crate) mod remote;
#[cfg(feature = "remote")]
pub(crate) mod remote_config;
#[cfg(feature = "remote")]
pub(crate) mod remote_crypt;
#[cfg(feature = "remote")]
pub(crate) mod remote_keys;
pub(crate) mod restore;
#[cfg(feature = "remote")]
pub(crate) mod resume_clone;
pub(crate) mod revert;
pub(crate) mod save;
pub(crate) mod show;
pub(crate) mod status;
pub(crate) mod ui;

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use snap_tree::{ReadOnlyWorkspace, TreeError};

/// Turns paths given relative to the start directory into workspace-relative path bytes.
pub(crate) fn workspace_paths(
    ws: &ReadOnlyWorkspace,
    start: &Path,
    paths: &[PathBuf],
) -> Result<Vec<Vec<u8>>> {
    let base = start
        .canonicalize()
        .with_context(|| start.display().to_string())?;
    paths
        .iter()
        .map(|p| workspace_path(ws.root(), &base, p))
        .collect()
}

pub(crate) fn workspace_path(root: &Path, base: &Path, path: &Path) -> Result<Vec<u8>> {
    let mut out = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    match out.strip_prefix(root) {
        Ok(rel) => Ok(rel.as_os_str().as_bytes().to_vec()),
        Err(_) => Err(TreeError::OutsideWorkspace {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
        }
        .into()),
    }
}
