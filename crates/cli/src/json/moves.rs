//! The documents of the moves: undo, redo, restore (and a pending one), revert, expunge.

use serde::Serialize;
use snap_tree::secrets::SecretHit;
use snap_tree::{ExpungeOutcome, Marker, MoveOutcome, PurgeReport, RevertOutcome};

use super::{ChangeDoc, SnapshotDoc, changes};
use crate::commands::expunge_remote::RemoteDone;
use crate::render::path_str;

/// An interrupted move waiting for `snap recover`.
#[derive(Serialize)]
pub struct PendingDoc {
    pub op: &'static str,
    pub target: String,
}

impl From<&Marker> for PendingDoc {
    fn from(m: &Marker) -> PendingDoc {
        PendingDoc {
            op: m.op.as_str(),
            target: m.head.to_hex(),
        }
    }
}

/// `snap undo`, `redo`, `restore` and their `--dry-run`.
#[derive(Serialize)]
pub struct MoveDoc {
    pub op: &'static str,
    pub dry_run: bool,
    pub head: Option<SnapshotDoc>,
    pub target: SnapshotDoc,
    pub created: Option<SnapshotDoc>,
    pub auto_saved: Option<SnapshotDoc>,
    pub had_unsaved_changes: bool,
    pub passed: Vec<SnapshotDoc>,
    pub passed_count: usize,
    pub changes: Vec<ChangeDoc>,
    pub kept: Vec<String>,
}

impl From<&MoveOutcome> for MoveDoc {
    fn from(o: &MoveOutcome) -> MoveDoc {
        MoveDoc {
            op: o.op.as_str(),
            dry_run: o.dry_run,
            head: (!o.dry_run).then(|| SnapshotDoc::from(&o.target)),
            target: SnapshotDoc::from(&o.target),
            created: o.created.as_ref().map(SnapshotDoc::from),
            auto_saved: o.auto_saved.as_ref().map(SnapshotDoc::from),
            had_unsaved_changes: o.was_dirty,
            passed: o.passed.iter().map(SnapshotDoc::from).collect(),
            passed_count: o.passed.len(),
            changes: changes(&o.changes),
            kept: o.kept.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap revert`: the restore that took the change back (`op` is `revert`), the snapshot
/// whose change it was and the state before it, and the files left alone as changed since.
#[derive(Serialize)]
pub struct RevertDoc {
    #[serde(flatten)]
    pub moved: MoveDoc,
    pub reverted: SnapshotDoc,
    pub before: SnapshotDoc,
    pub conflicts: Vec<String>,
}

impl From<&RevertOutcome> for RevertDoc {
    fn from(o: &RevertOutcome) -> RevertDoc {
        let mut moved = MoveDoc::from(&o.moved);
        moved.op = "revert";
        RevertDoc {
            moved,
            reverted: SnapshotDoc::from(&o.reverted),
            before: SnapshotDoc::from(&o.before),
            conflicts: o.conflicts.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap expunge`: the snapshots given new ids, what was taken out by path, the paths
/// excluded from now on, the purge, and (`--secrets`) what looked secret.
#[derive(Serialize)]
pub struct ExpungeDoc {
    pub dry_run: bool,
    pub renamed: Vec<RenamedDoc>,
    pub paths: Vec<ExpungedPathDoc>,
    pub excluded: Vec<String>,
    pub purge: Option<PurgeDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<SecretDoc>>,
    /// What the expunge did on each remote it rewrote.
    pub remotes: Vec<RemoteDone>,
}

#[derive(Serialize)]
pub struct RenamedDoc {
    pub seq: u64,
    pub old: String,
    pub new: String,
    pub held: bool,
}

#[derive(Serialize)]
pub struct ExpungedPathDoc {
    pub path: String,
    pub versions: usize,
    pub bytes: u64,
    pub files: usize,
}

#[derive(Serialize)]
pub struct PurgeDoc {
    pub packs_rewritten: usize,
    pub objects_removed: usize,
    pub objects_reencoded: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

#[derive(Serialize)]
pub struct SecretDoc {
    pub path: String,
    pub why: String,
}

impl ExpungeDoc {
    pub fn new(
        o: &ExpungeOutcome,
        secrets: Option<&Vec<SecretHit>>,
        remotes: &[RemoteDone],
    ) -> ExpungeDoc {
        ExpungeDoc {
            remotes: remotes.to_vec(),
            dry_run: o.dry_run,
            renamed: (o.renamed.iter())
                .map(|r| RenamedDoc {
                    seq: r.seq,
                    old: r.old.to_hex(),
                    new: r.new.to_hex(),
                    held: r.held,
                })
                .collect(),
            paths: (o.taken.iter())
                .map(|(p, t)| ExpungedPathDoc {
                    path: path_str(p),
                    versions: t.versions.len(),
                    bytes: t.bytes,
                    files: t.files.len(),
                })
                .collect(),
            excluded: o.excluded.iter().map(|p| path_str(p)).collect(),
            purge: o.purge.as_ref().map(PurgeDoc::from),
            secrets: secrets.map(|hits| hits.iter().map(SecretDoc::from).collect()),
        }
    }
}

impl From<&PurgeReport> for PurgeDoc {
    fn from(p: &PurgeReport) -> PurgeDoc {
        PurgeDoc {
            packs_rewritten: p.packs_rewritten,
            objects_removed: p.objects_removed,
            objects_reencoded: p.objects_reencoded,
            bytes_before: p.bytes_before,
            bytes_after: p.bytes_after,
        }
    }
}

impl From<&SecretHit> for SecretDoc {
    fn from(h: &SecretHit) -> SecretDoc {
        SecretDoc {
            path: path_str(&h.path),
            why: h.why.clone(),
        }
    }
}
