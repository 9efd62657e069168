//! One file per command (as jj lays out its CLI); `diff` and the store-lifecycle commands
//! too. Shared here: the imports every command uses and the path arguments' resolution.

mod blame;
mod cat;
pub(crate) mod diff;
pub(crate) mod doctor;
mod export;
pub(crate) mod expunge;
pub(crate) mod expunge_remote;
mod init;
pub(crate) mod lifecycle;
mod log;
mod ls;
mod moves;
mod recover;
#[cfg(feature = "remote")]
pub(crate) mod remote;
#[cfg(feature = "remote")]
pub(crate) mod remote_config;
#[cfg(feature = "remote")]
pub(crate) mod remote_crypt;
#[cfg(feature = "remote")]
pub(crate) mod remote_keys;
mod restore;
#[cfg(feature = "remote")]
mod resume_clone;
mod revert;
mod save;
mod show;
mod status;
pub(crate) mod ui;

pub(crate) use blame::cmd_blame;
pub(crate) use cat::cmd_cat;
pub(crate) use doctor::cmd_doctor;
pub(crate) use export::cmd_export;
pub(crate) use init::cmd_init;
pub(crate) use log::cmd_log;
pub(crate) use ls::cmd_ls;
pub(crate) use moves::{Way, cmd_move};
pub(crate) use recover::cmd_recover;
pub(crate) use restore::cmd_restore;
pub(crate) use revert::{RevertAsk, cmd_revert};
pub(crate) use save::cmd_save;
pub(crate) use show::cmd_show;
pub(crate) use status::cmd_status;

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use snap_tree::{Change, PathChange, Run, SaveOptions, TreeError, Workspace};

use crate::args::{Category, LogArgs, MoveArgs, SaveArgs};
use crate::render::{
    kind_str, log_line, oneline, path_shown, path_str, print_changes, print_dir_changes,
    print_kept, print_large_added, print_move, print_skipped, print_untracked_removed,
    recovered_line, snapshot_line, text_shown,
};
use crate::{Ctx, emit, emit_done, json, json_only, open, open_reading, progress};

/// Turns paths given relative to the start directory into workspace-relative path bytes.
pub(crate) fn workspace_paths(
    ws: &Workspace,
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
