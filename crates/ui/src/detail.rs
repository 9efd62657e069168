//! The right-hand side: the selected snapshot's changed files, and one file's diff against
//! the snapshot's parent, the working tree or a marked snapshot, read into owned lines.

use snap_tree::display::path_shown;
use snap_tree::flat::Listed;
use snap_tree::{
    Change, DiffEntry, EntryKind, FileDiff, Node, ReadOnlyWorkspace, Snapshot, TreeDiff,
};

use crate::UiError;

/// What the selected file is compared with (`d` cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The snapshot's parent: what the snapshot changed.
    Parent,
    /// The working tree as it is now.
    WorkingTree,
    /// The snapshot marked with `m`.
    Marked,
}

impl Base {
    /// The next base `d` moves to; `Marked` only when a snapshot is marked.
    pub fn next(self, marked: bool) -> Base {
        match self {
            Base::Parent => Base::WorkingTree,
            Base::WorkingTree if marked => Base::Marked,
            Base::WorkingTree | Base::Marked => Base::Parent,
        }
    }

    /// How the diff's title names it.
    pub fn label(self) -> &'static str {
        match self {
            Base::Parent => "against its parent",
            Base::WorkingTree => "against the working tree",
            Base::Marked => "against the marked snapshot",
        }
    }
}

/// One changed file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRow {
    /// Workspace-relative path.
    pub path: Vec<u8>,
    /// What the snapshot did to it.
    pub change: Change,
    /// The path it was renamed from: the snapshot moved it, its content unchanged (shown
    /// `R old -> new`, and not also as a deletion of `old`).
    pub from: Option<Vec<u8>>,
}

/// One line of a diff as the UI colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffLineKind {
    /// A summary: sizes of binary content, a mode or kind change, "no difference".
    Note,
    /// `@@ ... @@`.
    Hunk,
    /// Only in the new version.
    Added,
    /// Only in the old version.
    Removed,
    /// In both.
    Context,
}

/// A line of a diff, escaped for the terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    /// How it is coloured.
    pub kind: DiffLineKind,
    /// The text.
    pub text: String,
}

/// The files `snapshot` changed against its parent.
pub fn changed_files(ws: &ReadOnlyWorkspace, snapshot: &Snapshot) -> Result<Vec<FileRow>, UiError> {
    let diff = ws.diff_of(snapshot)?;
    let renames = ws.renames_in(&diff)?;
    let paths = diff.entries.iter().map(|e| (e.path.as_slice(), e.change));
    Ok((snap_tree::flat::listed(paths, &renames).into_iter())
        .map(|l| match l {
            Listed::Path(path, change) => FileRow {
                path: path.to_vec(),
                change,
                from: None,
            },
            Listed::Renamed(r) => FileRow {
                path: r.to.clone(),
                change: Change::Added,
                from: Some(r.from.clone()),
            },
        })
        .collect())
}

/// `path` in `snapshot` against `base` (`marked` for [`Base::Marked`]), old side first: the
/// parent, the marked snapshot, or the snapshot itself when compared with the working tree.
pub fn file_diff(
    ws: &ReadOnlyWorkspace,
    snapshot: &Snapshot,
    path: &[u8],
    base: Base,
    marked: Option<&Snapshot>,
) -> Result<Vec<DiffLine>, UiError> {
    let paths = [path.to_vec()];
    let hex = snapshot.id.to_hex();
    let diff = match (base, marked) {
        (Base::WorkingTree, _) => ws.diff(Some(&hex), None, &paths)?,
        (Base::Marked, Some(m)) => ws.diff(Some(&m.id.to_hex()), Some(&hex), &paths)?,
        (Base::Parent | Base::Marked, _) => ws.diff_of(snapshot)?,
    };
    if let Some(lines) = renamed_lines(ws, &diff, path)? {
        return Ok(lines);
    }
    let Some(entry) = diff.entries.iter().find(|e| e.path == path) else {
        return Ok(vec![note("no difference")]);
    };
    entry_lines(ws, &diff, entry)
}

/// The lines of `path` when `diff` holds it as a rename: what it was renamed from, then its
/// diff against the file it left (none for the same content).
fn renamed_lines(
    ws: &ReadOnlyWorkspace,
    diff: &TreeDiff,
    path: &[u8],
) -> Result<Option<Vec<DiffLine>>, UiError> {
    let renames = ws.renames_in(diff)?;
    let Some(r) = renames.iter().find(|r| r.to == path) else {
        return Ok(None);
    };
    let side = |p: &[u8]| diff.entries.iter().find(|e| e.path == p);
    let (Some(old), Some(new)) = (side(&r.from), side(&r.to)) else {
        return Ok(None);
    };
    let moved = DiffEntry {
        path: r.to.clone(),
        change: Change::Modified,
        old: old.old,
        new: new.new,
    };
    let mut out = vec![note(&format!(
        "renamed from {} ({}% alike)",
        path_shown(&r.from),
        r.similarity
    ))];
    match ws.file_diff(diff, &moved)? {
        FileDiff::Text { lines, .. } if lines.is_empty() => out.push(note("no line differs")),
        _ => out.extend(entry_lines(ws, diff, &moved)?),
    }
    Ok(Some(out))
}

fn entry_lines(
    ws: &ReadOnlyWorkspace,
    diff: &TreeDiff,
    entry: &DiffEntry,
) -> Result<Vec<DiffLine>, UiError> {
    let mut out: Vec<DiffLine> = summary(entry.old.as_ref(), entry.new.as_ref())
        .into_iter()
        .map(|s| note(&s))
        .collect();
    match ws.file_diff(diff, entry)? {
        FileDiff::Binary { old_size, new_size } => {
            let size = |s: Option<u64>| s.map_or("absent".to_string(), |n| format!("{n} bytes"));
            out.push(note(&format!(
                "binary: {} -> {}",
                size(old_size),
                size(new_size)
            )));
        }
        FileDiff::Text { lines, .. } if lines.is_empty() && out.is_empty() => {
            out.push(note("no line differs"));
        }
        FileDiff::Text { lines, .. } => out.extend(lines.iter().map(|l| text_line(l))),
    }
    Ok(out)
}

/// A kind or mode change, said in words (the content's diff follows it).
fn summary(old: Option<&Node>, new: Option<&Node>) -> Option<String> {
    let (o, n) = (old?, new?);
    if o.kind != n.kind {
        return Some(format!("{} -> {}", kind_word(o.kind), kind_word(n.kind)));
    }
    match (o.mode, n.mode) {
        (Some(a), Some(b)) if a != b => Some(format!("mode {a:o} -> {b:o}")),
        _ => None,
    }
}

fn kind_word(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Executable => "executable",
        EntryKind::Symlink => "symlink",
        EntryKind::Dir => "directory",
    }
}

fn note(text: &str) -> DiffLine {
    DiffLine {
        kind: DiffLineKind::Note,
        text: text.to_string(),
    }
}

fn text_line(line: &str) -> DiffLine {
    let kind = match line.as_bytes().first() {
        Some(b'@') => DiffLineKind::Hunk,
        Some(b'+') => DiffLineKind::Added,
        Some(b'-') => DiffLineKind::Removed,
        _ => DiffLineKind::Context,
    };
    DiffLine {
        kind,
        // Tabs as spaces keep columns; other control characters are escaped, never obeyed.
        text: path_shown(line.replace('\t', "    ").as_bytes()),
    }
}

#[cfg(test)]
mod tests;
