//! The restore engine: makes the working tree match a target flat tree, writing only what
//! differs, never following a symlink, never touching an ignored path.
//!
//! Every file is written to a temporary name in its own directory, then renamed over its path,
//! so each path holds its old content or its new, never a mix. Every parent directory is
//! opened component by component from the workspace root with `O_NOFOLLOW`, so a directory
//! swapped for a symlink makes the restore fail instead of writing elsewhere.
//!
//! Durability (see [`durable`]): everything is durable before the caller commits HEAD, path
//! by path for a small restore, by one `syncfs` for a large one.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{EntryKind, ObjectId, Store};

use crate::error::TreeError;
use crate::flat::{FlatTree, Node, split};
use crate::scan;

mod check;
mod clock;
mod durable;
mod floor;
mod guard;
mod lift;
mod plan;
mod swap;
mod write;

pub use check::{differing, unfinished};
use durable::{Durability, sync_restored};
use floor::{fail, open_dir, open_dir_at, open_root, remove};
use guard::{Found, Guarded, Wrote};
pub use lift::{LiftedDir, lift, put_back, read_only_dirs};
pub use plan::{Plan, check_unchanged, is_rule_file};
pub use swap::OpId;
#[cfg(feature = "testing")]
pub(crate) use swap::{force_link_fallback, force_no_links};
use write::{injected, write_entry};

/// Prefix of the temporary names a move writes (`.snap-tmp-<op>-<pid>-<n>`, see [`OpId`]): a
/// crash can leave one, and only the roll-forward of that same operation removes it.
pub const TEMP_PREFIX: &str = ".snap-tmp-";

/// Prefix of the names a move writes a large file under until it is whole
/// (`.snap-part-<op>-<pid>-<n>`): the roll-forward removes them without storing them, as
/// they never hold anything but a part of what the plan writes.
pub const PARTIAL_PREFIX: &str = ".snap-part-";

/// True for a name of the shape a move writes, `.snap-tmp-<op>-<pid>-<n>` or
/// `.snap-part-<op>-<pid>-<n>` (decimal), whatever the operation. Nothing is ever removed
/// for this shape alone: see [`OpId::owns`].
pub fn is_temp_name(name: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let rest = (name.strip_prefix(TEMP_PREFIX.as_bytes()))
        .or_else(|| name.strip_prefix(PARTIAL_PREFIX.as_bytes()));
    let Some(rest) = rest else {
        return false;
    };
    let parts: Vec<&[u8]> = rest.split(|&b| b == b'-').collect();
    parts.len() == 3 && parts.iter().all(|p| digits(p))
}

/// A version of a planned path that a step displaced and found to be neither what the plan
/// expected nor what it wrote (another process wrote it meanwhile): it sits under `temp`,
/// the operation's own name in the path's directory, until the caller stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplacedFile {
    /// The workspace path it was displaced from.
    pub path: Vec<u8>,
    /// Where it is now, workspace-relative.
    pub temp: Vec<u8>,
}

/// The two states a plan moves between, for at least every path it touches: what each path
/// held when the plan was made (`before`) and what it is to hold (`after`).
#[derive(Clone, Copy, Debug)]
pub struct Sides<'a> {
    /// The working tree as the plan saw it (absent: nothing tracked was there).
    pub before: &'a FlatTree,
    /// The target (absent: the target has nothing there).
    pub after: &'a FlatTree,
}

impl Sides<'_> {
    /// What `path` should hold when a step of the plan touches it: its `before` entry, or
    /// nothing when that was a directory (the plan removes directories before writing).
    fn expected(&self, path: &[u8]) -> Option<&Node> {
        self.before.get(path).filter(|n| n.kind != EntryKind::Dir)
    }
}

/// The working tree a plan is carried out in.
#[derive(Clone, Copy, Debug)]
pub struct WorkTree<'a> {
    /// The workspace root.
    pub root: &'a Path,
    /// Where content is read from.
    pub store: &'a Store,
    /// Files larger than this are never tracked, so never saved before being replaced: a
    /// planned path holding one is kept.
    pub max_file_size: u64,
    /// When set, [`apply`] stops before the next path with [`TreeError::Interrupted`].
    pub stop: Option<&'a AtomicBool>,
    /// The operation whose temporary names the steps use (recorded in its marker).
    pub op: OpId,
}

/// What [`apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Paths written or removed.
    pub touched: usize,
    /// Planned paths left exactly as they were, in path order, because what is there could
    /// not be saved first: a directory still holding other files, an oversize or special
    /// file. Nothing under a kept directory is written either.
    pub kept: Vec<Vec<u8>>,
    /// Planned paths left as they were because they hold a file or symlink that is neither
    /// what the plan saw nor its target (changed without a timestamp, torn by a power cut,
    /// written by another process): the caller saves them, then carries out their steps.
    pub differs: Vec<Vec<u8>>,
    /// Of `differs`, those the caller saved before carrying out their steps, in path order.
    pub saved_first: Vec<Vec<u8>>,
    /// Versions another process wrote between a path's guard and its step: the step is
    /// done, and the version it displaced waits under a temporary name to be stored.
    pub displaced: Vec<DisplacedFile>,
    /// Stat cache rows for the large files written, in path order: each is vouched for
    /// as the content it was written with (see `write::Vouch`).
    pub vouched: Vec<(Vec<u8>, snap_store::StatEntry)>,
}

/// Carries out `plan` in the working tree, guarded path by path (docs/SAFETY.md): a path is
/// written or removed only while it holds what `sides.before` says, and a path already
/// holding `sides.after` counts as done, so the same call rolls an interrupted plan forward
/// and rolls a failed one back. Anything else is left untouched and named.
pub fn apply(tree: WorkTree<'_>, plan: &Plan, sides: Sides<'_>) -> Result<Applied, TreeError> {
    apply_with(tree, plan, sides, &|| {})
}

/// As [`apply`], calling `tick` once per path changed (from worker threads too).
pub fn apply_with(
    tree: WorkTree<'_>,
    plan: &Plan,
    sides: Sides<'_>,
    tick: &(dyn Fn() + Sync),
) -> Result<Applied, TreeError> {
    let root_fd = rustix::fs::open(
        tree.root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| TreeError::io(tree.root, e.into()))?;
    let g = Guarded {
        tree,
        root_fd,
        hasher: tree.store.dry_writer(),
        sides,
        kept: std::sync::Mutex::new(Vec::new()),
        named: std::sync::Mutex::new(Vec::new()),
        differs: std::sync::Mutex::new(Vec::new()),
        displaced: std::sync::Mutex::new(Vec::new()),
        durability: Durability::for_plan(plan),
        vouched: std::sync::Mutex::new(Vec::new()),
    };
    let touched = AtomicU64::new(0);
    let steps = take_steps(&g, plan, &touched, tick);
    let touched = touched.into_inner() as usize;
    if !plan.is_empty() {
        // Also when stopped: what was done is durable before the marker is left behind. And
        // also when nothing was touched: a roll-forward after a kill finds every path done by
        // the killed run, whose writes may not have reached the disk yet.
        sync_restored(tree.root, &g.root_fd, plan, g.durability)?;
    }
    steps?;
    let sorted = |list: std::sync::Mutex<Vec<Vec<u8>>>| {
        let mut list = list.into_inner().unwrap_or_else(|p| p.into_inner());
        list.sort_unstable();
        list.dedup();
        list
    };
    let mut kept = g.kept.into_inner().unwrap_or_else(|p| p.into_inner());
    kept.append(&mut g.named.into_inner().unwrap_or_else(|p| p.into_inner()));
    let mut displaced = g.displaced.into_inner().unwrap_or_else(|p| p.into_inner());
    displaced.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mut vouched = g.vouched.into_inner().unwrap_or_else(|p| p.into_inner());
    vouched.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Applied {
        vouched,
        touched,
        kept: sorted(std::sync::Mutex::new(kept)),
        differs: sorted(g.differs),
        saved_first: Vec::new(),
        displaced,
    })
}

/// Takes every step of `plan`, each guarded, checking for a stop request before each one.
fn take_steps(
    g: &Guarded<'_>,
    plan: &Plan,
    touched: &AtomicU64,
    tick: &(dyn Fn() + Sync),
) -> Result<(), TreeError> {
    let step = |changed: Result<bool, TreeError>| {
        if changed? {
            touched.fetch_add(1, Ordering::Relaxed);
            tick();
        }
        if g.tree.stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            Err(TreeError::Interrupted)
        } else {
            Ok(())
        }
    };
    step(Ok(false))?;
    for path in &plan.remove_files {
        step(remove_file(g, path))?;
    }
    for path in &plan.remove_dirs {
        step(remove_dir(g, path))?;
    }
    for path in &plan.make_dirs {
        step(make_dir(g, path))?;
    }
    plan.write.par_iter().try_for_each(|(path, node)| {
        step(write_guarded(g, path, node))?;
        snap_store::failpoint!("restore-file");
        Ok::<(), TreeError>(())
    })?;
    // Last, so that a directory made read-only does not refuse what goes inside it.
    for (path, mode) in &plan.set_modes {
        step(set_dir_mode(g, path, *mode))?;
    }
    Ok(())
}

/// Gives directory `path` the permission bits `mode`, if it is still a directory and not
/// kept; never through a symlink.
fn set_dir_mode(g: &Guarded<'_>, path: &[u8], mode: u16) -> Result<bool, TreeError> {
    if g.under_kept(path) {
        return Ok(false);
    }
    let Ok(dir) = open_dir_at(&g.root_fd, path) else {
        return Ok(false);
    };
    let st = rustix::fs::fstat(&dir).map_err(|e| fail("set mode", g.tree.root, path, e))?;
    if crate::flat::permission_bits(st.st_mode) == mode {
        return Ok(false);
    }
    match rustix::fs::fchmod(&dir, Mode::from_raw_mode(u32::from(mode))) {
        Ok(()) => Ok(true),
        // Not this process's directory: its mode stays as it is, and the path is named.
        Err(Errno::PERM) => {
            g.note(&g.named, path);
            Ok(false)
        }
        Err(e) => Err(fail("set mode", g.tree.root, path, e)),
    }
}

/// Removes a file or symlink the target lacks, if it still holds what the plan saw.
fn remove_file(g: &Guarded<'_>, path: &[u8]) -> Result<bool, TreeError> {
    let done = g.sides.after.get(path).filter(|n| n.kind == EntryKind::Dir);
    if g.found(path, None, None)? == Found::Done {
        return Ok(false);
    }
    let expected = g.sides.expected(path);
    g.guard(path, expected, done, || take_away(g, path, expected))
}

/// Removes the file or symlink at `path` by moving it to an owned name first, so that a
/// version written since the guard looked is stored rather than unlinked unseen.
fn take_away(g: &Guarded<'_>, path: &[u8], expected: Option<&Node>) -> Result<bool, TreeError> {
    let (parent, name) = split(path);
    let dir = open_dir(g.tree.root, &g.root_fd, parent)?;
    let name = OsStr::from_bytes(name);
    let temp =
        swap::take_away(&dir, name, g.tree.op).map_err(|e| fail("remove", g.tree.root, path, e))?;
    if let Some(temp) = temp {
        g.settle(&dir, path, &temp, expected, Wrote::Nothing)?;
    }
    Ok(true)
}

/// Removes a directory the target lacks. One still holding other files (ignored, or not
/// yet saved) stays; if the target needs its path for a file, that path is kept.
fn remove_dir(g: &Guarded<'_>, path: &[u8]) -> Result<bool, TreeError> {
    let wanted = g.sides.after.get(path);
    if g.found(path, None, None)? == Found::Done {
        return Ok(false);
    }
    let dir = Node {
        kind: EntryKind::Dir,
        size: 0,
        id: crate::flat::UNBUILT,
        mode: None,
    };
    g.guard(
        path,
        Some(&dir),
        wanted.filter(|n| n.kind != EntryKind::Dir),
        || {
            let removed = remove(g.tree.root, &g.root_fd, path, AtFlags::REMOVEDIR)?;
            if !removed && wanted.is_some_and(|n| n.kind != EntryKind::Dir) {
                g.keep(path);
            }
            Ok(removed)
        },
    )
}

/// Makes a directory the target has; something else in the way is kept, with everything
/// the plan would write below it.
fn make_dir(g: &Guarded<'_>, path: &[u8]) -> Result<bool, TreeError> {
    let (parent, name) = split(path);
    if g.under_kept(parent) {
        return Ok(false);
    }
    let dir = open_dir(g.tree.root, &g.root_fd, parent)?;
    match rustix::fs::mkdirat(&dir, OsStr::from_bytes(name), Mode::from_raw_mode(0o777)) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => {
            let st = rustix::fs::statat(&dir, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| fail("create directory", g.tree.root, path, e))?;
            if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
                g.keep(path);
            } else if g.sides.before.get(path).is_none()
                && crate::flat::below(g.sides.after, path).next().is_none()
            {
                // A directory holding only what the walk leaves out is not tracked, so it
                // cannot become the target's empty directory: named, not emptied.
                g.note(&g.named, path);
            }
            Ok(false)
        }
        Err(e) => Err(fail("create directory", g.tree.root, path, e)),
    }
}

/// Writes one file or symlink of the target, if the path holds what the plan saw.
fn write_guarded(g: &Guarded<'_>, path: &[u8], node: &Node) -> Result<bool, TreeError> {
    if g.under_kept(split(path).0) {
        return Ok(false);
    }
    let expected = g.sides.expected(path);
    g.guard(path, expected, Some(node), || {
        write_entry(g, path, node, expected)
    })
}

/// Unlinks the temporary files holding displaced versions, once the caller has stored them.
pub fn drop_displaced(root: &Path, displaced: &[DisplacedFile]) -> Result<(), TreeError> {
    if displaced.is_empty() {
        return Ok(());
    }
    let root_fd = open_root(root)?;
    for file in displaced {
        let (parent, name) = split(&file.temp);
        let dir = open_dir(root, &root_fd, parent)?;
        match rustix::fs::unlinkat(&dir, OsStr::from_bytes(name), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(fail("remove", root, &file.temp, e)),
        }
    }
    Ok(())
}

/// What a roll-forward found of its own operation's temporary files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// Removed: each held a version the store has (what the plan wrote, or what it replaced).
    pub removed: usize,
    /// Files and symlinks holding anything else (a displaced version a kill stopped the
    /// operation from storing), workspace-relative: the caller stores each, then drops it.
    pub unknown: Vec<DisplacedFile>,
    /// Its names holding what the store cannot hold (a directory, a special or oversize
    /// file, one snap may not read), workspace-relative: left as they are, and named.
    pub kept: Vec<Vec<u8>>,
}

/// Looks for the temporary files operation `op` left in `dirs` (workspace-relative) after a
/// kill. Only names `op` owns are looked at (never a name merely of that shape: docs/SAFETY.md),
/// and of those only a file or symlink whose content id is in `known` is removed here.
pub fn sweep_own_temps<'a>(
    tree: WorkTree<'_>,
    dirs: impl Iterator<Item = &'a [u8]>,
    known: &std::collections::HashSet<ObjectId>,
) -> Result<Leftovers, TreeError> {
    let root_fd = open_root(tree.root)?;
    let hasher = tree.store.dry_writer();
    let mut out = Leftovers::default();
    let mut seen = std::collections::BTreeSet::new();
    for dir in dirs.filter(|d| seen.insert(d.to_vec())) {
        let Ok(fd) = open_dir_at(&root_fd, dir) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(scan::abs(tree.root, dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            // Part of a file the plan writes, never anything of another process's.
            if tree.op.owns_partial(name.as_bytes()) {
                if rustix::fs::unlinkat(&fd, &name, AtFlags::empty()).is_ok() {
                    out.removed += 1;
                }
                continue;
            }
            if !tree.op.owns(name.as_bytes()) {
                continue;
            }
            let here = guard::on_disk(&fd, &name, &hasher)
                .map_err(|e| fail("read", tree.root, name.as_bytes(), e))?;
            let temp = crate::flat::join(dir, name.as_bytes());
            let id = match &here {
                guard::OnDisk::Entry(kind, size, _, lazy)
                    if *kind != EntryKind::Dir && *size <= tree.max_file_size =>
                {
                    lazy.id()
                }
                _ => None,
            };
            match id {
                Some(id) if known.contains(&id) => {
                    if rustix::fs::unlinkat(&fd, &name, AtFlags::empty()).is_ok() {
                        out.removed += 1;
                    }
                }
                Some(_) => out.unknown.push(DisplacedFile {
                    path: temp.clone(),
                    temp,
                }),
                None => out.kept.push(temp),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roll_forward_removes_only_its_own_names_holding_known_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".snap")).unwrap();
        let op = OpId(5);
        let known_id = scan::store_content(&store.dry_writer(), b"known").unwrap();
        let users = [
            ".snap-tmp-notes",
            ".snap-tmp-12-3",
            ".snap-tmp-6-1-2",
            ".snap-tmp-5-1",
        ];
        for name in users {
            std::fs::write(dir.path().join(name), b"known").unwrap();
        }
        let (mine, theirs) = (op.temp_name(), op.temp_name());
        std::fs::write(dir.path().join(&mine), b"known").unwrap();
        std::fs::write(dir.path().join(&theirs), b"written meanwhile").unwrap();
        // A large file killed half-written: removed, never stored as a found version.
        let part = op.partial_name();
        std::fs::write(dir.path().join(&part), b"half of a la").unwrap();
        std::fs::write(dir.path().join(".snap-part-6-1-2"), b"another op's").unwrap();
        let tree = WorkTree {
            root: dir.path(),
            store: &store,
            max_file_size: u64::MAX,
            stop: None,
            op,
        };
        let known = std::collections::HashSet::from([known_id]);
        let left = sweep_own_temps(tree, std::iter::once(&b""[..]), &known).unwrap();
        assert_eq!(left.removed, 2);
        assert!(!dir.path().join(&mine).exists());
        assert!(!dir.path().join(&part).exists());
        assert!(dir.path().join(".snap-part-6-1-2").exists());
        let unknown = vec![DisplacedFile {
            path: theirs.clone().into_bytes(),
            temp: theirs.clone().into_bytes(),
        }];
        assert_eq!(left.unknown, unknown, "stored by the caller before it goes");
        for name in users.iter().chain([&theirs.as_str()]) {
            assert!(
                dir.path().join(name).exists(),
                "{name} is not the roll-forward's"
            );
        }
        assert!(is_temp_name(mine.as_bytes()) && is_temp_name(part.as_bytes()));
    }
    use crate::flat::build_trees;
    use proptest::prelude::*;

    /// A flat tree from path components: each path is a file (of one of a few contents, some
    /// executable) unless another path lies under it; every parent is a directory.
    fn tree(paths: &std::collections::BTreeSet<Vec<&str>>, contents: &[u8]) -> FlatTree {
        let mut flat = FlatTree::new();
        let dir = Node {
            kind: EntryKind::Dir,
            size: 0,
            id: crate::flat::UNBUILT,
            mode: Some(0o755),
        };
        for (i, parts) in paths.iter().enumerate() {
            for end in 1..parts.len() {
                flat.insert(parts[..end].join("/").into_bytes(), dir);
            }
            let under = paths
                .iter()
                .any(|q| q.len() > parts.len() && q[..parts.len()] == parts[..]);
            let c = contents[i % contents.len()];
            let kind = if c.is_multiple_of(3) {
                EntryKind::Executable
            } else {
                EntryKind::File
            };
            let private = c.is_multiple_of(5);
            let mode = match (kind, private) {
                (EntryKind::Executable, false) => 0o755,
                (EntryKind::Executable, true) => 0o700,
                (_, false) => 0o644,
                (_, true) => 0o600,
            };
            let node = Node {
                kind,
                size: 1,
                id: ObjectId([c % 4; 32]),
                mode: Some(mode),
            };
            flat.insert(parts.join("/").into_bytes(), if under { dir } else { node });
        }
        flat
    }

    fn paths() -> impl Strategy<Value = std::collections::BTreeSet<Vec<&'static str>>> {
        proptest::collection::btree_set(
            proptest::collection::vec(proptest::sample::select(vec!["a", "a.b", "b", "c"]), 1..4),
            0..16,
        )
    }

    proptest! {
        /// Planning against the stored target by tree ids gives the same plan, and the same
        /// changes, as comparing the two whole flat trees.
        #[test]
        fn a_stored_plan_equals_the_whole_tree_plan(
            now in paths(),
            then in paths(),
            contents in proptest::collection::vec(any::<u8>(), 2..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::init(dir.path()).unwrap();
            let (mut current, mut target) = (tree(&now, &contents), tree(&then, &contents[1..]));
            let writer = store.writer();
            build_trees(&writer, &mut current).unwrap();
            let target_root = build_trees(&writer, &mut target).unwrap();
            let packs = writer.finish().unwrap();
            store.commit(&snap_store::Commit { packs, ..Default::default() }).unwrap();
            let (plan, needed) = Plan::to_stored(&store, &target_root, &current).unwrap();
            let whole = Plan::new(&current, &target);
            prop_assert_eq!(&plan, &whole);
            prop_assert_eq!(plan.changes(&current), crate::flat::diff_files(&current, &target));
            for (path, node) in &plan.write {
                prop_assert_eq!(needed.get(path), Some(node));
            }
            for path in plan.remove_dirs.iter().filter(|p| target.contains_key(*p)) {
                prop_assert!(needed.contains_key(path), "{:?} replaced but not given", path);
            }
        }
    }
}
