//! The change source: what a capture may ask, instead of walking the whole tree, about what
//! changed since its last one (ARCHITECTURE.md, "The watcher"). A source answers with the
//! directories changed since a token, or with *everything*; a capture trusts only the first
//! kind of answer, and only when the token is the one its last capture recorded with the
//! tree it found (FORMAT.md 6.6). Anything else, and any doubt on the source's side, means
//! the whole walk, which is correct without any source.

use std::fmt::Debug;
use std::path::Path;

use crate::config::Config;
use crate::error::TreeError;
use crate::scan::walker::walk_watching;

/// A point in a source's history: its instance (a new one at each start, overflow or doubt)
/// and the sequence number of the last event it had read when it answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchToken {
    /// The source's instance and epoch.
    pub instance: [u8; 16],
    /// Events up to this one are accounted for.
    pub seq: u64,
}

/// How much of a changed directory must be read again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Its own entries: names, kinds, stats, its mode.
    Dir,
    /// It and everything under it: a directory that appeared, or whose ignore files changed.
    Subtree,
}

/// A directory a source saw change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirtyDir {
    /// Workspace-relative, `/`-separated; `""` is the root.
    pub path: Vec<u8>,
    /// How much of it to read.
    pub scope: Scope,
}

/// A source's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changes {
    /// Only these directories changed since the token asked about; `now` is the token to
    /// record with this capture.
    Dirs {
        /// The token this answer is current at.
        now: WatchToken,
        /// The directories that changed, in no particular order.
        dirs: Vec<DirtyDir>,
    },
    /// The source cannot say: read everything. With `now`, the source is current at that
    /// token, so the capture that reads everything may record it.
    Everything {
        /// The token this answer is current at, when the source has one.
        now: Option<WatchToken>,
        /// Why, for `snap doctor` and the timing log.
        reason: String,
    },
}

/// Something that knows which directories of a workspace changed: a watcher.
///
/// `changes_since` is called where a capture reads the filesystem clock, before it reads
/// anything else: an answer must account for every change made before the call (a watcher
/// waits for a cookie it writes to see its own events catch up). Errors are answers too:
/// a source that fails says [`Changes::Everything`].
pub trait ChangeSource: Debug + Send + Sync {
    /// The directories changed since `since` (`None`: the capture has no token yet).
    fn changes_since(&self, since: Option<&WatchToken>) -> Changes;
}

/// The directories a watcher watches: every directory the whole walk enters at or under
/// one (ignored and excluded trees are never entered, so they cost no watch), and those it
/// may not open, which no watch can cover.
#[derive(Clone, Debug, Default)]
pub struct WatchPlan {
    /// Workspace-relative directories, in no particular order (`""` is the root).
    pub dirs: Vec<Vec<u8>>,
    /// Directories the walk could not open: left out of every save until they can be.
    pub unreadable: Vec<Vec<u8>>,
    /// Directories asked about that the walk would not enter (gone, or left out).
    pub gone: Vec<Vec<u8>>,
}

/// The [`WatchPlan`] of directory `under` of the workspace at `root` (with the ignore rules
/// of every directory above it), calling `on_dir` with each directory's path and open
/// descriptor before the walk reads it: a watcher adds its watch there, so that a
/// subdirectory made meanwhile is either read by the walk or reported by the watch. Empty
/// when `under` is not a tracked directory now. `store_dir` is the store, left out when it
/// lies inside the tree.
pub fn watch_tree(
    root: &Path,
    config: &Config,
    store_dir: Option<&Path>,
    under: &[u8],
    on_dir: &(dyn Fn(&[u8], &std::os::fd::OwnedFd) + Sync),
) -> Result<WatchPlan, TreeError> {
    let found = walk_watching(root, config, store_dir, under, on_dir)?;
    Ok(WatchPlan {
        dirs: found.walk.dir_modes.into_keys().collect(),
        unreadable: (found.walk.unreadable.into_iter())
            .map(|u| u.path)
            .collect(),
        gone: found.gone,
    })
}

/// As [`watch_tree`], without watching anything.
pub fn watch_plan(
    root: &Path,
    config: &Config,
    store_dir: Option<&Path>,
    under: &[u8],
) -> Result<WatchPlan, TreeError> {
    watch_tree(root, config, store_dir, under, &|_, _| {})
}
