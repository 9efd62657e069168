//! The directories commands stage data in flight in, under the store's `tmp/`: a push's
//! packs (`push-<pid>`), a pull's or a clone's downloads (`pull-<pid>`, `clone-<pid>`). Each
//! is named by its operation and the process that made it, and swept under the store lock
//! once that process is gone: a kill leaves one behind, and what it holds is raw history (an
//! expunged secret's bytes among them). A directory of a live process, this one's included,
//! and any other name, are left alone.

use std::path::{Path, PathBuf};

use crate::StoreError;

/// What a staging directory is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// Packs a push seals before uploading them.
    Push,
    /// Packs a pull downloads.
    Pull,
    /// Packs a clone downloads into its new store.
    Clone,
}

impl Staging {
    const ALL: [Staging; 3] = [Staging::Push, Staging::Pull, Staging::Clone];

    fn prefix(self) -> &'static str {
        match self {
            Staging::Push => "push-",
            Staging::Pull => "pull-",
            Staging::Clone => "clone-",
        }
    }

    /// This process's directory of this kind under `tmp`.
    pub fn path(self, tmp: &Path) -> PathBuf {
        tmp.join(format!("{}{}", self.prefix(), std::process::id()))
    }
}

/// The process id a name carries after `prefix` (digits only), if it does.
pub fn owner_in(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?;
    match digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

/// True when no process `pid` exists (it cannot be signalled: `ESRCH`). A process of
/// another user (`EPERM`) is alive.
pub fn owner_gone(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Removes the staging directories under `tmp` whose process is gone; returns how many.
pub fn sweep_stale(tmp: &Path) -> Result<usize, StoreError> {
    let entries = match std::fs::read_dir(tmp) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::io(tmp, e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(tmp, e))?;
        let name = entry.file_name();
        let stale = (Staging::ALL.iter())
            .filter_map(|kind| owner_in(&name.to_string_lossy(), kind.prefix()))
            .any(owner_gone);
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if stale && is_dir {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(|e| StoreError::io(&path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::{Staging, owner_gone, owner_in, sweep_stale};

    /// A pid no process has: past the kernel's maximum.
    const DEAD: u32 = 4_194_305;

    #[test]
    fn only_staging_directories_of_gone_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path();
        let mine = Staging::Push.path(tmp);
        let names = [
            format!("push-{DEAD}"),
            format!("pull-{DEAD}"),
            format!("clone-{DEAD}"),
        ];
        for name in &names {
            std::fs::create_dir_all(tmp.join(name).join("sub")).unwrap();
            std::fs::write(tmp.join(name).join("sub/x.pack"), b"secret").unwrap();
        }
        std::fs::create_dir(&mine).unwrap();
        std::fs::create_dir(tmp.join(format!("push-{DEAD}x"))).unwrap();
        std::fs::create_dir(tmp.join("other")).unwrap();
        std::fs::write(tmp.join(format!("pull-{}", DEAD + 1)), b"a file").unwrap();
        assert_eq!(sweep_stale(tmp).unwrap(), 3);
        assert!(names.iter().all(|n| !tmp.join(n).exists()));
        assert!(mine.is_dir(), "a live process's directory stays");
        assert!(tmp.join(format!("push-{DEAD}x")).is_dir() && tmp.join("other").is_dir());
        assert!(tmp.join(format!("pull-{}", DEAD + 1)).is_file());
    }

    #[test]
    fn owners_are_read_and_judged() {
        assert_eq!(owner_in("push-12", "push-"), Some(12));
        assert_eq!(owner_in("push-", "push-"), None);
        assert_eq!(owner_in("push-1a", "push-"), None);
        assert!(!owner_gone(std::process::id()));
        assert!(owner_gone(DEAD));
    }
}
