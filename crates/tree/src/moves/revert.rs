//! `revert`: what one snapshot (or one turn) changed, taken back, keeping everything after
//! it. It is a restore of some paths from the state before, recorded the same way (meta
//! `revert=<id>`), so it is undoable.
//!
//! The paths it changed are found between the two stored trees; each is taken back only if
//! the working tree still holds there what the snapshot left (docs/SAFETY.md: a path changed
//! since is a conflict, left alone). That check runs after the dirty tree is saved first,
//! under the same store lock as the move, on a capture that walked the whole tree (never
//! from a change source's answer), and each path it would take back is then read again
//! from the disk.

use super::MoveOutcome;
use super::steps::Unfold;
use crate::capture::cascade::Heed;
use crate::error::TreeError;
use crate::flat::{self, FlatTree, Node, UNBUILT};
use crate::history::History;
use crate::history::query::Reader;
use crate::moves::Mover;
use crate::parts::Run;
use crate::record::SaveOptions;
use crate::restore;
use crate::snapshot::Snapshot;
use snap_store::EntryKind;

/// What to take back.
#[derive(Clone, Copy, Debug)]
pub enum RevertOf<'a> {
    /// The change one snapshot made against its parent.
    Snapshot(&'a str),
    /// The change of the whole turn holding this snapshot.
    Turn(&'a str),
}

/// The result of a revert (or of its preview).
#[derive(Clone, Debug)]
pub struct RevertOutcome {
    /// The restore that took the change back; its `changes` are the paths reverted.
    pub moved: MoveOutcome,
    /// The snapshot whose change was taken back (a turn's newest).
    pub reverted: Snapshot,
    /// The state before it, whose content the reverted paths got back.
    pub before: Snapshot,
    /// Files the change touched that changed again since: left as they are, in path order.
    pub conflicts: Vec<Vec<u8>>,
}

/// The span a revert takes back: the change from `before` to `after`, and how to name it.
struct Span {
    before: Snapshot,
    after: Snapshot,
    message: String,
}

/// The paths a revert writes and the files it leaves alone.
struct Sorted {
    revert: Vec<Vec<u8>>,
    conflicts: Vec<Vec<u8>>,
}

impl Mover<'_> {
    pub(crate) fn revert(
        &self,
        of: RevertOf<'_>,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<RevertOutcome, TreeError> {
        self.parts.observed(self.revert_inner(of, paths, run))
    }

    fn revert_inner(
        &self,
        of: RevertOf<'_>,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<RevertOutcome, TreeError> {
        let span = self.revert_span(of)?;
        let units = self.changed_units(&span, paths)?;
        let head = Reader::new(self.parts).head()?;
        // Walked whole, never read from a change source's answer: which paths are unchanged
        // since the change is what this move decides.
        let unfold = (Unfold::Along(&units), Heed::Walk);
        let start = self.restore_start(self.parts.writer(run), head.as_ref(), unfold)?;
        let after = self.unfold_units(&span, &units)?;
        let sorted = self.sort_on_disk(&units, &start.cap.flat, &after)?;
        let target = self.restore_paths(&start, head.as_ref(), &span.before, &sorted.revert)?;
        let opts = SaveOptions {
            message: span.message.clone(),
            meta: vec![("revert".to_string(), span.after.id.to_hex())],
            ..SaveOptions::default()
        };
        let moved = self.finish_restore(run, (head, start), target, span.before.clone(), &opts)?;
        Ok(RevertOutcome {
            moved,
            reverted: span.after,
            before: span.before,
            conflicts: sorted.conflicts,
        })
    }

    /// The change `of` names: a snapshot against its parent, or a turn from the state before
    /// it to its newest snapshot on that line.
    fn revert_span(&self, of: RevertOf<'_>) -> Result<Span, TreeError> {
        let history: History = Reader::new(self.parts).history()?;
        match of {
            RevertOf::Snapshot(reference) => {
                let after = Reader::new(self.parts).resolve(reference)?;
                let seq = format!("#{}", after.record.seq);
                let item = history.get(&after.id).ok_or(TreeError::NoSnapshots)?;
                let parent = history.parent(item);
                let before = parent.ok_or_else(|| TreeError::ParentPruned(seq.clone()))?;
                Ok(Span {
                    before: before.snapshot.clone(),
                    message: format!("revert {seq}"),
                    after,
                })
            }
            RevertOf::Turn(reference) => {
                let asked = Reader::new(self.parts).resolve(reference)?;
                let turn = history.turn_of(&asked.id).map_err(|e| match e {
                    TreeError::NothingToUndo(why) => TreeError::NothingToRevert(why),
                    e => e,
                })?;
                let (before, after) = (
                    Reader::new(self.parts).snapshot(turn.before)?,
                    Reader::new(self.parts).snapshot(turn.last)?,
                );
                let message = format!(
                    "revert turn {} of {} (#{}..#{})",
                    turn.step, turn.session, before.record.seq, after.record.seq
                );
                Ok(Span {
                    before,
                    after,
                    message,
                })
            }
        }
    }

    /// [`sort_units`], then each path it would take back read again from the disk, byte by
    /// byte as the guard reads it: one that no longer holds what the change left there
    /// (written since in a way the capture did not see) is a conflict, left as it is, and a
    /// directory holding one is taken back through what is inside it.
    fn sort_on_disk(
        &self,
        units: &[Vec<u8>],
        current: &FlatTree,
        after: &FlatTree,
    ) -> Result<Sorted, TreeError> {
        let sorted = sort_units(units, current, after);
        let wanted = (sorted.revert.iter()).flat_map(|unit| {
            let within = flat::within(after, unit).map(|(p, n)| (p.as_slice(), Some(n)));
            let gone = (!after.contains_key(unit)).then_some((unit.as_slice(), None));
            within.chain(gone)
        });
        let differ = restore::differing(&self.parts.root, &self.parts.store, wanted)?;
        if differ.is_empty() {
            return Ok(sorted);
        }
        let mut seen = current.clone();
        for path in &differ {
            mark_changed(&mut seen, path, &sorted.revert);
        }
        Ok(sort_units(units, &seen, after))
    }

    /// Both sides of the change, listed along `units`.
    fn unfold_units(&self, span: &Span, units: &[Vec<u8>]) -> Result<FlatTree, TreeError> {
        Ok(flat::unfold_along(
            &self.parts.store,
            &span.after.record.root,
            units,
        )?)
    }

    /// Every path the change touched, in path order, within `paths` if any are given: each
    /// file, link or special entry that differs, and each directory on one side only (taken
    /// back whole when nothing changed under it since, else through what is inside it).
    fn changed_units(&self, span: &Span, paths: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TreeError> {
        let (before, after) = flat::unfold_pair(
            &self.parts.store,
            &span.before.record.root,
            &span.after.record.root,
        )?;
        let mut units: Vec<Vec<u8>> = (before.keys().chain(after.keys()))
            .filter(|p| is_unit(before.get(*p), after.get(*p)))
            .filter(|p| paths.is_empty() || paths.iter().any(|q| flat::is_within(p, q)))
            .cloned()
            .collect();
        units.sort_unstable();
        units.dedup();
        if units.is_empty() {
            let mut what = format!("#{}", span.after.record.seq);
            if !paths.is_empty() {
                what.push_str(" at the paths given");
            }
            what.push_str(" changed no file");
            return Err(TreeError::NothingToRevert(what));
        }
        Ok(units)
    }
}

/// Whether a path is one a change touched: a non-directory that differs, or a directory on
/// one side only.
fn is_unit(before: Option<&Node>, after: Option<&Node>) -> bool {
    let dir = |n: Option<&Node>| n.is_some_and(|n| n.kind == EntryKind::Dir);
    match (dir(before), dir(after)) {
        (true, true) => false,
        (true, false) | (false, true) => true,
        (false, false) => !same_entry(before, after),
    }
}

/// Whether two entries are the same: both absent, or of one kind, content and mode. A
/// directory not yet built has no id to compare and is never the same.
fn same_entry(a: Option<&Node>, b: Option<&Node>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.kind == b.kind
                && a.id == b.id
                && a.id != UNBUILT
                && !flat::modes_differ(a.mode, b.mode)
        }
        _ => false,
    }
}

/// Splits the touched paths into those the working tree `current` still holds as the change
/// left them (`after`), and the files changed since. A path inside one already taken back
/// goes with it; a directory changed since is taken back through what is inside it.
fn sort_units(units: &[Vec<u8>], current: &FlatTree, after: &FlatTree) -> Sorted {
    let mut sorted = Sorted {
        revert: Vec::new(),
        conflicts: Vec::new(),
    };
    for path in units {
        if sorted
            .revert
            .last()
            .is_some_and(|r| flat::is_within(path, r))
        {
            continue;
        }
        let (now, left) = (current.get(path), after.get(path));
        if !under_a_file(current, path) && same_entry(now, left) {
            sorted.revert.push(path.clone());
        } else if left.is_none_or(|n| n.kind != EntryKind::Dir) {
            sorted.conflicts.push(path.clone());
        }
    }
    sorted
}

/// Marks `path` in `seen` as holding something other than what any snapshot holds, and
/// each directory above it, up to the unit of `units` holding it, as changed below.
fn mark_changed(seen: &mut FlatTree, path: &[u8], units: &[Vec<u8>]) {
    let changed = |kind| Node {
        kind,
        size: 0,
        id: UNBUILT,
        mode: None,
    };
    let kind = (seen.get(path)).map_or(EntryKind::File, |n| match n.kind {
        EntryKind::Dir => EntryKind::File,
        kind => kind,
    });
    seen.insert(path.to_vec(), changed(kind));
    let Some(unit) = units.iter().find(|u| flat::is_within(path, u)) else {
        return;
    };
    let mut up = flat::split(path).0;
    while flat::is_within(up, unit) && !up.is_empty() {
        if seen.get(up).is_some_and(|n| n.kind == EntryKind::Dir) {
            seen.insert(up.to_vec(), changed(EntryKind::Dir));
        }
        up = flat::split(up).0;
    }
}

/// Whether something other than a directory now stands above `path`.
fn under_a_file(current: &FlatTree, path: &[u8]) -> bool {
    let mut up = flat::split(path).0;
    while !up.is_empty() {
        if current.get(up).is_some_and(|n| n.kind != EntryKind::Dir) {
            return true;
        }
        up = flat::split(up).0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use snap_store::ObjectId;

    fn file(byte: u8) -> Node {
        Node {
            kind: EntryKind::File,
            size: 1,
            id: ObjectId([byte; 32]),
            mode: Some(0o644),
        }
    }

    fn dir(byte: u8) -> Node {
        Node {
            kind: EntryKind::Dir,
            id: ObjectId([byte; 32]),
            size: 0,
            mode: Some(0o755),
        }
    }

    fn tree(entries: &[(&str, Node)]) -> FlatTree {
        (entries.iter())
            .map(|(p, n)| (p.as_bytes().to_vec(), *n))
            .collect()
    }

    fn names(paths: &[Vec<u8>]) -> Vec<&str> {
        (paths.iter())
            .map(|p| std::str::from_utf8(p).unwrap_or("?"))
            .collect()
    }

    #[test]
    fn a_unit_is_a_differing_file_or_a_directory_on_one_side() {
        assert!(is_unit(Some(&file(1)), Some(&file(2))));
        assert!(!is_unit(Some(&file(1)), Some(&file(1))));
        assert!(is_unit(None, Some(&file(1))));
        assert!(is_unit(None, Some(&dir(1))));
        assert!(is_unit(Some(&file(1)), Some(&dir(1))));
        assert!(!is_unit(Some(&dir(1)), Some(&dir(2))));
        let mut chmod = file(1);
        chmod.mode = Some(0o755);
        assert!(is_unit(Some(&file(1)), Some(&chmod)));
    }

    #[test]
    fn paths_still_as_left_revert_and_changed_files_conflict() {
        let units: Vec<Vec<u8>> = ["a", "b", "gone", "new", "new/x", "new/y"]
            .map(|p| p.as_bytes().to_vec())
            .into();
        let after = tree(&[
            ("a", file(1)),
            ("b", file(2)),
            ("new", dir(9)),
            ("new/x", file(3)),
            ("new/y", file(4)),
        ]);
        // `b` changed again since; `new` got a file since, so it goes file by file.
        let current = tree(&[
            ("a", file(1)),
            ("b", file(7)),
            ("new", dir(8)),
            ("new/x", file(3)),
            ("new/y", file(4)),
            ("new/z", file(5)),
        ]);
        let sorted = sort_units(&units, &current, &after);
        assert_eq!(names(&sorted.revert), ["a", "gone", "new/x", "new/y"]);
        assert_eq!(names(&sorted.conflicts), ["b"]);
    }

    #[test]
    fn a_directory_unchanged_since_goes_whole() {
        let units: Vec<Vec<u8>> = ["new", "new/x"].map(|p| p.as_bytes().to_vec()).into();
        let after = tree(&[("new", dir(9)), ("new/x", file(3))]);
        let sorted = sort_units(&units, &after.clone(), &after);
        assert_eq!(names(&sorted.revert), ["new"]);
        assert!(sorted.conflicts.is_empty());
    }

    #[test]
    fn a_path_under_a_file_now_is_a_conflict() {
        let units: Vec<Vec<u8>> = ["d/f"].map(|p| p.as_bytes().to_vec()).into();
        let current = tree(&[("d", file(1))]);
        let sorted = sort_units(&units, &current, &FlatTree::new());
        assert_eq!(names(&sorted.conflicts), ["d/f"]);
    }
}
