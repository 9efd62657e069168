//! `export`: a snapshot, or some paths of it, written into another directory with the restore
//! engine (temporary names, renames, no symlink followed, modes as recorded), never touching
//! the workspace or its history. The snapshot's trees are read one directory at a time and
//! written in steps of at most a fixed number of entries, so an export holds one step in
//! memory whatever the snapshot's size. Everything is written under `.snap-export-<op>` in the
//! destination and moved up at the end, so a failed or stopped export takes back all it wrote.
//! The staging directory holds an owner file naming the export (its id and process), and a
//! later export removes only a staging directory whose owner file says a dead process of
//! snap's made it: never a directory for its name alone.

use crate::error::TreeError;
use crate::flat::{self, FlatTree, Node};
use crate::history::query::Reader;
use crate::parts::canonical;
use crate::restore::{self, Plan};
use crate::snapshot::Snapshot;
use crate::upkeep::Upkeep;
use rustix::fs::RenameFlags;
use rustix::fs::{Mode, OFlags};
use snap_store::{EntryKind, ObjectId};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Entries written per step of an export: a whole-tree plan at a million files would be held
/// at once (docs/PERFORMANCE.md, "Figures behind the code").
const EXPORT_STEP_ENTRIES: usize = 1 << 16;

/// The name, before the export's id, of the directory inside `dest` an export writes in.
const STAGING_PREFIX: &str = ".snap-export-";

/// The file inside a staging directory that says which export made it:
/// `snap export <op> <pid>\n` (decimal).
const OWNER_FILE: &str = ".snap-export-owner";

const DIR_OPEN: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The files and symlinks an export wrote, and the modes its directories still need.
type Written = (usize, Vec<(Vec<u8>, u16)>);

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct ExportOutcome {
    /// The snapshot exported.
    pub snapshot: Snapshot,
    /// The directory written, canonical.
    pub dir: PathBuf,
    /// Files and symlinks written.
    pub files: usize,
}

impl Upkeep<'_> {
    pub(crate) fn export(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dest: &Path,
    ) -> Result<ExportOutcome, TreeError> {
        self.export_in_steps(reference, paths, dest, EXPORT_STEP_ENTRIES)
    }

    pub(crate) fn export_in_steps(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dest: &Path,
        step: usize,
    ) -> Result<ExportOutcome, TreeError> {
        let snapshot = Reader::new(self.parts).resolve(reference)?;
        let roots = self.export_roots(&snapshot, paths)?;
        let existed = dest.exists();
        let dir = self.export_dir(dest)?;
        // Written under a name of its own inside `dest`, and moved up whole once written: an
        // export that fails or is stopped takes back all it wrote, so running it again finds
        // `dest` empty, and nothing that was there before is touched.
        let op = restore::OpId::new();
        let staging = dir.join(format!("{STAGING_PREFIX}{}", op.0));
        std::fs::create_dir(&staging).map_err(|e| TreeError::io(&staging, e))?;
        let owner = staging.join(OWNER_FILE);
        let written = std::fs::write(&owner, owner_line(op, std::process::id()))
            .map_err(|e| TreeError::io(&owner, e))
            .and_then(|()| self.export_into(&staging, roots, step));
        let (files, modes) = match written {
            Ok(written) => written,
            Err(e) => {
                // Best effort: the error to report is the export's. `dest` goes only if this
                // export made it and it is empty again.
                let _ = std::fs::remove_dir_all(&staging);
                if !existed {
                    let _ = std::fs::remove_dir(&dir);
                }
                return Err(e);
            }
        };
        std::fs::remove_file(&owner).map_err(|e| TreeError::io(&owner, e))?;
        move_up(&staging, &dir)?;
        self.set_modes(&dir, modes)?;
        Ok(ExportOutcome {
            snapshot,
            dir,
            files,
        })
    }

    /// Writes the export's entries under `root`; returns the files and symlinks written and
    /// the modes its directories still need.
    fn export_into(
        &self,
        root: &Path,
        (above, given): Roots,
        step: usize,
    ) -> Result<Written, TreeError> {
        let mut out = Steps {
            tree: self.export_tree(root),
            step: step.max(1),
            pending: FlatTree::new(),
            modes: Vec::new(),
            files: 0,
        };
        for (path, node) in above {
            out.add(path, node)?;
        }
        for (path, node) in given {
            // The root's own entry is not written: it is `dest`.
            if !path.is_empty() {
                out.add(path.clone(), node)?;
            }
            if node.kind == EntryKind::Dir {
                out.add_tree(&path, &node.id)?;
            }
        }
        out.finish()
    }

    fn export_tree<'a>(&'a self, root: &'a Path) -> restore::WorkTree<'a> {
        restore::WorkTree {
            root,
            store: &self.parts.store,
            max_file_size: u64::MAX,
            stop: self.parts.stop.as_deref(),
            op: restore::OpId::new(),
        }
    }

    /// Gives every directory written its mode, deepest first: a parent made unreadable does
    /// not hide its children. Last of all, after the move out of the staging directory: a
    /// directory without write permission cannot be moved to another parent.
    fn set_modes(&self, root: &Path, mut modes: Vec<(Vec<u8>, u16)>) -> Result<(), TreeError> {
        modes.sort_unstable_by(|a, b| b.0.cmp(&a.0));
        let plan = Plan {
            set_modes: modes,
            ..Plan::default()
        };
        let empty = FlatTree::new();
        let sides = restore::Sides {
            before: &empty,
            after: &empty,
        };
        restore::apply(self.export_tree(root), &plan, sides)?;
        Ok(())
    }

    /// Where the export starts: the directories above the given paths (written, not
    /// walked), and the paths to write with everything under them. With no paths (or the
    /// root among them), the root tree at the empty path. A path the snapshot lacks is an
    /// error; a path inside another one given is left to that one.
    fn export_roots(&self, snapshot: &Snapshot, paths: &[Vec<u8>]) -> Result<Roots, TreeError> {
        let root = &snapshot.record.root;
        if paths.is_empty() || paths.iter().any(|p| p.is_empty()) {
            let node = Node {
                kind: EntryKind::Dir,
                size: 0,
                id: *root,
                mode: None,
            };
            return Ok((FlatTree::new(), vec![(Vec::new(), node)]));
        }
        let mut wanted = paths.to_vec();
        wanted.sort_unstable();
        let (mut above, mut given) = (FlatTree::new(), Vec::<(Vec<u8>, Node)>::new());
        for path in wanted {
            let Some(node) = flat::entry_at(&self.parts.store, root, &path)? else {
                return Err(TreeError::PathNotInSnapshot(
                    String::from_utf8_lossy(&path).into_owned(),
                    format!("#{}", snapshot.record.seq),
                ));
            };
            if given.iter().any(|(g, _)| flat::is_within(&path, g)) {
                continue;
            }
            let mut up = flat::split(&path).0;
            while !up.is_empty() {
                if let Some(node) = flat::entry_at(&self.parts.store, root, up)? {
                    above.insert(up.to_vec(), node);
                }
                up = flat::split(up).0;
            }
            given.push((path, node));
        }
        Ok((above, given))
    }
    /// `dest`, created if absent; refused when it holds anything or lies in the workspace
    /// (judged before anything is created).
    fn export_dir(&self, dest: &Path) -> Result<PathBuf, TreeError> {
        let refuse = |dir: &Path, why: &str| TreeError::Restore {
            action: "export into",
            path: dir.to_path_buf(),
            why: why.to_string(),
        };
        if resolved(dest)?.starts_with(&self.parts.root) {
            let why = "it is inside the workspace; export writes outside it";
            return Err(refuse(dest, why));
        }
        std::fs::create_dir_all(dest).map_err(|e| TreeError::io(dest, e))?;
        let dir = canonical(dest)?;
        let refuse = |why: &str| refuse(&dir, why);
        remove_stale_staging(&dir)?;
        let mut entries = std::fs::read_dir(&dir).map_err(|e| TreeError::io(&dir, e))?;
        if entries.next().is_some() {
            return Err(refuse("it is not empty; export never overwrites"));
        }
        Ok(dir)
    }
}

/// Removes from `dir` the staging directories a killed export left (see
/// [`remove_stale_staging`]): a clone killed during its checkout is retried into the same
/// destination, which must read as empty again.
pub fn remove_stale_export_staging(dir: &Path) -> Result<(), TreeError> {
    match dir.is_dir() {
        true => remove_stale_staging(dir),
        false => Ok(()),
    }
}

fn owner_line(op: restore::OpId, pid: u32) -> String {
    format!("snap export {} {pid}\n", op.0)
}

/// Removes the staging directories in `dir` that a killed export left: named
/// `.snap-export-<op>`, a directory (never a symlink), holding an owner file that names that
/// same `<op>` and a process that is gone, or nothing but an empty owner file (a kill right
/// after making it). A retry would otherwise find `dir` not empty. A directory of that name
/// holding anything else is the user's, and is never touched.
fn remove_stale_staging(dir: &Path) -> Result<(), TreeError> {
    for entry in std::fs::read_dir(dir).map_err(|e| TreeError::io(dir, e))? {
        let entry = entry.map_err(|e| TreeError::io(dir, e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let op = (entry.file_name().to_str())
            .and_then(|n| n.strip_prefix(STAGING_PREFIX))
            .and_then(|op| op.parse::<u64>().ok());
        let Some(op) = op.filter(|_| is_dir) else {
            continue;
        };
        if left_by_a_dead_export(&entry.path(), restore::OpId(op)) || barely_begun(&entry.path()) {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(|e| TreeError::io(&path, e))?;
        }
    }
    Ok(())
}

/// True when `staging` is as an export killed between making it and writing its owner file
/// leaves it: empty, or holding only an empty owner file. It holds nothing of anyone's.
fn barely_begun(staging: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(staging) else {
        return false;
    };
    let mut entries = entries.flatten();
    match (entries.next(), entries.next()) {
        (None, _) => true,
        (Some(only), None) => {
            only.file_name() == OWNER_FILE
                && std::fs::symlink_metadata(only.path()).is_ok_and(|m| m.is_file() && m.len() == 0)
        }
        _ => false,
    }
}

/// True when staging directory `staging` (of export `op`) holds an owner file, never a
/// symlink, that names `op` and a process that is gone.
fn left_by_a_dead_export(staging: &Path, op: restore::OpId) -> bool {
    owner_pid(staging, op)
        .is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
}

/// The process the owner file of `staging` names, if that file names export `op`.
fn owner_pid(staging: &Path, op: restore::OpId) -> Option<rustix::process::Pid> {
    use std::io::Read;
    let mut line = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(snap_store::fs::O_NOFOLLOW)
        .open(staging.join(OWNER_FILE))
        .ok()?
        .take(64)
        .read_to_string(&mut line)
        .ok()?;
    let pid: u32 = line
        .strip_prefix(&format!("snap export {} ", op.0))?
        .strip_suffix('\n')?
        .parse()
        .ok()?;
    rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)
}

/// `path` with its deepest existing ancestor made canonical (symlinks resolved), the rest
/// as given: where a directory created there would be.
fn resolved(path: &Path) -> Result<PathBuf, TreeError> {
    let mut existing = path;
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut out = canonical(existing)?;
    out.extend(rest.iter().rev());
    Ok(out)
}

/// The directories above the given paths, and the given paths with their entries.
type Roots = (FlatTree, Vec<(Vec<u8>, Node)>);

/// An export under way: the entries gathered for the next step, and the modes of every
/// directory written so far, set last so that a read-only directory refuses nothing.
struct Steps<'a> {
    tree: restore::WorkTree<'a>,
    step: usize,
    pending: FlatTree,
    modes: Vec<(Vec<u8>, u16)>,
    files: usize,
}

impl Steps<'_> {
    /// Gathers one entry, writing the step once it is full. A directory's entry is always
    /// gathered before what is inside it, so it is made by this step or an earlier one.
    fn add(&mut self, path: Vec<u8>, node: Node) -> Result<(), TreeError> {
        self.files += usize::from(node.kind != EntryKind::Dir);
        self.pending.insert(path, node);
        if self.pending.len() >= self.step {
            self.write_step()?;
        }
        Ok(())
    }

    /// Gathers everything under directory `dir` (tree `id`), one tree at a time, depth
    /// first: only the trees still to visit wait in memory.
    fn add_tree(&mut self, dir: &[u8], id: &ObjectId) -> Result<(), TreeError> {
        let mut stack = vec![(dir.to_vec(), *id)];
        while let Some((prefix, id)) = stack.pop() {
            for entry in self.tree.store.read_tree(&id)?.entries {
                let path = flat::join(&prefix, &entry.name);
                if entry.kind == EntryKind::Dir {
                    stack.push((path.clone(), entry.id));
                }
                self.add(path, Node::from(&entry))?;
            }
        }
        Ok(())
    }

    /// Writes the gathered entries into the new directory, which holds nothing of theirs
    /// yet; directory modes wait for [`Steps::finish`].
    fn write_step(&mut self) -> Result<(), TreeError> {
        let target = std::mem::take(&mut self.pending);
        let empty = FlatTree::new();
        let mut plan = Plan::new(&empty, &target);
        self.modes.append(&mut plan.set_modes);
        let sides = restore::Sides {
            before: &empty,
            after: &target,
        };
        restore::apply(self.tree, &plan, sides)?;
        Ok(())
    }

    /// Writes the last step; returns the files and symlinks written and the directories'
    /// modes, still to set.
    fn finish(mut self) -> Result<Written, TreeError> {
        self.write_step()?;
        Ok((self.files, self.modes))
    }
}

/// Moves every entry of `staging` into `dir` (never over an entry there), removes
/// `staging`, and syncs `dir`: the entries were synced as they were written, their new
/// names are not yet.
fn move_up(staging: &Path, dir: &Path) -> Result<(), TreeError> {
    let io = |path: &Path, e: std::io::Error| TreeError::io(path, e);
    let from =
        rustix::fs::open(staging, DIR_OPEN, Mode::empty()).map_err(|e| io(staging, e.into()))?;
    let to = rustix::fs::open(dir, DIR_OPEN, Mode::empty()).map_err(|e| io(dir, e.into()))?;
    for entry in std::fs::read_dir(staging).map_err(|e| io(staging, e))? {
        let name = entry.map_err(|e| io(staging, e))?.file_name();
        rustix::fs::renameat_with(&from, &name, &to, &name, RenameFlags::NOREPLACE)
            .map_err(|e| io(&dir.join(&name), e.into()))?;
    }
    std::fs::remove_dir(staging).map_err(|e| io(staging, e))?;
    Ok(snap_store::fs::sync_dir(dir)?)
}
