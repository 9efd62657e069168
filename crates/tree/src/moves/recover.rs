//! Finishing interrupted undos, redos and restores (docs/SAFETY.md): the roll-forward a
//! writing command runs when it opens the workspace, and `snap recover`.

use crate::error::TreeError;
use crate::flat::{self, FlatTree};
use crate::history::query::Reader;
use crate::marker::Marker;
use crate::moves::Mover;
use crate::record::FoundFile;
use crate::record::Recorder;
use crate::restore::{self, Plan};
use crate::snapshot::{Recovered, Snapshot};
use snap_store::{EntryKind, HistoryState, ObjectId};
use std::collections::HashSet;

impl Mover<'_> {
    /// Finishes each interrupted operation by replaying its recorded plan, guarded: only the
    /// paths between the tree it started from and its target are touched, each only while it
    /// holds one of those two states; a file holding anything else is saved first
    /// (docs/SAFETY.md). Every step is checked done, directories included, before HEAD and
    /// the redo stack are committed and the marker removed.
    pub(crate) fn recover(&self) -> Result<Vec<Recovered>, TreeError> {
        let mut recovered = Vec::new();
        for marker in Marker::find(self.parts.store.dir())? {
            let head = Reader::new(self.parts).snapshot(marker.head)?;
            let from = match marker.from {
                Some(from) => from,
                // An older marker did not record it: before HEAD moves, HEAD is (nearly
                // always) the tree the move started from, and the guards cover the rest.
                None => Reader::new(self.parts)
                    .head()?
                    .map_or(head.record.root, |h| h.record.root),
            };
            // Both trees, each unfolded only where the other differs: the paths the plan
            // touches, with all that the guards compare them with.
            let (before, after) = flat::unfold_pair(&self.parts.store, &from, &head.record.root)?;
            let mut plan = Plan::new(&before, &after);
            plan.leave_out(&marker.kept);
            let sides = restore::Sides {
                before: &before,
                after: &after,
            };
            restore::lift(&self.parts.root, &marker.lifted)?;
            // Its own temporary files first: a kill can leave one in a directory the plan
            // removes, which would then stay, emptied only by the sweep.
            let swept = self.sweep_leftovers(&marker, &plan, sides, (Some(&head), &after))?;
            let parent = (Some(&head), &after);
            let mut applied = self.apply_saving_first(&marker, &plan, sides, parent)?;
            self.complete(&marker, &plan, sides, parent, &mut applied)?;
            restore::put_back(&self.parts.root, &marker.lifted, &plan)?;
            self.parts.store.set_history(HistoryState {
                head: Some(marker.head),
                redo: marker.redo.clone(),
            })?;
            marker.remove(self.parts.store.dir())?;
            let mut kept = applied.kept;
            kept.extend(marker.kept.iter().cloned());
            kept.extend(swept.kept);
            kept.sort_unstable();
            kept.dedup();
            recovered.push(Recovered {
                op: marker.op,
                head,
                paths_touched: applied.touched + swept.removed,
                kept,
                saved_first: applied.saved_first,
            });
        }
        // An expunge killed after its rewrite: the bytes it took out of history leave the
        // packs now, before this command writes anything of its own.
        self.parts.store.finish_purge()?;
        Ok(recovered)
    }

    /// Removes the temporary files operation `marker` itself left in the directories its
    /// plan writes or removes in (after a kill, or after a step failed): those holding a
    /// version either side of the plan stores. Any other it owns (a displaced version it was
    /// stopped from storing) is stored first, in a snapshot of `tree` (the state the working
    /// tree is in now, with its parent) that `log --all` lists, under its own name; one the
    /// store cannot hold is left and named. A marker from before format 3 names no
    /// operation, so nothing is removed for it.
    pub(crate) fn sweep_leftovers(
        &self,
        marker: &Marker,
        plan: &Plan,
        sides: restore::Sides<'_>,
        tree: (Option<&Snapshot>, &FlatTree),
    ) -> Result<Swept, TreeError> {
        let Some(op) = marker.op_id else {
            return Ok(Swept::default());
        };
        let written = plan.write.iter().map(|(p, _)| flat::split(p).0);
        let removed = plan.remove_files.iter().map(|p| flat::split(p).0);
        let dirs = std::iter::once(&b""[..]).chain(written).chain(removed);
        let known: HashSet<ObjectId> = (sides.before.values().chain(sides.after.values()))
            .filter(|n| n.kind != EntryKind::Dir)
            .map(|n| n.id)
            .collect();
        let left = restore::sweep_own_temps(self.parts.work_tree(op), dirs, &known)?;
        if !left.unknown.is_empty() {
            let found = FoundFile::list(&[], &left.unknown);
            Recorder::new(self.parts).save_found(marker.op, &found, tree.1, tree)?;
            restore::drop_displaced(&self.parts.root, &left.unknown)?;
        }
        Ok(Swept {
            removed: left.removed + left.unknown.len(),
            kept: left.kept,
        })
    }
}

/// What [`Mover::sweep_leftovers`] did.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    /// Temporary files removed (after storing those the store lacked).
    pub(crate) removed: usize,
    /// The operation's names holding what the store cannot hold, left as they are.
    pub(crate) kept: Vec<Vec<u8>>,
}
