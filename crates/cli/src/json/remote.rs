//! The documents of the remote commands (docs/JSON.md, Remotes): `remote add|remove|list`,
//! `push`, `pull`, `clone`, `gc --remote` and `verify --remote`. Built by
//! `commands/remote.rs` from the counts its steps return.

use serde::Serialize;

use super::SnapshotDoc;

/// `snap remote add NAME URL`.
#[derive(Serialize)]
pub struct RemoteAddedDoc {
    pub name: String,
    pub url: String,
    pub encrypted: bool,
}

/// `snap remote key add [REMOTE]`.
#[derive(Serialize)]
pub struct RemoteKeyAddedDoc {
    pub remote: String,
    pub added: String,
}

/// `snap remote key list [REMOTE]`.
#[derive(Serialize)]
pub struct RemoteKeysDoc {
    pub remote: String,
    pub keys: Vec<RemoteKeyDoc>,
}

/// One key object.
#[derive(Serialize)]
pub struct RemoteKeyDoc {
    pub name: String,
    pub created_ns: i64,
    pub kdf: String,
    pub m_kib: u32,
    pub t: u32,
    pub p: u32,
}

/// `snap remote key remove NAME [REMOTE]`.
#[derive(Serialize)]
pub struct RemoteKeyRemovedDoc {
    pub remote: String,
    pub removed: String,
}

/// `snap remote encrypt [REMOTE]`.
#[derive(Serialize)]
pub struct RemoteEncryptedDoc {
    pub remote: String,
    pub copied: usize,
    pub bytes: u64,
    pub deleted: usize,
}

/// `snap remote remove NAME`.
#[derive(Serialize)]
pub struct RemoteRemovedDoc {
    pub removed: String,
}

/// `snap remote list`.
#[derive(Serialize)]
pub struct RemoteListDoc {
    pub remotes: Vec<RemoteEntryDoc>,
}

#[derive(Serialize)]
pub struct RemoteEntryDoc {
    pub name: String,
    pub url: String,
    pub default: bool,
    pub encrypted: bool,
}

/// `snap push`.
#[derive(Serialize)]
pub struct PushDoc {
    pub remote: String,
    pub workspace: String,
    pub up_to_date: bool,
    pub objects: usize,
    pub local_bytes: u64,
    pub packs: usize,
    pub bytes: u64,
    pub records: usize,
    #[serde(rename = "ref")]
    pub ref_n: Option<u64>,
    pub repaired: Vec<String>,
    pub expunged: usize,
    pub records_deleted: usize,
}

/// `snap pull`.
#[derive(Serialize)]
pub struct PullDoc {
    pub remote: String,
    pub name: String,
    pub snapshots: usize,
    pub bytes: u64,
    pub packs: usize,
    pub refused: usize,
}

/// `snap gc --remote`.
#[derive(Serialize)]
pub struct RemoteGcDoc {
    pub remote: String,
    pub refs_deleted: usize,
    pub marked: usize,
    pub deleted: usize,
    pub bytes_deleted: u64,
    pub rescued: usize,
    pub waiting: usize,
}

/// `snap verify --remote`.
#[derive(Serialize)]
pub struct RemoteVerifyDoc {
    pub ok: bool,
    pub remote: String,
    pub read_data: bool,
    pub workspaces: usize,
    pub snapshots: usize,
    pub packs: usize,
    pub bytes_read: u64,
    pub problems: Vec<String>,
}

/// `snap clone URL DIR`.
#[derive(Serialize)]
pub struct CloneDoc {
    pub dir: String,
    pub remote: String,
    pub workspace: String,
    pub snapshots: usize,
    pub packs: usize,
    pub objects: usize,
    pub bytes: u64,
    pub refused: usize,
    pub head: Option<SnapshotDoc>,
    pub saved: Option<SnapshotDoc>,
}

/// `snap clone URL DIR` run again after a kill, finishing the clone already there.
#[derive(Serialize)]
pub struct CloneFinishedDoc {
    pub dir: String,
    pub remote: String,
    pub finished_interrupted: bool,
    pub head: Option<SnapshotDoc>,
    pub saved: Option<SnapshotDoc>,
}
