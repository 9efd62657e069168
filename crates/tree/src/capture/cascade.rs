//! Capturing the working tree: walking it, and storing what changed. This is the one place
//! that says what each cache vouches for; every verdict is trusted only under the racy rule
//! (whatever it rests on was modified and changed, mtime and ctime, strictly before the
//! filesystem clock of the scan that cached it), and every cached row carries a check.
//!
//! The cascade, cheapest first:
//! 1. **Walk memo** (FORMAT 6.4): the order-free digest of every walked path, kind and stat
//!    key, with the root tree it built. A walk with the same digest, nothing in it newer than
//!    the memo's clock, and HEAD at that root, is HEAD: nothing is read, nothing built.
//! 2. **Directory cache** (6.3): a directory's stat, its ignore files' stats and the entries
//!    the rules let through. An unchanged directory is not listed nor matched again; its
//!    entries are still stat-ed.
//! 3. **Tree cache** (6.5): the walk digest per subtree with the tree id it built. A subtree
//!    with its digest is that tree: not built, and (for a save) its files not even looked up.
//! 4. **Stat cache** (6.1): a file's stat key with the content id it hashed to. A file whose
//!    stat is the key's is that content: not read.
//! 5. **Scan memo** (6.2): the digest of every scanned entry with the root it built. Entries
//!    with that digest build that root: no tree is built.
//!
//! Anything a cache cannot vouch for is read, hashed and stored.

use crate::capture::Snapshotter;
use crate::capture::memo::WalkBasis;
use crate::error::TreeError;
use crate::flat::{self, FlatTree, build_trees};
use crate::observer::{Event, Observer, Phase, Ticker};
use crate::parts::now_ns;
use crate::scan::{self, ScanReport};
use crate::source::{Changes, WatchToken};
use rustix::fs::{Mode, OFlags};
use snap_store::{
    DirCacheUpdate, ObjectId, ObjectWriter, ScanMemo, StatCacheUpdate, StatEntry, StatKey, WalkMemo,
};
use snap_store::{PathMap, WatchMemo};
use std::collections::HashSet;
use std::os::unix::fs::OpenOptionsExt;

/// What a capture is for, which decides the shortcuts it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureMode {
    /// A save, status or diff against HEAD: when the walk finds the tree as the walk memo
    /// left it and HEAD is `head`, the tree is HEAD.
    Save {
        /// HEAD's root tree, when the shortcut may be taken.
        head: Option<ObjectId>,
    },
    /// Before a move: every file's stat is kept, so the move can refuse files that changed
    /// after the scan. When the walk finds the tree as the walk memo left it and HEAD is
    /// `head`, the tree is HEAD: nothing is read, the flat tree is left empty, and the move
    /// unfolds HEAD's stored tree where its target differs (`flat::unfold_against`).
    BeforeMove {
        /// HEAD's root tree, when the shortcut may be taken.
        head: Option<ObjectId>,
        /// When the walk memo does not vouch, leave out (as a save does) what lies under
        /// directories the tree cache vouches for, so that reading a changed tree costs what
        /// a save of it costs: the flat tree then lists only the changed directories
        /// ([`Capture::pruned`] names the others), and the stats still cover every file.
        prune: bool,
        /// Whether the change source may say which directories to read.
        source: Heed,
    },
    /// The whole tree, as it is.
    Whole,
}

/// Whether a move's capture may take the change source's answer for which directories
/// changed, or walks and stats every path itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Heed {
    /// Ask the source: an undo, redo or restore, whose guard reads each file it replaces
    /// again and saves first what differs.
    Source,
    /// Walk it all: a revert decides from the capture which paths are unchanged since the
    /// change it takes back, and a source's silence is no proof of that.
    Walk,
}

/// A change source's answer, with what a capture records from it.
struct Asked {
    /// The token row of the last capture it answered, if it walked under this config.
    memo: Option<WatchMemo>,
    changes: Changes,
    fingerprint: [u8; 32],
}

impl Asked {
    /// How many directories the answer named, for the timing log.
    fn dirs_named(&self) -> usize {
        match &self.changes {
            Changes::Dirs { dirs, .. } => dirs.len(),
            Changes::Everything { .. } => 0,
        }
    }

    /// The token row to commit with a capture that found `root`: the source is current at
    /// its answer's token. None for a dry capture, whose trees are not stored.
    fn memo_after(
        &self,
        root: ObjectId,
        fs_now_ns: i64,
        writer: &ObjectWriter<'_>,
    ) -> Option<WatchMemo> {
        let now = match &self.changes {
            Changes::Dirs { now, .. } => Some(*now),
            Changes::Everything { now, .. } => *now,
        };
        now.filter(|_| !writer.is_dry_run()).map(|now| WatchMemo {
            instance: now.instance,
            seq: now.seq,
            root,
            written_ns: fs_now_ns,
            fingerprint: self.fingerprint,
        })
    }
}

/// Reports how long each step of a capture took to the observer ([`Event::Timing`]); does
/// nothing, not even format its message, without one.
pub(crate) struct PhaseTimer<'a> {
    start: std::time::Instant,
    observer: Option<&'a Observer>,
}

impl<'a> PhaseTimer<'a> {
    pub(crate) fn new(observer: Option<&'a Observer>) -> PhaseTimer<'a> {
        PhaseTimer {
            start: std::time::Instant::now(),
            observer,
        }
    }

    pub(crate) fn mark(&self, step: impl FnOnce() -> String) {
        if let Some(observe) = self.observer {
            observe(&Event::Timing {
                step: &step(),
                elapsed: self.start.elapsed(),
            });
        }
    }
}

/// A move reads again at most this many files modified in the clock tick of the scan that
/// left the walk memo, to take the memo all the same; more, and it scans as usual.
const RACY_RECHECK_MAX: usize = 32;

/// Tree cache entries to write: each built directory's subtree memo.
pub(crate) type TreeMemos = Vec<(Vec<u8>, WalkMemo)>;

/// Each directory's subtree digest and newest mtime (see [`scan::subtree_sums`]).
pub(crate) type Subtrees = PathMap<Vec<u8>, (scan::WalkSum, i64)>;

/// The tree cache: each directory's subtree memo, as the last exact scan left it.
pub(crate) type TreeCache = PathMap<Vec<u8>, WalkMemo>;

/// Directories whose trees the tree cache vouches for, with their ids.
pub(crate) type CleanTrees = PathMap<Vec<u8>, ObjectId>;

/// The stat cache as loaded beside the walk.
pub(crate) type LoadedStatCache = Result<Vec<(Vec<u8>, StatEntry)>, snap_store::StoreError>;

/// What a capture knows once its walk is done, for the part that stores.
pub(crate) struct ScanStart {
    pub(crate) fs_now_ns: i64,
    /// The walk memo as stored before this capture.
    pub(crate) old_walk: Option<WalkMemo>,
    /// HEAD's root, for a save.
    pub(crate) clean_root: Option<ObjectId>,
    pub(crate) keep_stats: bool,
    /// Leave out what lies under directories the tree cache vouches for.
    pub(crate) prune: bool,
    pub(crate) dirs: DirCacheUpdate,
}

/// The capture of a tree the walk memo vouches for: `root`, nothing read or built.
pub(crate) fn unchanged_capture(
    root: ObjectId,
    mut walk: scan::Walk,
    dirs: DirCacheUpdate,
    dry: bool,
    keep_stats: bool,
) -> Capture {
    let stats = if keep_stats {
        scan::take_file_stats(&mut walk)
    } else {
        Vec::new()
    };
    let cache = if dry {
        StatCacheUpdate::default()
    } else {
        StatCacheUpdate {
            dirs,
            ..StatCacheUpdate::default()
        }
    };
    Capture {
        flat: FlatTree::new(),
        stats,
        root,
        report: ScanReport {
            too_large: walk.too_large,
            special: walk.special,
            vanished: 0,
            unreadable: {
                let mut unreadable = walk.unreadable;
                unreadable.sort_unstable_by(|a, b| a.path.cmp(&b.path));
                unreadable
            },
            refused_rules: {
                let mut refused = walk.refused_rules;
                refused.sort_unstable();
                refused
            },
        },
        cache,
        pruned: HashSet::new(),
        basis: None,
    }
}

pub(crate) struct Capture {
    pub(crate) flat: FlatTree,
    /// Each regular file's stat as the scan saw it, in no particular order; only when asked
    /// for (moves check that nothing changed since), else empty.
    pub(crate) stats: Vec<(Vec<u8>, StatKey)>,
    pub(crate) root: ObjectId,
    pub(crate) report: ScanReport,
    /// What this capture teaches the stat cache; empty for a dry capture, whose objects are
    /// not stored and so must never be vouched for.
    pub(crate) cache: StatCacheUpdate,
    /// Directories whose entries `flat` leaves out (their ids are known): a save's scan
    /// prunes what the tree cache vouches for. Empty for a whole capture.
    pub(crate) pruned: HashSet<Vec<u8>>,
    /// For a move, when its walk pinned the tree `root` down: what the walk memo of the tree
    /// after the move is made from.
    pub(crate) basis: Option<WalkBasis>,
}

/// The directories whose subtree digest is the one the tree cache holds, with every entry
/// under them older than the scan that cached it (the walk memo's rule, per directory), and
/// their tree ids.
pub(crate) fn clean_trees(subtrees: &Subtrees, cached: &TreeCache) -> CleanTrees {
    subtrees
        .iter()
        .filter_map(|(path, (sum, newest))| {
            let m = cached.get(path)?;
            (m.digest == sum.to_bytes() && *newest < m.written_ns).then(|| (path.clone(), m.root))
        })
        .collect()
}

/// Builds the trees of `flat`, the `clean` directories taking their ids from the tree
/// cache (and nothing under them built). Returns the root and the new tree cache entries of
/// the directories built.
pub(crate) fn build_reusing(
    writer: &ObjectWriter<'_>,
    flat: &mut FlatTree,
    (subtrees, clean, previous): (&Subtrees, &CleanTrees, &TreeCache),
    fs_now_ns: i64,
) -> Result<(ObjectId, TreeMemos), TreeError> {
    if let Some(root) = clean.get(&b""[..]) {
        return Ok((*root, Vec::new()));
    }
    for (path, id) in clean {
        if let Some(node) = flat.get_mut(path) {
            node.id = *id;
        }
    }
    let root = flat::build_trees_reusing(writer, flat, &|path| {
        previous.get(path).map(|memo| memo.root)
    })?;
    let trees = subtrees
        .iter()
        .filter(|(path, _)| !clean.contains_key(*path))
        .filter_map(|(path, (sum, _))| {
            let id = if path.is_empty() {
                root
            } else {
                flat.get(path)?.id
            };
            let memo = WalkMemo {
                digest: sum.to_bytes(),
                root: id,
                written_ns: fs_now_ns,
            };
            Some((path.clone(), memo))
        })
        .collect();
    Ok((root, trees))
}

impl Snapshotter<'_> {
    /// The working tree, captured for what `mode` says (the phase's one entry): its files
    /// stored through `writer` as the cascade allows. A save asks the change source, if any,
    /// what changed since its last capture, and reads only that when it can; otherwise, and
    /// for every other capture, the whole tree is walked.
    pub(crate) fn capture(
        &self,
        writer: &ObjectWriter<'_>,
        mode: CaptureMode,
    ) -> Result<Capture, TreeError> {
        let timer = PhaseTimer::new(self.parts.observer.0.as_ref());
        let fs_now_ns = self.fs_clock();
        // A move asks too, for the capture it plans from; a whole capture never does.
        let asked = match mode {
            CaptureMode::Save { .. }
            | CaptureMode::BeforeMove {
                head: Some(_),
                prune: true,
                source: Heed::Source,
            } => self.ask_source()?,
            _ => None,
        };
        if let Some(asked) = &asked
            && let Some(mut cap) = self.capture_answered(writer, asked, mode, fs_now_ns)
        {
            timer.mark(|| format!("changed directories read ({})", asked.dirs_named()));
            match mode {
                CaptureMode::Save { .. } => {
                    cap.cache.watch = asked.memo_after(cap.root, fs_now_ns, writer);
                }
                // As when the walk memo vouches: the tree is HEAD, and the move unfolds
                // HEAD's stored tree where its target differs.
                CaptureMode::BeforeMove {
                    head: Some(head), ..
                } if cap.root == head => {
                    cap.flat.clear();
                    cap.pruned.clear();
                }
                _ => {}
            }
            return Ok(cap);
        }
        let mut cap = self.capture_walked(writer, mode, fs_now_ns, &timer)?;
        if let (Some(asked), CaptureMode::Save { .. }) = (&asked, mode) {
            cap.cache.watch = asked.memo_after(cap.root, fs_now_ns, writer);
        }
        Ok(cap)
    }

    /// The change source's answer, when there is a source: asked with the token of the last
    /// capture it answered, if that capture walked under this config.
    fn ask_source(&self) -> Result<Option<Asked>, TreeError> {
        let Some(source) = &self.parts.source else {
            return Ok(None);
        };
        let fingerprint = self
            .parts
            .config
            .capture_fingerprint(Some(self.parts.store.dir()));
        let memo = (self.parts.store.watch_memo()?).filter(|m| m.fingerprint == fingerprint);
        let since = memo.map(|m| WatchToken {
            instance: m.instance,
            seq: m.seq,
        });
        let changes = source.changes_since(since.as_ref());
        Ok(Some(Asked {
            memo,
            changes,
            fingerprint,
        }))
    }

    /// The capture from the source's list of changed directories, when it gave one for the
    /// token recorded; `None` (walk it all) otherwise, or when that capture fails: the whole
    /// walk then reports what is wrong, if anything still is.
    fn capture_answered(
        &self,
        writer: &ObjectWriter<'_>,
        asked: &Asked,
        mode: CaptureMode,
        fs_now_ns: i64,
    ) -> Option<Capture> {
        let (Some(memo), Changes::Dirs { dirs, .. }) = (&asked.memo, &asked.changes) else {
            return None;
        };
        self.capture_partial(writer, memo, dirs, mode, fs_now_ns)
            .ok()
            .flatten()
    }

    /// The whole walk, with every cache that vouches for what it finds.
    fn capture_walked(
        &self,
        writer: &ObjectWriter<'_>,
        mode: CaptureMode,
        fs_now_ns: i64,
        timer: &PhaseTimer<'_>,
    ) -> Result<Capture, TreeError> {
        // `clean_root` lets a save skip what is unchanged; `memo_root` only lets the walk
        // memo answer for the whole tree.
        let (keep_stats, clean_root, memo_root, prune) = match mode {
            CaptureMode::Save { head } => (false, head, head, head.is_some()),
            CaptureMode::BeforeMove { head, prune, .. } => (true, None, head, prune),
            CaptureMode::Whole => (false, None, None, false),
        };
        let (dir_cache, mut dirs) = self.dir_cache()?;
        let old_walk = self.parts.store.walk_memo()?;
        timer.mark(|| format!("directory cache read ({} records)", dir_cache.records.len()));
        // A save after a save mostly finds the tree as the walk memo left it, and then needs
        // no stat cache; otherwise the cache loads while the walk waits on the filesystem.
        let memo = old_walk.filter(|m| Some(m.root) == memo_root);
        let (preloaded, walk) = self.walk_loading(&dir_cache.records, fs_now_ns, memo.is_none());
        let mut walk = walk?;
        timer.mark(|| {
            format!(
                "tree walked ({} directories cached, {} read)",
                walk.dirs_cached,
                walk.dirs.len()
            )
        });
        dirs.remove = scan::gone_dirs(&dir_cache.records, &walk);
        dirs.put = std::mem::take(&mut walk.dirs);
        // A move right after a save usually finds files modified in the save's own clock
        // tick, which the walk memo cannot vouch for by stat: reading those few files again
        // can (git's racily clean entries).
        let vouched = match memo {
            Some(m) if walk.unchanged_since(&m) => Some(m),
            Some(m) if keep_stats && self.racy_files_are_head(&walk, &m)? => Some(m),
            _ => None,
        };
        if let Some(memo) = vouched {
            let basis = keep_stats.then(|| WalkBasis::of(&walk, memo.written_ns));
            let mut cap = unchanged_capture(memo.root, walk, dirs, writer.is_dry_run(), keep_stats);
            cap.basis = basis.flatten();
            return Ok(cap);
        }
        let start = ScanStart {
            fs_now_ns,
            old_walk,
            clean_root,
            keep_stats,
            prune,
            dirs,
        };
        self.store_capture(writer, walk, preloaded, start, timer)
    }

    /// True when `walk` found what the walk of `memo` found and each regular file modified
    /// in that scan's clock tick (at most [`RACY_RECHECK_MAX`]) holds now, read again, what
    /// HEAD's tree `memo.root` holds for it. A file that cannot be read again is a no (the
    /// scan then names it); a store that cannot be read is the command's error, as it would
    /// be on the scan's path.
    fn racy_files_are_head(&self, walk: &scan::Walk, memo: &WalkMemo) -> Result<bool, TreeError> {
        let Some(racy) = walk.racy_since(memo) else {
            return Ok(false);
        };
        if racy.len() > RACY_RECHECK_MAX {
            return Ok(false);
        }
        let hasher = self.parts.store.dry_writer();
        for path in racy {
            let Ok(now) = scan::store_path(&self.parts.root, path, &hasher) else {
                return Ok(false);
            };
            let head = flat::entry_at(&self.parts.store, &memo.root, path)?;
            if !head.is_some_and(|h| h.kind == now.kind && h.id == now.id) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The rest of a capture the walk memo could not answer: reads and stores what changed
    /// (leaving out, for a save, what the tree cache vouches for), then builds the trees.
    fn store_capture(
        &self,
        writer: &ObjectWriter<'_>,
        mut walk: scan::Walk,
        preloaded: Option<LoadedStatCache>,
        start: ScanStart,
        timer: &PhaseTimer<'_>,
    ) -> Result<Capture, TreeError> {
        let exact = !walk.inexact;
        let sum = walk.sum().to_bytes();
        let basis = start
            .keep_stats
            .then(|| WalkBasis::of(&walk, start.fs_now_ns));
        let subtrees = exact.then(|| scan::subtree_sums(&walk));
        let (previous, clean) = match &subtrees {
            Some(subtrees) => {
                let previous = self.parts.store.tree_cache()?;
                let clean = clean_trees(subtrees, &previous);
                (previous, clean)
            }
            None => (PathMap::default(), PathMap::default()),
        };
        // A save leaves out what lies under directories whose trees the tree cache vouches
        // for: it needs their ids, not their files (its diff falls back if HEAD differs there).
        // A move that prunes still needs every file's stat: the walk's, for the files left
        // out (the scan settles on the others' as it reads them).
        let (pruned, left_out_stats) = match start.prune {
            true => scan::prune_under(&mut walk, |dir| clean.contains_key(dir), start.keep_stats),
            false => (0, Vec::new()),
        };
        let cached = match (preloaded, pruned) {
            (Some(cached), _) => cached?,
            (None, 0) => self.parts.store.stat_cache()?,
            (None, _) => self
                .parts
                .store
                .stat_entries(&scan::file_paths(&mut walk))?,
        };
        let mut stored = self.store_files(writer, walk, &cached, &start)?;
        // A cached path under a pruned directory was not walked past, not removed.
        stored
            .gone
            .retain(|path| !clean.contains_key(flat::split(path).0));
        timer.mark(|| {
            format!(
                "files stored ({} hashed, {} gone from the cache, {pruned} left out)",
                stored.hashed.len(),
                stored.gone.len()
            )
        });
        // Only a walk whose every entry is in the tree pins trees down.
        // A file that could not be read is not in the tree either: no memo vouches for it.
        let pinned = exact && stored.report.vanished == 0 && stored.report.unreadable.is_empty();
        let subtrees = subtrees.filter(|_| pinned);
        let (root, memo, trees) = self.tree_root(
            writer,
            &mut stored,
            start.clean_root.filter(|_| pruned == 0),
            (subtrees.as_ref(), &clean, &previous),
            start.fs_now_ns,
        )?;
        timer.mark(|| format!("trees built ({} rebuilt)", trees.len()));
        let walk_memo = pinned
            .then_some(WalkMemo {
                digest: sum,
                root,
                written_ns: start.fs_now_ns,
            })
            .filter(|m| start.old_walk != Some(*m));
        let cache = if writer.is_dry_run() {
            StatCacheUpdate::default()
        } else {
            StatCacheUpdate {
                put: stored.hashed,
                remove: stored.gone,
                only_live: None,
                // A pruned scan's digest covers only part of the tree: no scan memo from it.
                memo: memo.filter(|_| pruned == 0),
                walk: walk_memo,
                trees,
                dirs: start.dirs,
                watch: None,
                untracked: None,
            }
        };
        Ok(Capture {
            flat: stored.flat,
            stats: [stored.stats, left_out_stats].concat(),
            root,
            report: stored.report,
            cache,
            pruned: match pruned {
                0 => HashSet::new(),
                _ => clean.into_keys().collect(),
            },
            basis: basis.flatten().filter(|_| pinned),
        })
    }

    /// Reads and stores the walked files the stat cache does not vouch for.
    pub(crate) fn store_files(
        &self,
        writer: &ObjectWriter<'_>,
        walk: scan::Walk,
        cached: &[(Vec<u8>, StatEntry)],
        start: &ScanStart,
    ) -> Result<scan::Stored, TreeError> {
        let view = scan::CacheView {
            entries: cached,
            fs_now_ns: start.fs_now_ns,
        };
        let ticker = Ticker::new(
            self.parts.observer.0.as_ref(),
            Phase::Scan,
            walk.entries.len() as u64,
        );
        scan::store_walk(
            &self.parts.root,
            walk,
            writer,
            self.parts.config.max_file_size,
            &view,
            start.keep_stats,
            &|| ticker.tick(),
        )
    }

    /// Walks the tree with the directory cache; with `preload`, loads the stat cache (one
    /// catalog read) on another thread meanwhile.
    pub(crate) fn walk_loading(
        &self,
        records: &PathMap<Vec<u8>, Vec<u8>>,
        fs_now_ns: i64,
        preload: bool,
    ) -> (Option<LoadedStatCache>, Result<scan::Walk, TreeError>) {
        let view = scan::DirCacheView { records, fs_now_ns };
        std::thread::scope(|s| {
            let cached = preload.then(|| s.spawn(|| self.parts.store.stat_cache()));
            let walk = scan::walk_excluding(
                &self.parts.root,
                &self.parts.config,
                Some(self.parts.store.dir()),
                view,
            );
            let cached = cached.map(|c| c.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (cached, walk)
        })
    }

    /// The root tree of a scan, built unless the scan memo shows these entries built
    /// `clean_root`; the memo to store when it changed; and the tree cache entries of the
    /// directories built. With `subtrees` (the walk pinned the tree down), the `clean`
    /// directories take their ids from the tree cache instead of being built.
    pub(crate) fn tree_root(
        &self,
        writer: &ObjectWriter<'_>,
        stored: &mut scan::Stored,
        clean_root: Option<ObjectId>,
        (subtrees, clean, previous): (Option<&Subtrees>, &CleanTrees, &TreeCache),
        fs_now_ns: i64,
    ) -> Result<(ObjectId, Option<ScanMemo>, TreeMemos), TreeError> {
        let memo = self.parts.store.scan_memo()?;
        let same_entries = memo.filter(|m| m.digest == stored.digest);
        // HEAD's trees are in the store, and these entries are the ones that built them.
        if let Some(m) = same_entries.filter(|m| Some(m.root) == clean_root) {
            return Ok((m.root, None, Vec::new()));
        }
        let (root, trees) = match subtrees {
            Some(subtrees) => build_reusing(
                writer,
                &mut stored.flat,
                (subtrees, clean, previous),
                fs_now_ns,
            )?,
            None => (build_trees(writer, &mut stored.flat)?, Vec::new()),
        };
        let now = ScanMemo {
            digest: stored.digest,
            root,
        };
        Ok((root, (memo != Some(now)).then_some(now), trees))
    }

    /// The directory cache, empty when it was built under another config; and the update
    /// that starts it afresh in that case.
    pub(crate) fn dir_cache(&self) -> Result<(snap_store::DirCache, DirCacheUpdate), TreeError> {
        let mut cache = self.parts.store.dir_cache()?;
        let fingerprint = self
            .parts
            .config
            .walk_fingerprint(Some(self.parts.store.dir()));
        let mut update = DirCacheUpdate::default();
        if cache.fingerprint != Some(fingerprint) {
            cache.records.clear();
            update.clear = true;
            update.fingerprint = Some(fingerprint);
        }
        Ok((cache, update))
    }

    /// The workspace filesystem's clock, which is what the racy rule compares file times
    /// with: the mtime of an unnamed file created in the workspace root (`O_TMPFILE`, never
    /// visible to a scan). A store on another filesystem may keep finer timestamps, so its
    /// clock is only the fallback, then the system clock (a read-only workspace and store).
    pub(crate) fn fs_clock(&self) -> i64 {
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
        if let Ok(fd) = rustix::fs::openat(rustix::fs::CWD, &self.parts.root, flags, Mode::RUSR)
            && let Ok(st) = rustix::fs::fstat(&fd)
        {
            return crate::scan::walker::stat_key(&st).mtime_ns;
        }
        let path = self.parts.store.dir().join("clock");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(snap_store::fs::O_NOFOLLOW)
            .open(&path)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, b"x")?;
                f.metadata()
            });
        match written {
            Ok(meta) => scan::stat_key(&meta).mtime_ns,
            Err(_) => now_ns(),
        }
    }
}
