//! Renames in a change list: a path deleted and another added holding the same content id and
//! kind are one file moved, shown as `R old -> new` by every front end (`status`, `diff`,
//! `show`, the UI). Exact renames are free to find by content id; among what is left, a
//! deletion and an addition whose lines are at least half alike are a rename too, as git
//! scores it. The stored changes and the records' counts stay additions and deletions.

use std::collections::{HashMap, HashSet};

use snap_store::{EntryKind, ObjectId};

use super::{Change, Node};

/// git's threshold: a deletion and an addition at least this alike (percent) are a rename.
pub const SIMILAR_PERCENT: u8 = 50;
/// The largest file compared for a similar rename; larger ones pair only exactly.
pub const SIMILAR_MAX_BYTES: u64 = 1 << 20;
/// At most this many unpaired deletions and as many additions are compared (each pair once,
/// as git's `diff.renameLimit`); beyond, only exact renames are found.
pub const SIMILAR_MAX_FILES: usize = 100;
/// At most this many bytes are read, both sides together, to look for similar renames;
/// beyond, only exact renames are found.
pub const SIMILAR_MAX_TOTAL: u64 = 32 << 20;

/// One file moved: deleted at `from`, added at `to` with the same content or a similar one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    /// The path it left.
    pub from: Vec<u8>,
    /// The path it came to.
    pub to: Vec<u8>,
    /// How alike the two contents are, in percent: 100 for the same content.
    pub similarity: u8,
}

/// One line of a change list as a person reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed<'a> {
    /// A path's own change (an addition or deletion no rename paired, or a modification).
    Path(&'a [u8], Change),
    /// A deletion and an addition paired.
    Renamed(&'a Rename),
}

/// The exact renames among `changes`, each given as its path, its change, and its entry on
/// the side it exists (the old for a deletion, the new for an addition; others are ignored).
/// A deletion pairs with at most one addition of the same content id and kind, the one with
/// its file name first, else the first in path order. Empty files and directories never
/// pair: any two are alike, so a pairing would say nothing.
pub fn exact_renames<'a>(
    changes: impl IntoIterator<Item = (&'a [u8], Change, Option<Node>)>,
) -> Vec<Rename> {
    let mut gone: HashMap<(ObjectId, EntryKind), Vec<&[u8]>> = HashMap::new();
    let mut came: Vec<(&[u8], (ObjectId, EntryKind))> = Vec::new();
    for (path, change, node) in changes {
        let Some(key) = node.filter(|n| n.size > 0 && n.kind != EntryKind::Dir) else {
            continue;
        };
        let key = (key.id, key.kind);
        match change {
            Change::Deleted => gone.entry(key).or_default().push(path),
            Change::Added => came.push((path, key)),
            Change::Modified => {}
        }
    }
    let mut renames = Vec::new();
    for (to, key) in came {
        let Some(from) = gone
            .get_mut(&key)
            .and_then(|paths| take_likeliest(paths, to))
        else {
            continue;
        };
        renames.push(Rename {
            from: from.to_vec(),
            to: to.to_vec(),
            similarity: 100,
        });
    }
    renames
}

/// How alike two contents are, in percent, as git scores a rename: the bytes of the lines
/// both hold (each line as often as both hold it) over the larger content's length.
pub fn similarity(a: &[u8], b: &[u8]) -> u8 {
    score(&Lines::of(a), &Lines::of(b))
}

/// A content's lines counted, read once however many contents it is compared with.
struct Lines<'a> {
    len: usize,
    counts: HashMap<&'a [u8], usize>,
}

impl<'a> Lines<'a> {
    fn of(content: &'a [u8]) -> Lines<'a> {
        let mut counts: HashMap<&[u8], usize> = HashMap::new();
        for line in content.split_inclusive(|&c| c == b'\n') {
            *counts.entry(line).or_default() += 1;
        }
        Lines {
            len: content.len(),
            counts,
        }
    }
}

/// [`similarity`] of two counted contents.
fn score(a: &Lines<'_>, b: &Lines<'_>) -> u8 {
    let larger = a.len.max(b.len);
    if larger == 0 {
        return 100;
    }
    let (few, many) = match a.counts.len() <= b.counts.len() {
        true => (a, b),
        false => (b, a),
    };
    let shared: usize = (few.counts.iter())
        .map(|(line, n)| line.len() * (*n).min(many.counts.get(line).copied().unwrap_or(0)))
        .sum();
    (shared * 100 / larger) as u8
}

/// The similar renames between deleted and added contents (each a path and its bytes): every
/// pair at least [`SIMILAR_PERCENT`] alike, the most alike first (the same file name before
/// another on a tie), each path in one pair at most.
pub fn similar_renames(gone: &[(Vec<u8>, Vec<u8>)], came: &[(Vec<u8>, Vec<u8>)]) -> Vec<Rename> {
    let old: Vec<Lines<'_>> = gone.iter().map(|(_, c)| Lines::of(c)).collect();
    let new: Vec<Lines<'_>> = came.iter().map(|(_, c)| Lines::of(c)).collect();
    let mut pairs = Vec::new();
    for (g, (from, _)) in gone.iter().enumerate() {
        for (c, (to, _)) in came.iter().enumerate() {
            // What they share is at most the smaller: half the larger, or no rename.
            if old[g].len.min(new[c].len) * 100
                < old[g].len.max(new[c].len) * usize::from(SIMILAR_PERCENT)
            {
                continue;
            }
            let alike = score(&old[g], &new[c]);
            if alike >= SIMILAR_PERCENT {
                let other_name = file_name(from) != file_name(to);
                pairs.push((std::cmp::Reverse(alike), other_name, c, g));
            }
        }
    }
    pairs.sort();
    let (mut used_gone, mut used_came) = (HashSet::new(), HashSet::new());
    let mut renames = Vec::new();
    for (std::cmp::Reverse(similarity), _, c, g) in pairs {
        if used_gone.contains(&g) || used_came.contains(&c) {
            continue;
        }
        used_gone.insert(g);
        used_came.insert(c);
        renames.push(Rename {
            from: gone[g].0.clone(),
            to: came[c].0.clone(),
            similarity,
        });
    }
    renames
}

/// Removes and returns the deleted path `to` most likely came from: the one with the same
/// file name, else the first.
fn take_likeliest<'a>(paths: &mut Vec<&'a [u8]>, to: &[u8]) -> Option<&'a [u8]> {
    if paths.is_empty() {
        return None;
    }
    let at = (paths.iter())
        .position(|p| file_name(p) == file_name(to))
        .unwrap_or(0);
    Some(paths.remove(at))
}

fn file_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&c| c == b'/').next().unwrap_or(path)
}

/// `changes` (in path order) with `renames` folded in: each rename once, where its new path
/// stands, and neither of its halves on its own.
pub fn listed<'a>(
    changes: impl IntoIterator<Item = (&'a [u8], Change)>,
    renames: &'a [Rename],
) -> Vec<Listed<'a>> {
    let from: HashMap<&[u8], ()> = renames.iter().map(|r| (r.from.as_slice(), ())).collect();
    let to: HashMap<&[u8], &Rename> = renames.iter().map(|r| (r.to.as_slice(), r)).collect();
    let mut out = Vec::new();
    for (path, change) in changes {
        match change {
            Change::Deleted if from.contains_key(path) => {}
            Change::Added if to.contains_key(path) => out.push(Listed::Renamed(to[path])),
            _ => out.push(Listed::Path(path, change)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(byte: u8, size: u64) -> Option<Node> {
        Some(Node {
            kind: EntryKind::File,
            size,
            id: ObjectId([byte; 32]),
            mode: None,
        })
    }

    #[test]
    fn a_deleted_and_an_added_file_of_one_content_are_a_rename() {
        let changes = [
            (&b"a/old.txt"[..], Change::Deleted, node(1, 5)),
            (&b"b/new.txt"[..], Change::Added, node(1, 5)),
            (&b"c.txt"[..], Change::Added, node(2, 5)),
            (&b"empty"[..], Change::Deleted, node(3, 0)),
            (&b"empty2"[..], Change::Added, node(3, 0)),
        ];
        let renames = exact_renames(changes.iter().copied());
        assert_eq!(
            renames,
            vec![Rename {
                from: b"a/old.txt".to_vec(),
                to: b"b/new.txt".to_vec(),
                similarity: 100,
            }]
        );
        let paths = changes.iter().map(|(p, c, _)| (*p, *c));
        let shown = listed(paths, &renames);
        assert_eq!(shown.len(), 4);
        assert_eq!(shown[0], Listed::Renamed(&renames[0]));
        assert_eq!(shown[1], Listed::Path(b"c.txt", Change::Added));
    }

    #[test]
    fn a_copy_pairs_with_the_same_file_name_first() {
        let changes = [
            (&b"x/lib.rs"[..], Change::Deleted, node(1, 5)),
            (&b"y/main.rs"[..], Change::Deleted, node(1, 5)),
            (&b"z/main.rs"[..], Change::Added, node(1, 5)),
        ];
        let renames = exact_renames(changes.iter().copied());
        assert_eq!(renames.len(), 1);
        assert_eq!(renames[0].from, b"y/main.rs");
    }

    #[test]
    fn contents_half_alike_are_a_similar_rename() {
        assert_eq!(similarity(b"a\nb\nc\nd\n", b"a\nb\nc\nd\n"), 100);
        assert_eq!(similarity(b"a\nb\nc\nd\n", b"a\nb\nc\nX\n"), 75);
        assert_eq!(similarity(b"a\nb\n", b"x\ny\n"), 0);
        let gone = [
            (b"old.rs".to_vec(), b"one\ntwo\nthree\nfour\n".to_vec()),
            (b"other.rs".to_vec(), b"nothing\nalike\n".to_vec()),
        ];
        let came = [
            (b"new.rs".to_vec(), b"one\ntwo\nthree\nFIVE\n".to_vec()),
            (b"fresh.rs".to_vec(), b"unrelated\n".to_vec()),
        ];
        let renames = similar_renames(&gone, &came);
        assert_eq!(renames.len(), 1, "{renames:?}");
        assert_eq!(
            (renames[0].from.as_slice(), renames[0].to.as_slice()),
            (&b"old.rs"[..], &b"new.rs"[..])
        );
        assert!(renames[0].similarity >= SIMILAR_PERCENT && renames[0].similarity < 100);
    }
}
