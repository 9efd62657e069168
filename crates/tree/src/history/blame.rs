//! `blame`: which snapshot brought each line of a file, walking the file's history along the
//! snapshot's parent chain, newest first, with line diffs, until every line has its snapshot.
//! A restore's lines are credited to the restore (its content differs from its parent's).

use similar::{ChangeTag, TextDiff};

use crate::error::TreeError;
use crate::history::query::Reader;
use crate::snapshot::Snapshot;
use snap_store::EntryKind;

/// One line of a file and the snapshot that brought it.
#[derive(Clone, Debug)]
pub struct BlameLine {
    /// The line's bytes, without its line terminator.
    pub text: Vec<u8>,
    /// The newest snapshot along the chain in which the line is not in the parent's version.
    pub snapshot: Snapshot,
}

/// Lines still looking for their snapshot: each one's number in the file blamed (0-based),
/// and in the version being looked at.
struct Open {
    blamed: usize,
    here: usize,
}

impl Reader<'_> {
    pub(crate) fn blame(&self, at: &Snapshot, path: &[u8]) -> Result<Vec<BlameLine>, TreeError> {
        let content = self.read_file(at, path)?;
        if crate::diff::is_binary(&content) {
            return Err(TreeError::BinaryFile(
                String::from_utf8_lossy(path).into_owned(),
            ));
        }
        let lines: Vec<Vec<u8>> = split_lines(&content);
        let mut owner: Vec<Option<Snapshot>> = vec![None; lines.len()];
        let mut open: Vec<Open> = (0..lines.len())
            .map(|i| Open { blamed: i, here: i })
            .collect();
        let (mut current, mut text) = (at.clone(), content);
        while !open.is_empty() {
            let earlier = self.earlier_version(&current, path)?;
            let Some(before) = earlier.before else {
                for o in open.drain(..) {
                    owner[o.blamed] = Some(earlier.changed_in.clone());
                }
                break;
            };
            open = carry_back(&before.text, &text, open, &mut owner, &earlier.changed_in);
            (current, text) = (before.parent, before.text);
        }
        Ok(lines
            .into_iter()
            .zip(owner)
            .filter_map(|(text, snapshot)| {
                Some(BlameLine {
                    text,
                    snapshot: snapshot?,
                })
            })
            .collect())
    }

    /// Going back from `snapshot`: the oldest snapshot that still holds its version of
    /// `path` (the one that brought that version), with its parent's version when there is
    /// one. Snapshots that leave the file as it was are passed over without a diff.
    fn earlier_version(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Earlier, TreeError> {
        let mut here = snapshot.clone();
        let id = self.entry_of(snapshot, path)?.map(|n| n.id);
        loop {
            let start = |here| Earlier {
                changed_in: here,
                before: None,
            };
            let Some(parent) = self.parent_of(&here)? else {
                return Ok(start(here));
            };
            let entry = self.entry_of(&parent, path)?;
            let Some(entry) = entry.filter(|e| e.kind != EntryKind::Dir) else {
                return Ok(start(here));
            };
            if Some(entry.id) != id {
                let text = self.read_file(&parent, path)?;
                return Ok(Earlier {
                    changed_in: here,
                    before: Some(Before { parent, text }),
                });
            }
            here = parent;
        }
    }
}

/// What going back along the chain from a version of a file finds: the snapshot that
/// brought that version, and its parent's version unless the file was not in its parent (or
/// the parent is not in the store).
struct Earlier {
    changed_in: Snapshot,
    before: Option<Before>,
}

/// The version a snapshot's parent held.
struct Before {
    parent: Snapshot,
    text: Vec<u8>,
}

/// Credits to `current` the open lines that `current` added over `before`, and returns the
/// others, numbered as in `before`.
fn carry_back(
    before: &[u8],
    after: &[u8],
    open: Vec<Open>,
    owner: &mut [Option<Snapshot>],
    current: &Snapshot,
) -> Vec<Open> {
    let diff = TextDiff::from_lines(before, after);
    // For each line of `after`, its line in `before` when the diff keeps it.
    let mut from: Vec<Option<usize>> = Vec::new();
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Equal => from.push(change.old_index()),
            ChangeTag::Insert => from.push(None),
            ChangeTag::Delete => {}
        }
    }
    let mut still = Vec::with_capacity(open.len());
    for o in open {
        match from.get(o.here).copied().flatten() {
            Some(old) => still.push(Open {
                blamed: o.blamed,
                here: old,
            }),
            None => owner[o.blamed] = Some(current.clone()),
        }
    }
    still
}

/// `content`'s lines without their terminators (a last line without one counts).
fn split_lines(content: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = content.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if content.ends_with(b"\n") || content.is_empty() {
        lines.pop();
    }
    lines
}
