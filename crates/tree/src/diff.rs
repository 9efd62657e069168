//! Line diffs between two versions of a file, and the line counts snapshots record.
//!
//! Text diffs use the `similar` crate (Myers with a deadline); a file whose first 8 KiB hold a
//! NUL byte, or that is larger than [`MAX_DIFF_BYTES`], is binary and summarized by size.

use similar::{ChangeTag, TextDiff};

/// Files larger than this are not line-diffed.
pub const MAX_DIFF_BYTES: usize = 8 << 20;
/// A save counts changed lines only when at most this many files changed.
pub const MAX_LINE_STAT_FILES: usize = 1000;
/// Lines of context around each hunk.
pub const CONTEXT_LINES: usize = 3;

/// True for content that is not diffed as text.
pub fn is_binary(content: &[u8]) -> bool {
    content.len() > MAX_DIFF_BYTES || content[..content.len().min(8192)].contains(&0)
}

/// A file's diff, ready to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileDiff {
    /// Unified hunks (without the `---`/`+++` header), one `String` per line.
    Text {
        /// Hunk headers and context, `-` and `+` lines, without line terminators.
        lines: Vec<String>,
        /// Lines only in the new version.
        added: u64,
        /// Lines only in the old version.
        removed: u64,
    },
    /// Binary content: sizes only (`None` where the side is absent).
    Binary {
        /// Length of the old version in bytes.
        old_size: Option<u64>,
        /// Length of the new version in bytes.
        new_size: Option<u64>,
    },
}

/// Diffs `old` against `new` (`None`: the file is absent on that side).
pub fn diff_files(old: Option<&[u8]>, new: Option<&[u8]>) -> FileDiff {
    let (a, b) = (old.unwrap_or_default(), new.unwrap_or_default());
    if is_binary(a) || is_binary(b) {
        return FileDiff::Binary {
            old_size: old.map(|c| c.len() as u64),
            new_size: new.map(|c| c.len() as u64),
        };
    }
    let diff = TextDiff::from_lines(a, b);
    let (added, removed) = count(&diff);
    let mut unified = diff.unified_diff();
    unified.context_radius(CONTEXT_LINES);
    let mut lines = Vec::new();
    for hunk in unified.iter_hunks() {
        let text = String::from_utf8_lossy(&hunk.to_string().into_bytes()).into_owned();
        lines.extend(text.lines().map(str::to_string));
    }
    FileDiff::Text {
        lines,
        added,
        removed,
    }
}

fn count(diff: &TextDiff<'_, '_, [u8]>) -> (u64, u64) {
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// Lines added and removed from `old` to `new`; zero for binary content.
pub fn line_counts(old: Option<&[u8]>, new: Option<&[u8]>) -> (u64, u64) {
    match diff_files(old, new) {
        FileDiff::Text { added, removed, .. } => (added, removed),
        FileDiff::Binary { .. } => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_diff_counts_and_hunks() {
        let d = diff_files(Some(b"a\nb\nc\n"), Some(b"a\nB\nc\nd\n"));
        match d {
            FileDiff::Text {
                lines,
                added,
                removed,
            } => {
                assert_eq!((added, removed), (2, 1));
                assert_eq!(lines[0], "@@ -1,3 +1,4 @@");
                assert!(lines.contains(&"-b".to_string()) && lines.contains(&"+B".to_string()));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(line_counts(None, Some(b"x\ny\n")), (2, 0));
        assert_eq!(line_counts(Some(b"x\n"), None), (0, 1));
    }

    #[test]
    fn binary_is_summarized() {
        assert_eq!(
            diff_files(Some(b"\0\x01"), Some(b"text")),
            FileDiff::Binary {
                old_size: Some(2),
                new_size: Some(4)
            }
        );
        assert!(!is_binary(b"plain text"));
    }
}

/// One side of a tree diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// A snapshot (`None`: before the first snapshot, an empty tree).
    Snapshot(Option<Box<crate::snapshot::Snapshot>>),
    /// The working tree as it is now.
    WorkingTree,
}

/// One changed path between two sides, with its entry on each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffEntry {
    /// Workspace-relative path, '/'-separated bytes.
    pub path: Vec<u8>,
    /// Added, modified or deleted, going from `from` to `to`.
    pub change: crate::Change,
    /// The entry on the `from` side; `None` when absent or a directory there.
    pub old: Option<crate::Node>,
    /// The entry on the `to` side; `None` when absent or a directory there.
    pub new: Option<crate::Node>,
}

impl DiffEntry {
    /// The entry for `path`, changed as `change`, between two flattened trees.
    pub fn between(
        old: &crate::FlatTree,
        new: &crate::FlatTree,
        path: Vec<u8>,
        change: crate::Change,
    ) -> DiffEntry {
        let file = |n: &&crate::Node| n.kind != snap_store::EntryKind::Dir;
        DiffEntry {
            old: old.get(&path).filter(file).copied(),
            new: new.get(&path).filter(file).copied(),
            path,
            change,
        }
    }
}

impl DiffEntry {
    /// The entry on the side the path exists, as rename pairing reads it: the old for a
    /// deletion, the new for an addition, none for a modification.
    fn present(&self) -> Option<crate::Node> {
        match self.change {
            crate::Change::Deleted => self.old,
            crate::Change::Added => self.new,
            crate::Change::Modified => None,
        }
    }
}

impl TreeDiff {
    /// The exact renames among the entries (see [`crate::flat::exact_renames`]; a
    /// workspace's `renames_in` finds similar ones too).
    pub fn renames(&self) -> Vec<crate::flat::Rename> {
        crate::flat::exact_renames(
            (self.entries.iter()).map(|e| (e.path.as_slice(), e.change, e.present())),
        )
    }
}

/// The changed files between two sides, in path order.
#[derive(Clone, Debug)]
pub struct TreeDiff {
    /// The side diffed from (by default HEAD).
    pub from: Side,
    /// The side diffed to (by default the working tree).
    pub to: Side,
    /// Changed non-directory paths in path order, limited to the paths asked for.
    pub entries: Vec<DiffEntry>,
}
