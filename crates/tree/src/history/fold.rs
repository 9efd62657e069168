//! Autosaves folded for a reader: `snap log` shows the autosaves of one turn (a `snap exec`
//! run's, a watcher's burst) as the line of the snapshot above them, with a count, so that
//! one run reads as one line. Nothing is hidden from `--json`, `-v` or `--all`.

use snap_store::SnapshotRecord;

use crate::snapshot::LogEntry;

/// The meta key marking an autosave (`autosave=1`), which a watcher's saves carry.
pub const AUTOSAVE_KEY: &str = "autosave";

/// One row of a folded log: a position in the rows given, and how many autosaves just
/// below it were folded into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Folded {
    /// The position of the row shown.
    pub at: usize,
    /// The autosaves folded into it.
    pub autosaves: usize,
}

/// True for a watcher's autosave: meta `autosave=1`, or `source=watch` (how autosaves were
/// marked before).
pub fn is_autosave(record: &SnapshotRecord) -> bool {
    (record.meta.iter())
        .any(|(k, v)| (k == AUTOSAVE_KEY && v == "1") || (k == "source" && v == "watch"))
}

/// Whether a listing folds autosaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Autosaves {
    /// Into the line above them (`snap log`).
    Folded,
    /// Each on its own line (`snap log -v`, `--all`).
    Shown,
}

/// The rows of `entries` (newest first) a log shows: with [`Autosaves::Folded`], each
/// autosave goes into the row above it when both are of one session and turn and stand alike
/// against HEAD (HEAD itself is never folded away). Autosaves of no session fold only into
/// an autosave, so a save of one's own never swallows them.
pub fn fold_autosaves(entries: &[LogEntry], autosaves: Autosaves) -> Vec<Folded> {
    let mut rows: Vec<Folded> = Vec::new();
    for (at, entry) in entries.iter().enumerate() {
        let fold = autosaves == Autosaves::Folded;
        match rows.last_mut() {
            Some(row) if fold && folds_into(entry, &entries[row.at]) => row.autosaves += 1,
            _ => rows.push(Folded { at, autosaves: 0 }),
        }
    }
    rows
}

/// True when `entry` is an autosave that goes into the line of `shown`, the row above it.
fn folds_into(entry: &LogEntry, shown: &LogEntry) -> bool {
    let (this, above) = (&entry.snapshot.record, &shown.snapshot.record);
    let same_turn = this.session == above.session && this.step == above.step;
    let same_standing = entry.redoable == shown.redoable && entry.abandoned == shown.abandoned;
    is_autosave(this)
        && !entry.is_head
        && same_turn
        && same_standing
        && (this.session.is_some() || is_autosave(above))
}

#[cfg(test)]
mod tests {
    use snap_store::{ChangeStats, ObjectId, SnapshotKind, SnapshotRecord};

    use super::{Autosaves, Folded, fold_autosaves};
    use crate::snapshot::{LogEntry, Snapshot};

    fn entry(seq: u64, session: Option<&str>, autosave: bool, is_head: bool) -> LogEntry {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seq.to_le_bytes());
        let meta = match autosave {
            true => vec![("autosave".to_string(), "1".to_string())],
            false => Vec::new(),
        };
        let record = SnapshotRecord {
            seq,
            root: ObjectId(bytes),
            parent: None,
            time_ns: seq as i64,
            kind: SnapshotKind::Save,
            message: String::new(),
            step: session.map(|_| 1),
            session: session.map(str::to_owned),
            meta,
            stats: ChangeStats::default(),
        };
        LogEntry {
            snapshot: Snapshot {
                id: ObjectId(bytes),
                record,
            },
            is_head,
            redoable: false,
            abandoned: false,
        }
    }

    #[test]
    fn a_runs_autosaves_fold_into_its_last_save() {
        let s = Some("exec-sh-1");
        let rows = [
            entry(5, s, false, true),
            entry(4, s, true, false),
            entry(3, s, true, false),
            entry(2, None, false, false),
        ];
        let want = [
            Folded {
                at: 0,
                autosaves: 2,
            },
            Folded {
                at: 3,
                autosaves: 0,
            },
        ];
        assert_eq!(fold_autosaves(&rows, Autosaves::Folded), want);
        assert_eq!(fold_autosaves(&rows, Autosaves::Shown).len(), 4);
    }

    #[test]
    fn head_and_saves_of_ones_own_are_never_folded_away() {
        let s = Some("exec-sh-1");
        let rows = [
            entry(4, s, false, false),
            entry(3, s, true, true),
            entry(2, None, false, false),
            entry(1, None, true, false),
        ];
        let shown: Vec<usize> = (fold_autosaves(&rows, Autosaves::Folded).iter())
            .map(|f| f.at)
            .collect();
        assert_eq!(shown, [0, 1, 2, 3]);
    }
}
