//! `export`: a snapshot, or some paths of it, written into another directory with the restore
//! engine (temporary names, renames, no symlink followed, modes as recorded), never touching
//! the workspace or its history.

use super::*;

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

impl Workspace {
    /// Writes snapshot `reference` (only `paths` and what is under them, when given) into
    /// `dest`, which must be empty or absent, and outside the workspace.
    pub fn export(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dest: &Path,
    ) -> Result<ExportOutcome, TreeError> {
        let snapshot = self.resolve(reference)?;
        let wanted = self.export_entries(&snapshot, paths)?;
        let dir = self.export_dir(dest)?;
        let tree = restore::WorkTree {
            root: &dir,
            store: &self.store,
            max_file_size: u64::MAX,
            stop: self.stop.as_deref(),
        };
        let empty = FlatTree::new();
        let plan = Plan::new(&empty, &wanted);
        let sides = restore::Sides {
            before: &empty,
            after: &wanted,
        };
        restore::apply(tree, &plan, sides)?;
        let files = wanted.values().filter(|n| n.kind != EntryKind::Dir).count();
        Ok(ExportOutcome {
            snapshot,
            dir,
            files,
        })
    }

    /// The snapshot's entries at or under `paths` (all of them when none), with the
    /// directories above them; a path the snapshot lacks is an error.
    fn export_entries(
        &self,
        snapshot: &Snapshot,
        paths: &[Vec<u8>],
    ) -> Result<FlatTree, TreeError> {
        let all = self.files(snapshot)?;
        if paths.is_empty() || paths.iter().any(|p| p.is_empty()) {
            return Ok(all);
        }
        let mut out = FlatTree::new();
        for path in paths {
            let before = out.len();
            let inside = all.iter().filter(|(p, _)| flat::is_within(p, path));
            out.extend(inside.map(|(p, n)| (p.clone(), *n)));
            if out.len() == before {
                return Err(TreeError::PathNotInSnapshot(
                    String::from_utf8_lossy(path).into_owned(),
                    format!("#{}", snapshot.record.seq),
                ));
            }
            let mut up = flat::split(path).0;
            while !up.is_empty() {
                if let Some(node) = all.get(up) {
                    out.insert(up.to_vec(), *node);
                }
                up = flat::split(up).0;
            }
        }
        Ok(out)
    }

    /// `dest`, created if absent; refused when it holds anything or lies in the workspace
    /// (judged before anything is created).
    fn export_dir(&self, dest: &Path) -> Result<PathBuf, TreeError> {
        let refuse = |dir: &Path, why: &str| TreeError::Restore {
            action: "export into",
            path: dir.to_path_buf(),
            why: why.to_string(),
        };
        if resolved(dest)?.starts_with(&self.root) {
            let why = "it is inside the workspace; export writes outside it";
            return Err(refuse(dest, why));
        }
        std::fs::create_dir_all(dest).map_err(|e| TreeError::io(dest, e))?;
        let dir = canonical(dest)?;
        let refuse = |why: &str| refuse(&dir, why);
        let mut entries = std::fs::read_dir(&dir).map_err(|e| TreeError::io(&dir, e))?;
        if entries.next().is_some() {
            return Err(refuse("it is not empty; export never overwrites"));
        }
        Ok(dir)
    }
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
