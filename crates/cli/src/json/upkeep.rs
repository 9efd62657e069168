//! The documents of store upkeep: log --stats, gc, delete, prune, verify, repair.

use serde::Serialize;

use super::SnapshotDoc;

/// The store's size (`log --stats`).
#[derive(Serialize)]
pub struct StoreStatsDoc {
    pub snapshots: u64,
    pub packs: usize,
    pub pack_bytes: u64,
    pub catalog_bytes: u64,
    pub store_bytes: u64,
    pub reclaimable_bytes: u64,
    /// Secret-looking paths history holds (`snap expunge --secrets` takes them out).
    pub secret_paths: Vec<String>,
    /// What files of at least `large_file_size` bytes cost: distinct contents, their
    /// sizes, and what their chunks take in packs.
    pub large_files: LargeCostDoc,
}

/// `log --stats`' `large_files`.
#[derive(Serialize)]
pub struct LargeCostDoc {
    pub threshold: u64,
    pub files: u64,
    pub bytes: u64,
    pub stored_bytes: u64,
}

/// `snap gc` (and the gc part of `delete --all`).
#[derive(Serialize)]
pub struct GcDoc {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub reclaimed_bytes: u64,
    pub packs_deleted: usize,
    pub packs_repacked: usize,
    pub objects_removed: usize,
    pub orphan_packs_deleted: usize,
    pub orphan_packs_kept: Vec<String>,
    pub tmp_files_removed: usize,
    /// Nothing the catalog names was dropped: unnamed packs hold history it lacks.
    pub held_back: bool,
}

/// `snap delete --all --yes`.
#[derive(Serialize)]
pub struct DeleteDoc {
    #[serde(flatten)]
    pub gc: GcDoc,
    pub removed_count: usize,
}

/// `snap prune`.
#[derive(Serialize)]
pub struct PruneDoc {
    pub dry_run: bool,
    pub removed: Vec<SnapshotDoc>,
    pub removed_count: usize,
    pub kept: usize,
}

/// `snap verify`.
#[derive(Serialize)]
pub struct VerifyDoc {
    pub ok: bool,
    pub read_data: bool,
    pub packs: usize,
    pub objects: usize,
    pub snapshots: usize,
    pub bytes_read: u64,
    pub problems: Vec<ProblemDoc>,
    /// Packs the catalog does not name that hold snapshots it lacks: not damage, but history
    /// only `snap repair` takes back (as `doctor` reports them).
    pub history_outside_catalog: Vec<String>,
    /// Store directories that hold nothing durable, found missing and made again.
    pub recreated: Vec<String>,
}

/// One thing `verify` found damaged.
#[derive(Serialize)]
pub struct ProblemDoc {
    pub what: String,
    pub pack: Option<String>,
    pub object: Option<String>,
    pub snapshots: Vec<u64>,
    pub paths: Vec<String>,
}

/// `snap repair`.
#[derive(Serialize)]
pub struct RepairDoc {
    pub packs: usize,
    pub damaged_packs: Vec<String>,
    /// Packs whose header alone had rotted, rewritten as the pack's name proves it was.
    pub headers_rewritten: Vec<String>,
    pub objects: usize,
    pub damaged_objects: usize,
    pub snapshots: usize,
    pub head: Option<SnapshotDoc>,
    /// HEAD and the redo stack are the old catalog's (else HEAD is the newest snapshot).
    pub history_kept: bool,
    pub redo: usize,
    pub old_catalog: Option<String>,
    /// Snapshot records found in packs the old catalog named (or dropped) that it no longer
    /// listed: pruned, and left out.
    pub snapshots_left_dropped: usize,
}
