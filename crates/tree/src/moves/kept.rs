//! What a move keeps and names rather than touches: paths the ignore rules leave out, and
//! directories left holding only such files or made visible by a changed ignore file. And
//! what no save can record: paths holding a FIFO, socket or device, a file over
//! `max_file_size`, or a file snap may not read. A move keeps such a path as it is; this
//! module makes the rest of the move agree with that (docs/SAFETY.md, "Kept and named"): an
//! undo does not take a tree that differs from HEAD only there for unsaved changes (it would
//! save the file "deleted", move back to HEAD, keep the file, and do the same at every
//! undo), and a restore records at such a path what a save right after would record.

use crate::capture::Snapshotter;
use crate::capture::cascade::{Capture, CaptureMode};
use crate::error::TreeError;
use crate::flat::{self, Change, FlatTree};
use crate::moves::Mover;
use crate::restore::{self, Plan};
use crate::scan;
use crate::snapshot::Snapshot;
use snap_store::{EntryKind, ObjectId};

impl Mover<'_> {
    /// True when `rel` holds, on disk now, something a save leaves out for what it is (not
    /// for the ignore rules): a FIFO, socket or device, a file over `max_file_size`, or one
    /// snap may not read (or in a directory it may not search). Nothing is read but, at most,
    /// one open.
    pub(crate) fn untrackable_on_disk(&self, rel: &[u8]) -> bool {
        let meta = match std::fs::symlink_metadata(scan::abs(&self.parts.root, rel)) {
            Ok(meta) => meta,
            // In a directory snap may not search: the walk named that directory.
            Err(e) => return scan::cannot_read(&e),
        };
        let kind = meta.file_type();
        if kind.is_dir() {
            let opened = std::fs::read_dir(scan::abs(&self.parts.root, rel));
            return opened.as_ref().is_err_and(scan::cannot_read);
        }
        if kind.is_symlink() {
            return false;
        }
        if !kind.is_file() || meta.len() > self.parts.config.max_file_size {
            return true;
        }
        let opened = crate::inside::open_root(&self.parts.root)
            .and_then(|root| crate::inside::open_file(&root, rel));
        opened.as_ref().is_err_and(scan::cannot_read)
    }

    /// True when the captured tree is HEAD's but for files HEAD holds that now stand on disk
    /// as something no save can record: HEAD's tree is then all a save could say of it, so a
    /// move neither saves it first nor counts it as a step. Checked exactly: the capture with
    /// HEAD's entries put back at those paths must build HEAD's root.
    pub(crate) fn differs_only_where_untrackable(
        &self,
        cap: &Capture,
        head: &Snapshot,
        diff: Option<&flat::StoredDiff>,
    ) -> Result<bool, TreeError> {
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        let whole;
        let (changes, old) = match diff {
            Some(diff) => (&diff.0, &diff.1),
            None => {
                match flat::diff_stored_pruned(
                    &self.parts.store,
                    &head.record.root,
                    &cap.flat,
                    &pruned,
                )? {
                    Some(found) => {
                        whole = found;
                        (&whole.0, &whole.1)
                    }
                    None => return Ok(false),
                }
            }
        };
        let gone_here = |(path, change): &(Vec<u8>, Change)| {
            *change == Change::Deleted && self.untrackable_on_disk(path)
        };
        if changes.is_empty() || !changes.iter().all(gone_here) {
            return Ok(false);
        }
        let mut with_head = cap.flat.clone();
        for (path, _) in changes {
            let Some(node) = old.get(path) else {
                return Ok(false);
            };
            // A directory gone with it (it held only that file) is a change of its own.
            let mut up = flat::split(path).0;
            while !up.is_empty() {
                if !with_head.contains_key(up) {
                    // A directory snap may not open is left out whole: HEAD's entry for it
                    // goes back with the files below it.
                    let dir = match old.get(up) {
                        Some(dir) => Some(*dir),
                        None => flat::entry_at(&self.parts.store, &head.record.root, up)?,
                    };
                    match dir {
                        Some(dir) if self.untrackable_on_disk(up) => {
                            with_head.insert(up.to_vec(), dir);
                        }
                        _ => return Ok(false),
                    }
                }
                up = flat::split(up).0;
            }
            with_head.insert(path.clone(), *node);
            flat::unbuild_above(&mut with_head, path);
        }
        let hasher = self.parts.store.dry_writer();
        let root = flat::build_trees_reusing(&hasher, &mut with_head, &|_| None)?;
        Ok(root == head.record.root)
    }

    /// Directories the target has empty that the move left holding only what it had no
    /// right to remove (ignored or oversize files): the walk does not track such a directory,
    /// so a save right after would record it gone. Named with the kept paths. Only parents
    /// of removed paths can be such, and each is checked in the target's stored trees.
    pub(crate) fn left_hollow(
        &self,
        plan: &Plan,
        target_root: &ObjectId,
    ) -> Result<Vec<Vec<u8>>, TreeError> {
        let removed = plan.remove_files.iter().chain(&plan.remove_dirs);
        let parents: std::collections::BTreeSet<&[u8]> = removed
            .map(|p| flat::split(p).0)
            .filter(|p| !p.is_empty())
            .collect();
        let mut out = Vec::new();
        for dir in parents {
            let occupied = std::fs::read_dir(scan::abs(&self.parts.root, dir))
                .is_ok_and(|mut entries| entries.next().is_some());
            if occupied && self.empty_dir_in(target_root, dir)? {
                out.push(dir.to_vec());
            }
        }
        Ok(out)
    }

    /// True when the tree `root` has an empty directory at `path`.
    pub(crate) fn empty_dir_in(&self, root: &ObjectId, path: &[u8]) -> Result<bool, TreeError> {
        let mut tree = self.parts.store.read_tree(root)?;
        for name in path.split(|b| *b == b'/') {
            let Some(entry) = tree.entries.iter().find(|e| e.name == name) else {
                return Ok(false);
            };
            if entry.kind != EntryKind::Dir {
                return Ok(false);
            }
            tree = self.parts.store.read_tree(&entry.id)?;
        }
        Ok(tree.entries.is_empty())
    }

    /// When `plan` changed an ignore file, the paths it thereby made visible: files the move
    /// had no right to touch (ignored before it) that the next save would now record. They
    /// are named with the kept paths, so that nothing a save records after a move is silent.
    pub(crate) fn made_visible(
        &self,
        plan: &Plan,
        target: &Snapshot,
    ) -> Result<Vec<Vec<u8>>, TreeError> {
        if !plan.changes_rules() {
            return Ok(Vec::new());
        }
        let now = Snapshotter::new(self.parts)
            .capture(&self.parts.store.dry_writer(), CaptureMode::Whole)?;
        let (changes, _) = flat::diff_stored(&self.parts.store, &target.record.root, &now.flat)?;
        Ok(changes.into_iter().map(|(path, _)| path).collect())
    }

    /// Takes out of `plan` the paths it would create that the ignore rules (as they are
    /// now, before the move) or the default excludes leave out, and the paths it would
    /// remove that the rules as the move leaves them leave out, with everything under them;
    /// returns them.
    pub(crate) fn keep_ruled_out(&self, plan: &mut Plan, current: &FlatTree) -> Vec<Vec<u8>> {
        let mut kept = self.keep_ruled_out_now(plan, current);
        kept.extend(self.keep_ruled_out_after(plan));
        kept.sort_unstable();
        kept
    }

    /// The paths `plan` would remove that the ignore rules as it leaves them leave out: the
    /// target cannot say what belongs there (a snapshot holds nothing its rules ignore), so
    /// the move leaves them as they are. An undo that takes away a `.gitignore` keeps the
    /// file it ignored; the redo that brings the `.gitignore` back once removed that file.
    fn keep_ruled_out_after(&self, plan: &mut Plan) -> Vec<Vec<u8>> {
        if !plan.changes_rules() {
            return Vec::new();
        }
        let is_rule_file = restore::is_rule_file;
        let written = (plan.write.iter())
            .filter(|(p, _)| is_rule_file(p))
            .map(|(p, node)| {
                // A symlinked ignore file is never read; one that does not read is no rules.
                let bytes = (node.kind != EntryKind::Symlink
                    && node.size <= self.parts.config.max_ignore_file_bytes)
                    .then(|| self.parts.store.read_file(&node.id).ok())
                    .flatten();
                (p.clone(), bytes)
            });
        let removed = (plan.remove_files.iter())
            .filter(|p| is_rule_file(p))
            .map(|p| (p.clone(), None));
        let after = written.chain(removed).collect();
        let mut judge = crate::scan::rules::IgnoreJudge::after_move(
            &self.parts.root,
            &self.parts.config,
            Some(self.parts.store.dir()),
            after,
        );
        let gone_dirs = plan.remove_dirs.iter().rev().map(|p| (p, true));
        let gone_files = plan.remove_files.iter().map(|p| (p, false));
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for (path, is_dir) in gone_dirs.chain(gone_files) {
            let below_kept = kept.iter().any(|k| flat::is_within(path, k));
            if !below_kept && !is_rule_file(path) && judge.leaves_out(path, is_dir) {
                kept.push(path.clone());
            }
        }
        plan.leave_out(&kept);
        kept
    }

    /// The paths `plan` would create that the ignore rules as they are now leave out.
    pub(crate) fn keep_ruled_out_now(&self, plan: &mut Plan, current: &FlatTree) -> Vec<Vec<u8>> {
        let mut judge = crate::scan::rules::IgnoreJudge::new(
            &self.parts.root,
            &self.parts.config,
            Some(self.parts.store.dir()),
        );
        let new_dirs = plan.make_dirs.iter().map(|p| (p, true));
        let new_files = plan.write.iter().map(|(p, _)| (p, false));
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for (path, is_dir) in new_dirs.chain(new_files) {
            let tracked = current
                .get(path)
                .is_some_and(|n| (n.kind == EntryKind::Dir) == is_dir);
            let below_kept = kept.iter().any(|k| flat::is_within(path, k));
            if !tracked && !below_kept && judge.leaves_out(path, is_dir) {
                kept.push(path.clone());
            }
        }
        plan.leave_out(&kept);
        kept.sort_unstable();
        kept
    }
}
