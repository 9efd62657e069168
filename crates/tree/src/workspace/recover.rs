//! Finishing interrupted undos, redos and restores (DESIGN §7, §14): the roll-forward a
//! writing command runs when it opens the workspace, and `snap recover`.

use super::*;

impl Workspace {
    /// Finishes each interrupted operation by replaying its recorded plan, guarded: only the
    /// paths between the tree it started from and its target are touched, each only while it
    /// holds one of those two states; a file holding anything else is saved first (DESIGN
    /// §14). Then HEAD and the redo stack are committed and the marker removed.
    pub(super) fn recover(&mut self) -> Result<(), TreeError> {
        for marker in Marker::find(self.store.dir())? {
            let head = self.snapshot(marker.head)?;
            let from = match marker.from {
                Some(from) => from,
                // An older marker did not record it: before HEAD moves, HEAD is (nearly
                // always) the tree the move started from, and the guards cover the rest.
                None => self.head()?.map_or(head.record.root, |h| h.record.root),
            };
            // Both trees, each unfolded only where the other differs: the paths the plan
            // touches, with all that the guards compare them with.
            let (before, after) = flat::unfold_pair(&self.store, &from, &head.record.root)?;
            let mut plan = Plan::new(&before, &after);
            plan.leave_out(&marker.kept);
            let sides = restore::Sides {
                before: &before,
                after: &after,
            };
            let applied =
                self.apply_saving_first(marker.op, &plan, sides, (Some(&head), &after))?;
            let dirs = plan.write.iter().map(|(p, _)| flat::split(p).0);
            let swept = restore::sweep_temp(&self.root, std::iter::once(&b""[..]).chain(dirs))?;
            self.store.set_history(HistoryState {
                head: Some(marker.head),
                redo: marker.redo.clone(),
            })?;
            marker.remove(self.store.dir())?;
            let mut kept = applied.kept;
            kept.extend(marker.kept.iter().cloned());
            kept.sort_unstable();
            kept.dedup();
            self.recovered.push(Recovered {
                op: marker.op,
                head,
                paths_touched: applied.touched + swept,
                kept,
                saved_first: applied.saved_first,
            });
        }
        Ok(())
    }

    /// Finishes interrupted operations (already done by opening); returns what was finished.
    pub fn recover_now(&mut self) -> Result<Vec<Recovered>, TreeError> {
        self.recover()?;
        Ok(self.recovered.clone())
    }
}
