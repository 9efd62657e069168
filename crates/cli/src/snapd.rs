//! snapd's `snap` on this machine: the program `snap` may name besides this one, which
//! `snap doctor` reports and a mistyped snapd verb points at.

use std::path::PathBuf;

/// The first `snap` on PATH, when it is not this program (snapd's, most likely).
pub(crate) fn snap_on_path() -> Option<PathBuf> {
    let me = std::env::current_exe().ok()?.canonicalize().ok()?;
    let path = std::env::var_os("PATH")?;
    let first = std::env::split_paths(&path)
        .map(|dir| dir.join("snap"))
        .find(|p| p.is_file())?;
    let resolved = first.canonicalize().ok()?;
    (resolved != me && resolved != me.with_file_name("snap")).then_some(first)
}

/// snapd's `snap` on this machine, if there is one: the first `snap` on PATH that is not this
/// program, else `/usr/bin/snap` if it exists (and is not this program).
pub(crate) fn snapd_binary() -> Option<PathBuf> {
    snap_on_path().or_else(|| {
        let usual = PathBuf::from("/usr/bin/snap");
        let me = std::env::current_exe().ok()?.canonicalize().ok()?;
        (usual.is_file() && usual.canonicalize().ok()? != me).then_some(usual)
    })
}
