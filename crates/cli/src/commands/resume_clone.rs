//! A clone killed after its download, during or right after its checkout: the store it
//! filled, whole (HEAD set), waits beside DIR in `.DIR.snap-clone-<pid>` of a process that is
//! gone, and DIR holds some or all of HEAD's files and no store. A clone run again into DIR
//! finishes that one instead of refusing a directory that is not empty. When what is there is
//! HEAD's own bytes (what the killed checkout wrote), it goes, HEAD is checked out again and
//! the store moves in: the clone ends as one never killed, its history too. Otherwise the
//! store moves in and HEAD is restored over what is there (a restore, guarded and undoable). It does so only when every path in DIR is one HEAD holds:
//! anything else there is someone's, and the clone refuses as before. A clone killed after
//! its store moved in, before its first save, left DIR whole, with the store's [`CLONING`]
//! mark still there: one run again into DIR whose store names this URL as `origin` makes that
//! save and says the clone is finished. A finished clone has no mark: DIR is refused.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The name `snap clone` gives the remote it cloned from.
pub(super) const CLONED_FROM: &str = "origin";

use anyhow::{Context, Result};
use snap_tree::{ReadOnlyWorkspace, Run, STORE_DIR, Workspace};

/// The file in a clone's store from its start to its first save: the clone is unfinished.
pub(super) const CLONING: &str = "cloning";

/// Finishes the clone a killed one left for `dest` (see the module's documentation);
/// `None` when there is none to finish.
pub(super) fn finish_killed_clone(
    dest: &Path,
    parent: &Path,
    prefix: &str,
    url: &str,
) -> Result<Option<Workspace>> {
    if dest.join(STORE_DIR).exists() {
        return Ok(cloned_from(dest, url));
    }
    let Some(staged) = staged_clone(parent, prefix, url) else {
        return Ok(None);
    };
    if !only_heads_paths(&staged, dest)? {
        return Ok(None);
    }
    std::fs::create_dir_all(dest).with_context(|| dest.display().to_string())?;
    // What the killed checkout wrote is HEAD's, byte for byte: written again from the start,
    // the clone ends as one never killed (its history, too). Anything else is restored over.
    let copy = Workspace::discover(&staged, None)?;
    let again = checkout_is_heads(&copy, dest)?;
    if again {
        empty(dest)?;
        copy.export("@", &[], dest)?;
    }
    drop(copy);
    let into = dest.join(STORE_DIR);
    std::fs::rename(staged.join(STORE_DIR), &into).with_context(|| into.display().to_string())?;
    let _ = std::fs::remove_dir(&staged);
    let ws = Workspace::discover(dest, None)?;
    if !again {
        ws.restore("@", &[], Run::Apply)?;
    }
    Ok(Some(ws))
}

/// True when every file and link under `dest` holds what HEAD of `ws` holds at its path.
fn checkout_is_heads(ws: &ReadOnlyWorkspace, dest: &Path) -> Result<bool> {
    let Some(head) = ws.head()? else {
        return Ok(false);
    };
    for (path, node) in ws.files(&head)? {
        let on_disk = dest.join(std::ffi::OsStr::from_bytes(&path));
        let bytes = match node.kind {
            snap_tree::EntryKind::Dir => continue,
            snap_tree::EntryKind::Symlink => {
                std::fs::read_link(&on_disk).map(|t| t.into_os_string().into_vec())
            }
            _ => std::fs::read(&on_disk),
        };
        match bytes {
            Ok(bytes) if bytes.len() as u64 != node.size => return Ok(false),
            Ok(bytes) => match ws.read_file(&head, &path) {
                Ok(held) if held == bytes => {}
                _ => return Ok(false),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Ok(false),
        }
    }
    Ok(true)
}

/// Removes everything in `dir`: only HEAD's own bytes, as [`checkout_is_heads`] found.
fn empty(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let path = entry.with_context(|| dir.display().to_string())?.path();
        let gone = match std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        gone.with_context(|| path.display().to_string())?;
    }
    Ok(())
}

/// The workspace at `dest` when its store is a clone of `url` (`origin`) with a HEAD and its
/// files match HEAD: a clone killed before its first save.
fn cloned_from(dest: &Path, url: &str) -> Option<Workspace> {
    if !dest.join(STORE_DIR).join(CLONING).exists() || !is_clone_of(dest, url) {
        return None;
    }
    let ws = Workspace::discover(dest, None).ok()?;
    let status = ws.status().ok()?;
    let clean = status.changes.is_empty() && status.dirs.is_empty();
    clean.then_some(ws)
}

/// The staging directory of a dead clone of `url` whose store has a HEAD: its download
/// finished.
fn staged_clone(parent: &Path, prefix: &str, url: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(parent).ok()?;
    entries.flatten().map(|e| e.path()).find(|path| {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let gone = (name.as_deref())
            .and_then(|n| snap_tree::owner_in(n, prefix))
            .is_some_and(snap_tree::owner_gone);
        gone && path.join(STORE_DIR).is_dir() && is_clone_of(path, url)
    })
}

/// True when the store at `root` names `url` as `origin` and has a HEAD.
fn is_clone_of(root: &Path, url: &str) -> bool {
    let Ok(ws) = Workspace::discover(root, None) else {
        return false;
    };
    let origin = ws.config().remote_url(Some(CLONED_FROM));
    origin.is_some_and(|(_, u)| u == url) && ws.head().is_ok_and(|h| h.is_some())
}

/// True when every path under `dest` (absent counts as empty) is a path HEAD of the store
/// staged in `staged` holds.
fn only_heads_paths(staged: &Path, dest: &Path) -> Result<bool> {
    let ws = Workspace::discover(staged, None)?;
    let Some(head) = ws.head()? else {
        return Ok(false);
    };
    let files = ws.files(&head)?;
    let mut pending = vec![dest.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dest).unwrap_or(&path);
            if !files.contains_key(rel.as_os_str().as_bytes()) {
                return Ok(false);
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            }
        }
    }
    Ok(true)
}
