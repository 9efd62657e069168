//! Ignore rules, applied as git applies them, with `ignore`'s gitignore matcher per file:
//! for each entry the deepest `.snapignore` with an opinion decides, else the deepest
//! `.gitignore` with one; an ignored directory is never entered, so nothing below it can be
//! re-included (git's rule). The store, `.git`, `.hg`, `.svn`, `.jj` and the configured
//! default excludes are left out before any rule is consulted. Ignore files are never read
//! through a symlink.

use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::config::Config;
use crate::paths::{SNAPIGNORE, STORE_DIR, VCS_DIRS, abs};

/// The ignore files of one directory and of every directory above it.
pub(crate) struct Rules {
    parent: Option<Arc<Rules>>,
    git: Option<Gitignore>,
    snap: Option<Gitignore>,
    /// True when this level or one above has an ignore file: when false, nothing is matched.
    any: bool,
    /// This level's ignore file that is over the size limit: everything in the directory is
    /// then left out (see `Config::max_ignore_file_bytes`).
    refused: Option<std::path::PathBuf>,
}

impl Rules {
    /// No rules: above the root.
    pub(crate) fn none() -> Rules {
        Rules {
            parent: None,
            git: None,
            snap: None,
            any: false,
            refused: None,
        }
    }

    /// The ignore file of this directory refused for its size, if any.
    pub(crate) fn refused(&self) -> Option<&Path> {
        self.refused.as_deref()
    }

    /// True when `abs` is ignored: `.snapignore` files first, then `.gitignore` files, each
    /// from the deepest directory up, the first with an opinion deciding.
    fn ignores(&self, abs: &Path, is_dir: bool) -> bool {
        let snap: fn(&Rules) -> Option<&Gitignore> = |r| r.snap.as_ref();
        let git: fn(&Rules) -> Option<&Gitignore> = |r| r.git.as_ref();
        self.opinion(snap, abs, is_dir)
            .or_else(|| self.opinion(git, abs, is_dir))
            .unwrap_or(false)
    }

    fn opinion(
        &self,
        pick: fn(&Rules) -> Option<&Gitignore>,
        abs: &Path,
        is_dir: bool,
    ) -> Option<bool> {
        let mut level = Some(self);
        while let Some(rules) = level {
            match pick(rules).map(|g| g.matched(abs, is_dir)) {
                Some(Match::Ignore(_)) => return Some(true),
                Some(Match::Whitelist(_)) => return Some(false),
                _ => level = rules.parent.as_deref(),
            }
        }
        None
    }
}

/// The rules for a directory: its own `.gitignore` and `.snapignore` (where present) over
/// its parent's.
pub(crate) fn read_rules(
    abs: &Path,
    has_git: bool,
    has_snap: bool,
    limit: u64,
    parent: &Arc<Rules>,
) -> Rules {
    let read =
        |present: bool, file: &str| present.then(|| read_rule_file(&abs.join(file), limit))?;
    let (git, snap) = (read(has_git, GITIGNORE), read(has_snap, SNAPIGNORE));
    rules_of_files(abs, (git, snap), limit, parent)
}

/// The rules for the directory at `abs` whose `.gitignore` and `.snapignore` hold `files`
/// (`None` where there is none), over its parent's.
fn rules_of_files(
    abs: &Path,
    files: (Option<Vec<u8>>, Option<Vec<u8>>),
    limit: u64,
    parent: &Arc<Rules>,
) -> Rules {
    let too_large =
        |bytes: &Option<Vec<u8>>| bytes.as_ref().is_some_and(|b| b.len() as u64 > limit);
    let refused = match (too_large(&files.0), too_large(&files.1)) {
        (true, _) => Some(abs.join(GITIGNORE)),
        (_, true) => Some(abs.join(SNAPIGNORE)),
        _ => None,
    };
    if refused.is_some() {
        return Rules {
            parent: Some(Arc::clone(parent)),
            git: None,
            snap: None,
            any: parent.any,
            refused,
        };
    }
    let load = |bytes: Option<Vec<u8>>, file: &str| {
        let bytes = bytes?;
        let path = abs.join(file);
        let mut builder = GitignoreBuilder::new(abs);
        for line in rule_lines(&bytes) {
            // A malformed line is skipped, as git skips it; the file's other lines still apply.
            let _ = builder.add_line(Some(path.clone()), line);
        }
        builder.build().ok()
    };
    let (git, snap) = (load(files.0, GITIGNORE), load(files.1, SNAPIGNORE));
    let any = parent.any || git.is_some() || snap.is_some();
    Rules {
        parent: Some(Arc::clone(parent)),
        git,
        snap,
        any,
        refused: None,
    }
}

pub(crate) const GITIGNORE: &str = ".gitignore";

/// The bytes of an ignore file, never read through a symlink: as git does since 2.32, a
/// symlinked `.gitignore` (or `.snapignore`) is not read at all. The directory cache keys an
/// ignore file on its own lstat, so following a link would let the target change unseen.
/// Opened without blocking and read only when it is a regular file: a FIFO, socket or
/// device of that name is no rules (opening a FIFO would wait for a writer forever). At most
/// `limit + 1` bytes are read: one more than the limit says the file is too large.
fn read_rule_file(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let flags = snap_store::fs::O_NOFOLLOW | rustix::fs::OFlags::NONBLOCK.bits() as i32;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len().min(limit.saturating_add(1));
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The lines of an ignore file as the `ignore` crate reads them from a path: a leading
/// UTF-8 byte-order mark dropped, `\n` or `\r\n` ending each line, reading stopped at the
/// first line that is not UTF-8.
fn rule_lines(bytes: &[u8]) -> impl Iterator<Item = &str> {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines = (!bytes.is_empty()).then(|| bytes.split(|b| *b == b'\n'));
    lines
        .into_iter()
        .flatten()
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .map_while(|line| std::str::from_utf8(line).ok())
}

/// The store (at the root) and the version-control directories (at any depth): left out
/// before any rule is consulted.
pub(crate) fn always_left_out(parent: &[u8], name: &[u8]) -> bool {
    VCS_DIRS.iter().any(|d| d.as_bytes() == name)
        || (parent.is_empty() && name == STORE_DIR.as_bytes())
}

/// True when the config's excludes or the ignore `rules` leave out the entry at `rel`
/// (workspace-relative; `abs` on disk).
pub(crate) fn ruled_out(
    config: &Config,
    rules: &Rules,
    rel: &[u8],
    abs: &Path,
    is_dir: bool,
) -> bool {
    let name = crate::flat::split(rel).1;
    let excluded = config.excludes_path(rel)
        || if is_dir {
            config.excludes_dir(name)
        } else {
            config.excludes_file(name)
        };
    excluded || rules.refused.is_some() || (rules.any && rules.ignores(abs, is_dir))
}

/// Answers for single paths what the walk answers for the whole tree: whether the rules as
/// they are on disk now leave a path out (it, or a directory above it). A move asks this of
/// the paths it would create, before it changes anything, so that it never writes where an
/// ignored or excluded file belongs (docs/SAFETY.md). Each directory's rules are read once.
pub struct IgnoreJudge<'a> {
    root: &'a Path,
    config: &'a Config,
    skip: Option<&'a Path>,
    /// Each directory asked about: its rules, or `None` when the directory is left out.
    dirs: HashMap<Vec<u8>, Option<Arc<Rules>>>,
    /// Ignore files as a move will leave them, by workspace-relative path: the content it
    /// writes, or `None` where it removes one. Others are read from disk.
    after: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl std::fmt::Debug for IgnoreJudge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IgnoreJudge")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl<'a> IgnoreJudge<'a> {
    /// A judge of `root` under `config`, `skip` (the store) left out as the walk leaves it.
    pub fn new(root: &'a Path, config: &'a Config, skip: Option<&'a Path>) -> IgnoreJudge<'a> {
        IgnoreJudge {
            root,
            config,
            skip,
            dirs: HashMap::new(),
            after: HashMap::new(),
        }
    }

    /// A judge of the rules as a move will leave them: the ignore files at the paths of
    /// `after` hold what it gives (`None`: removed), the others what they hold now.
    pub fn after_move(
        root: &'a Path,
        config: &'a Config,
        skip: Option<&'a Path>,
        after: HashMap<Vec<u8>, Option<Vec<u8>>>,
    ) -> IgnoreJudge<'a> {
        IgnoreJudge {
            after,
            ..IgnoreJudge::new(root, config, skip)
        }
    }

    /// True when a scan would leave out `rel` (as a directory when `is_dir`) or one of the
    /// directories above it.
    pub fn leaves_out(&mut self, rel: &[u8], is_dir: bool) -> bool {
        if is_dir && !rel.is_empty() && self.may_not_open(rel) {
            return true;
        }
        let (parent, name) = crate::flat::split(rel);
        match self.rules_of(parent) {
            Some(rules) => self.rules_leave_out(&rules, parent, name, is_dir),
            None => true,
        }
    }

    fn rules_leave_out(&self, rules: &Rules, parent: &[u8], name: &[u8], is_dir: bool) -> bool {
        let rel = crate::flat::join(parent, name);
        let abs = abs(self.root, &rel);
        always_left_out(parent, name)
            || self.skip.is_some_and(|skip| skip == abs)
            || ruled_out(self.config, rules, &rel, &abs, is_dir)
    }

    /// The rules in force inside directory `dir`; `None` when `dir` itself is left out.
    fn rules_of(&mut self, dir: &[u8]) -> Option<Arc<Rules>> {
        if let Some(known) = self.dirs.get(dir) {
            return known.clone();
        }
        let parent = if dir.is_empty() {
            Some(Arc::new(Rules::none()))
        } else {
            let (up, name) = crate::flat::split(dir);
            self.rules_of(up)
                .filter(|rules| !self.rules_leave_out(rules, up, name, true))
                .filter(|_| !self.may_not_open(dir))
        };
        let rules = parent.map(|parent| {
            let abs = abs(self.root, dir);
            let file = |name: &str| match self.after.get(&crate::flat::join(dir, name.as_bytes())) {
                Some(after) => after.clone(),
                None => read_rule_file(&abs.join(name), self.config.max_ignore_file_bytes),
            };
            let files = (file(GITIGNORE), file(SNAPIGNORE));
            let limit = self.config.max_ignore_file_bytes;
            Arc::new(rules_of_files(&abs, files, limit, &parent))
        });
        self.dirs.insert(dir.to_vec(), rules.clone());
        rules
    }

    /// True when directory `dir` is there but snap may not open it: the walk leaves it out
    /// (and names it), so a move keeps everything below it.
    fn may_not_open(&self, dir: &[u8]) -> bool {
        let flags = rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC;
        matches!(
            rustix::fs::open(abs(self.root, dir), flags, rustix::fs::Mode::empty()),
            Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM)
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Reading the bytes ourselves (to refuse links) splits them as the `ignore` crate's
    /// own reader does.
    #[test]
    fn rule_lines_split_as_the_ignore_crate_reads_a_file() {
        let cases: [(&[u8], &[&str]); 6] = [
            (b"", &[]),
            (b"a\n", &["a"]),
            (b"a\r\n\nb", &["a", "", "b"]),
            ("\u{feff}*.log\n!k\n".as_bytes(), &["*.log", "!k"]),
            (b"x\n\xff\ny\n", &["x"]),
            (b"\n\n", &["", ""]),
        ];
        for (bytes, want) in cases {
            assert_eq!(rule_lines(bytes).collect::<Vec<_>>(), want, "{bytes:?}");
        }
    }

    #[test]
    fn a_symlink_is_never_read_as_an_ignore_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), b"*.log\n").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join(".gitignore")).unwrap();
        assert!(read_rule_file(&dir.path().join(".gitignore"), u64::MAX).is_none());
        assert!(read_rule_file(&dir.path().join("real"), u64::MAX).is_some());
    }
}
