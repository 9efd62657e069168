//! The object model: what the store holds and how it is named. Object ids (BLAKE3 of kind
//! and bytes), the object kinds and their records (chunk lists, trees, snapshot records),
//! snapshot references (`@~2`, `#12`, `step:3`, id prefixes), and the workspace identity
//! file that says whose store this is. Encodings are in docs/FORMAT.md.

pub(crate) mod id;
pub(crate) mod identity;
pub(crate) mod object;
pub(crate) mod refs;

pub use id::{ID_LEN, ObjectId};
pub use identity::{IDENTITY_FILE, WORKSPACE_ID_LEN, WorkspaceIdentity};
pub use object::{
    ChangeStats, ChunkList, ChunkRef, EntryKind, ObjectKind, PERMISSION_BITS, RECORD_VERSION,
    SnapshotKind, SnapshotRecord, TREE_VERSION, Tree, TreeEntry, check_entry_name, decode_record,
    encode_record,
};
