//! What no save can record: paths holding a FIFO, socket or device, a file over
//! `max_file_size`, or a file snap may not read. A move keeps such a path as it is; this
//! module makes the rest of the move agree with that (docs/SAFETY.md, "Kept and named"): an
//! undo does not take a tree that differs from HEAD only there for unsaved changes (it would
//! save the file "deleted", move back to HEAD, keep the file, and do the same at every
//! undo), and a restore records at such a path what a save right after would record.

use super::*;

impl Workspace {
    /// True when `rel` holds, on disk now, something a save leaves out for what it is (not
    /// for the ignore rules): a FIFO, socket or device, a file over `max_file_size`, or one
    /// snap may not read. Nothing is read but, at most, one open.
    pub(super) fn untrackable_on_disk(&self, rel: &[u8]) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(scan::abs(&self.root, rel)) else {
            return false;
        };
        let kind = meta.file_type();
        if kind.is_dir() || kind.is_symlink() {
            return false;
        }
        if !kind.is_file() || meta.len() > self.config.max_file_size {
            return true;
        }
        let refused = |e: &std::io::Error| {
            e.raw_os_error()
                .is_some_and(|c| c == rustix::io::Errno::ACCESS.raw_os_error())
        };
        let opened = crate::inside::open_root(&self.root)
            .and_then(|root| crate::inside::open_file(&root, rel));
        opened.as_ref().is_err_and(refused)
    }

    /// True when the captured tree is HEAD's but for files HEAD holds that now stand on disk
    /// as something no save can record: HEAD's tree is then all a save could say of it, so a
    /// move neither saves it first nor counts it as a step. Checked exactly: the capture with
    /// HEAD's entries put back at those paths must build HEAD's root.
    pub(super) fn differs_only_where_untrackable(
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
                match flat::diff_stored_pruned(&self.store, &head.record.root, &cap.flat, &pruned)?
                {
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
                    return Ok(false);
                }
                up = flat::split(up).0;
            }
            with_head.insert(path.clone(), *node);
            flat::unbuild_above(&mut with_head, path);
        }
        let hasher = self.store.dry_writer();
        let root = flat::build_trees_reusing(&hasher, &mut with_head, &|_| None)?;
        Ok(root == head.record.root)
    }
}
