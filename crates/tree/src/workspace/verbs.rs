//! The verbs of [`Workspace`]: each a few lines handing the work to its phase (reading
//! history, capturing, recording, moving, upkeep), so that the phases never meet but
//! through the parts they borrow.

use super::Workspace;
use crate::capture::save::SaveOutcome;
use crate::error::TreeError;
use crate::history::sessions::Told;
use crate::moves::MoveOutcome;
use crate::moves::RevertOf;
use crate::moves::RevertOutcome;
use crate::parts::Run;
use crate::record::SaveOptions;
use crate::snapshot::Recovered;
use crate::upkeep::expunge::ExpungeAsk;
use crate::upkeep::expunge::ExpungeOutcome;
use snap_store::GcReport;
use snap_store::ObjectId;
use snap_store::PruneReport;
use snap_store::Retention;

impl Workspace {
    /// Starts the next turn of `session` and returns its number.
    pub fn start_turn(&self, session: &str) -> Result<u64, TreeError> {
        self.reader().start_turn(session)
    }

    /// Records that `session` was told about `told`.
    pub fn set_told(&self, session: &str, told: Told) -> Result<(), TreeError> {
        self.reader().set_told(session, told)
    }

    /// Snapshots the working tree if it differs from HEAD (or always, with `allow_empty`).
    pub fn save(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.snapshotter().save(opts)
    }

    /// Records a snapshot of an empty tree as HEAD's child, reading and touching no file:
    /// the empty baseline a new store can start from (as `git commit --allow-empty` on an
    /// empty index). The files on disk are then unsaved changes against it: the next save
    /// records them, and a move back to it saves them first, so nothing is lost.
    pub fn save_empty_tree(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.snapshotter().save_empty_tree(opts)
    }

    /// Makes the working tree (or only `paths`) match `reference`, recorded as a new snapshot
    /// of kind `restore` so that `undo` returns to the state before it.
    pub fn restore(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<MoveOutcome, TreeError> {
        self.mover().restore(reference, paths, run)
    }

    /// Takes back what `of` changed, only at `paths` if any are given: each path the change
    /// touched that still holds what it left gets its earlier state back (content, mode,
    /// kind; what the change created goes away), each file changed since is a conflict. A
    /// snapshot whose parent is no longer in the store is refused.
    pub fn revert(
        &self,
        of: RevertOf<'_>,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<RevertOutcome, TreeError> {
        self.mover().revert(of, paths, run)
    }

    /// Moves HEAD `n` snapshots back and makes the working tree match. Unsaved changes are
    /// saved first (as an `auto-before-undo` snapshot, which then counts as the first step).
    pub fn undo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().undo(n, run)
    }

    /// Moves HEAD back to `target`, an ancestor of HEAD (or HEAD itself, which then only
    /// puts aside unsaved changes), as an undo of that many steps: unsaved changes are saved
    /// first, and redo comes back the same way.
    pub fn undo_to(&self, target: &ObjectId, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().undo_to(target, run)
    }

    /// Moves HEAD `n` snapshots forward along the redo stack. Unsaved changes are saved first
    /// as an `auto-before-redo` snapshot (kept, shown by `log --all`), leaving the stack whole.
    pub fn redo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().redo(n, run)
    }

    /// Finishes interrupted operations (already done by opening); returns what was finished.
    pub fn recover_now(&mut self) -> Result<Vec<Recovered>, TreeError> {
        let now = self.mover().recover()?;
        self.recovered.extend(now);
        Ok(self.recovered.clone())
    }

    /// Drops snapshots outside `policy` (HEAD, the undo chain and the redo stack stay).
    pub fn prune(&self, policy: &Retention, run: Run) -> Result<PruneReport, TreeError> {
        self.upkeep().prune(policy, run)
    }

    /// Reclaims the space of objects no snapshot references.
    pub fn gc(&self) -> Result<GcReport, TreeError> {
        self.upkeep().gc()
    }

    /// Removes every snapshot and reclaims their space; the working tree is not touched.
    pub fn delete_all(&self) -> Result<(usize, GcReport), TreeError> {
        self.upkeep().delete_all()
    }

    /// Takes `ask.paths` out of history (see the module's documentation). Refused while
    /// pack files the catalog does not name may hold history: a purge would delete them.
    pub fn expunge(&self, ask: ExpungeAsk<'_>, run: Run) -> Result<ExpungeOutcome, TreeError> {
        self.upkeep().expunge(ask, run)
    }
}
