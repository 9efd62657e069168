//! The object kinds and the records they carry: chunk lists, trees and snapshots.
//!
//! Every record is `[RECORD_VERSION] ++ postcard(record)`. Decoders validate what they return:
//! a tree whose entries are unsorted, duplicated or carry a hostile name is corruption.

use serde::{Deserialize, Serialize};

use crate::{ObjectId, StoreError};

/// Version byte at the start of every encoded record (chunk list, snapshot; trees written
/// before they carried permission bits).
pub const RECORD_VERSION: u8 = 1;

/// Version byte of a tree whose entries carry permission bits (FORMAT.md 4.4). Trees of
/// version [`RECORD_VERSION`] still decode, every entry's `mode` then `None`.
pub const TREE_VERSION: u8 = 2;

/// The permission bits a tree may record: user, group and other rwx. Never setuid, setgid
/// or sticky.
pub const PERMISSION_BITS: u16 = 0o777;

/// What an object is. The discriminant is the kind byte hashed into ids and written in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum ObjectKind {
    /// Raw file bytes (a whole small file, or one piece of a large one).
    Chunk = 1,
    /// The ordered chunks of a large file.
    ChunkList = 2,
    /// One directory.
    Tree = 3,
    /// One snapshot record.
    Snapshot = 4,
    /// Several small chunks' bytes end to end, compressed as one: each chunk is stored as a
    /// slice of it (`Compression::Slice`). Nothing else names a block.
    Block = 5,
}

impl ObjectKind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<ObjectKind> {
        match b {
            1 => Some(ObjectKind::Chunk),
            2 => Some(ObjectKind::ChunkList),
            3 => Some(ObjectKind::Tree),
            4 => Some(ObjectKind::Snapshot),
            5 => Some(ObjectKind::Block),
            _ => None,
        }
    }
}

/// The kind of one tree entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntryKind {
    /// A regular file without the executable bit.
    File,
    /// A regular file with the owner executable bit.
    Executable,
    /// A symbolic link; its id is a chunk holding the link target bytes.
    Symlink,
    /// A directory; its id is a tree.
    Dir,
}

/// One entry of a tree. `name` is raw bytes: Unix names need not be UTF-8.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// One path component: never empty, `.` or `..`, never holding `/` or NUL.
    pub name: Vec<u8>,
    /// What the entry is, which decides what `id` names.
    pub kind: EntryKind,
    /// File length, or link target length; 0 for directories.
    pub size: u64,
    /// Chunk or chunk list (file), target chunk (symlink) or tree (directory).
    pub id: ObjectId,
    /// Permission bits (within [`PERMISSION_BITS`]) of a file or directory; `None` for a
    /// symlink, and for every entry of a tree written before modes were recorded (a restore
    /// then leaves the mode to the umask, as it always did).
    pub mode: Option<u16>,
}

/// A tree entry as version 1 trees encode it: no mode.
#[derive(Deserialize)]
struct TreeEntryV1 {
    name: Vec<u8>,
    kind: EntryKind,
    size: u64,
    id: ObjectId,
}

#[derive(Deserialize)]
struct TreeV1 {
    entries: Vec<TreeEntryV1>,
}

/// One directory: entries strictly sorted by name bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    /// Strictly increasing by name bytes, so equal directories encode (and hash) alike.
    pub entries: Vec<TreeEntry>,
}

/// One chunk of a large file, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    /// The `Chunk` object holding this piece.
    pub id: ObjectId,
    /// Bytes in the piece; only a size hint when reading the file back.
    pub len: u64,
}

/// The chunks of a file cut by content-defined chunking.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkList {
    /// In file order; their concatenation is the file's content.
    pub chunks: Vec<ChunkRef>,
}

/// Why a snapshot was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotKind {
    /// An explicit `snap save`.
    Save,
    /// The dirty working tree, saved by undo before moving away from it.
    AutoBeforeUndo,
    /// The dirty working tree, saved by restore before replacing it.
    AutoBeforeRestore,
    /// A `snap restore`: the tree of an older snapshot, recorded anew.
    Restore,
    /// The dirty working tree, saved by redo before replacing it (not on the undo chain).
    AutoBeforeRedo,
}

impl SnapshotKind {
    /// The name shown to people and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotKind::Save => "save",
            SnapshotKind::AutoBeforeUndo => "auto-before-undo",
            SnapshotKind::AutoBeforeRestore => "auto-before-restore",
            SnapshotKind::Restore => "restore",
            SnapshotKind::AutoBeforeRedo => "auto-before-redo",
        }
    }
}

/// How a snapshot's tree differs from its parent's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeStats {
    /// Files and symlinks present only in this snapshot.
    pub added: u64,
    /// Files and symlinks whose kind or content changed.
    pub modified: u64,
    /// Files and symlinks present only in the parent.
    pub deleted: u64,
    /// Files and symlinks in the whole snapshot.
    pub files: u64,
    /// Bytes of file content and symlink targets in the whole snapshot.
    pub bytes: u64,
    /// Text lines added and removed against the parent; `None` when not counted (more than
    /// `MAX_LINE_STAT_FILES` files changed, as in a first save).
    pub lines: Option<(u64, u64)>,
}

/// A snapshot: stored in the catalog and as an object in a pack, so packs alone can rebuild
/// the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// Sequence number, unique and increasing within a store.
    pub seq: u64,
    /// Tree of the workspace root.
    pub root: ObjectId,
    /// HEAD when it was made (or the auto-save just before it); `None` for a first snapshot.
    pub parent: Option<ObjectId>,
    /// Creation time, nanoseconds since the Unix epoch.
    pub time_ns: i64,
    /// Which command made it, and whether on request or automatically.
    pub kind: SnapshotKind,
    /// Free text from `--message`, or snap's own for automatic snapshots.
    pub message: String,
    /// Agent step (turn) number, if given; resolvable as `step:N`.
    pub step: Option<u64>,
    /// Agent session name, if given.
    pub session: Option<String>,
    /// Free key=value metadata, in the order given.
    pub meta: Vec<(String, String)>,
    /// Changes against the parent and totals of the whole tree.
    pub stats: ChangeStats,
}

/// Encodes a record: the version byte, then postcard.
pub fn encode_record<T: Serialize>(record: &T) -> Vec<u8> {
    encode_versioned(RECORD_VERSION, record)
}

fn encode_versioned<T: Serialize>(version: u8, record: &T) -> Vec<u8> {
    let out = vec![version];
    // Serializing plain structs into a Vec cannot fail; an error here is a bug in a derive.
    match postcard::to_extend(record, out) {
        Ok(v) => v,
        Err(e) => panic!("postcard encoding of an in-memory record failed: {e}"),
    }
}

/// Decodes a record written by [`encode_record`]; `id` names it in errors.
pub fn decode_record<'a, T: Deserialize<'a>>(
    id: ObjectId,
    bytes: &'a [u8],
) -> Result<T, StoreError> {
    decode_versioned(RECORD_VERSION, id, bytes)
}

fn decode_versioned<'a, T: Deserialize<'a>>(
    want: u8,
    id: ObjectId,
    bytes: &'a [u8],
) -> Result<T, StoreError> {
    let corrupt = |why: String| StoreError::CorruptObject { id, why };
    let (&version, body) = bytes
        .split_first()
        .ok_or_else(|| corrupt("empty record".into()))?;
    if version != want {
        return Err(corrupt(format!("unknown record version {version}")));
    }
    let (value, rest) = postcard::take_from_bytes(body).map_err(|e| corrupt(e.to_string()))?;
    if !rest.is_empty() {
        return Err(corrupt(format!("{} trailing bytes", rest.len())));
    }
    Ok(value)
}

impl Tree {
    /// The canonical bytes of this tree.
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(TREE_VERSION, self)
    }

    /// Decodes and validates a tree (either version): names safe, strictly sorted, modes
    /// within [`PERMISSION_BITS`] and absent on symlinks.
    pub fn decode(id: ObjectId, bytes: &[u8]) -> Result<Tree, StoreError> {
        let tree: Tree = match bytes.first() {
            Some(&RECORD_VERSION) => decode_record::<TreeV1>(id, bytes)?.into(),
            _ => decode_versioned(TREE_VERSION, id, bytes)?,
        };
        for entry in &tree.entries {
            check_entry_name(&entry.name).map_err(|why| StoreError::CorruptObject { id, why })?;
            if !entry.mode_is_valid() {
                return Err(StoreError::CorruptObject {
                    id,
                    why: format!(
                        "entry {:?} has mode {:?}",
                        String::from_utf8_lossy(&entry.name),
                        entry.mode
                    ),
                });
            }
        }
        if tree.entries.windows(2).any(|w| w[0].name >= w[1].name) {
            return Err(StoreError::CorruptObject {
                id,
                why: "tree entries are not strictly sorted".into(),
            });
        }
        Ok(tree)
    }
}

impl From<TreeV1> for Tree {
    fn from(old: TreeV1) -> Tree {
        let entries = old.entries.into_iter().map(|e| TreeEntry {
            name: e.name,
            kind: e.kind,
            size: e.size,
            id: e.id,
            mode: None,
        });
        Tree {
            entries: entries.collect(),
        }
    }
}

impl TreeEntry {
    /// Permission bits only, and none on a symlink.
    fn mode_is_valid(&self) -> bool {
        match (self.kind, self.mode) {
            (EntryKind::Symlink, mode) => mode.is_none(),
            (_, Some(mode)) => mode & !PERMISSION_BITS == 0,
            (_, None) => true,
        }
    }
}

/// Refuses names that could escape or confuse a directory: empty, `.`, `..`, `/` or NUL.
pub fn check_entry_name(name: &[u8]) -> Result<(), String> {
    let shown = String::from_utf8_lossy(name);
    match name {
        b"" => Err("empty entry name".into()),
        b"." | b".." => Err(format!("entry name {shown:?} is not allowed")),
        _ if name.contains(&b'/') => Err(format!("entry name {shown:?} contains '/'")),
        _ if name.contains(&0) => Err(format!("entry name {shown:?} contains NUL")),
        _ => Ok(()),
    }
}

impl ChunkList {
    /// The canonical bytes of this chunk list.
    pub fn encode(&self) -> Vec<u8> {
        encode_record(self)
    }

    /// Decodes a chunk list.
    pub fn decode(id: ObjectId, bytes: &[u8]) -> Result<ChunkList, StoreError> {
        decode_record(id, bytes)
    }
}

impl SnapshotRecord {
    /// The canonical bytes of this record.
    pub fn encode(&self) -> Vec<u8> {
        encode_record(self)
    }

    /// Decodes a snapshot record.
    pub fn decode(id: ObjectId, bytes: &[u8]) -> Result<SnapshotRecord, StoreError> {
        decode_record(id, bytes)
    }

    /// The id this record has as an object.
    pub fn id(&self) -> ObjectId {
        ObjectId::of(ObjectKind::Snapshot, &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(name: &[u8], kind: EntryKind) -> TreeEntry {
        TreeEntry {
            name: name.to_vec(),
            kind,
            size: 3,
            id: ObjectId::of(ObjectKind::Chunk, name),
            mode: (kind != EntryKind::Symlink).then_some(0o640),
        }
    }

    #[test]
    fn tree_round_trip() {
        let tree = Tree {
            entries: vec![
                entry(b"a", EntryKind::File),
                entry(b"b\xff", EntryKind::Dir),
                entry(b"c", EntryKind::Symlink),
            ],
        };
        let bytes = tree.encode();
        assert_eq!(bytes[0], TREE_VERSION);
        let id = ObjectId::of(ObjectKind::Tree, &bytes);
        assert_eq!(Tree::decode(id, &bytes).ok(), Some(tree));
    }

    /// FORMAT.md 4.4's worked examples, byte for byte: the version 1 tree (no modes) still
    /// decodes, with every mode absent; the version 2 tree adds one mode per entry.
    #[test]
    fn both_tree_versions_decode_as_documented() {
        let id = ObjectId::of(ObjectKind::Chunk, b"hello");
        let mut v1 = vec![0x01, 0x01, 0x01, b'a', 0x00, 0x05];
        v1.extend_from_slice(&id.0);
        let tree = Tree::decode(ObjectId::of(ObjectKind::Tree, &v1), &v1).unwrap();
        assert_eq!(tree.entries[0].mode, None);
        assert_eq!(tree.entries[0].size, 5);
        let mut v2 = v1.clone();
        v2[0] = TREE_VERSION;
        v2.extend_from_slice(&[0x01, 0xa4, 0x03]);
        let mut want = tree.clone();
        want.entries[0].mode = Some(0o644);
        assert_eq!(want.encode(), v2);
        assert_eq!(
            Tree::decode(ObjectId::of(ObjectKind::Tree, &v2), &v2).unwrap(),
            want
        );
    }

    #[test]
    fn modes_beyond_the_permission_bits_are_refused() {
        for (kind, mode) in [
            (EntryKind::File, Some(0o4755)),
            (EntryKind::Dir, Some(0o1777)),
            (EntryKind::Symlink, Some(0o777)),
        ] {
            let mut e = entry(b"x", kind);
            e.mode = mode;
            let bytes = Tree { entries: vec![e] }.encode();
            let id = ObjectId::of(ObjectKind::Tree, &bytes);
            assert!(Tree::decode(id, &bytes).is_err(), "{kind:?} {mode:?}");
        }
    }

    #[test]
    fn hostile_names_are_refused() {
        for name in [&b""[..], b".", b"..", b"a/b", b"a\0"] {
            let tree = Tree {
                entries: vec![entry(name, EntryKind::File)],
            };
            let bytes = tree.encode();
            let id = ObjectId::of(ObjectKind::Tree, &bytes);
            assert!(Tree::decode(id, &bytes).is_err(), "{name:?} accepted");
        }
    }

    #[test]
    fn unsorted_tree_is_refused() {
        let tree = Tree {
            entries: vec![entry(b"b", EntryKind::File), entry(b"a", EntryKind::File)],
        };
        let bytes = tree.encode();
        assert!(Tree::decode(ObjectId::of(ObjectKind::Tree, &bytes), &bytes).is_err());
    }

    #[test]
    fn wrong_version_and_trailing_bytes_are_refused() {
        let mut bytes = ChunkList::default().encode();
        let id = ObjectId::of(ObjectKind::ChunkList, &bytes);
        bytes.push(0);
        assert!(ChunkList::decode(id, &bytes).is_err());
        bytes.pop();
        bytes[0] = 9;
        assert!(ChunkList::decode(id, &bytes).is_err());
    }

    #[test]
    fn snapshot_round_trip() {
        let record = SnapshotRecord {
            seq: 7,
            root: ObjectId::of(ObjectKind::Tree, b"r"),
            parent: Some(ObjectId::of(ObjectKind::Snapshot, b"p")),
            time_ns: 1_700_000_000_000_000_000,
            kind: SnapshotKind::Restore,
            message: "m".into(),
            step: Some(3),
            session: Some("s".into()),
            meta: vec![("turn".into(), "12".into())],
            stats: ChangeStats {
                added: 1,
                modified: 2,
                deleted: 3,
                files: 4,
                bytes: 5,
                lines: Some((6, 7)),
            },
        };
        let bytes = record.encode();
        assert_eq!(
            SnapshotRecord::decode(record.id(), &bytes).ok(),
            Some(record)
        );
    }

    proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let id = ObjectId::of(ObjectKind::Tree, &bytes);
            let _ = Tree::decode(id, &bytes);
            let _ = ChunkList::decode(id, &bytes);
            let _ = SnapshotRecord::decode(id, &bytes);
        }

        #[test]
        fn chunk_list_round_trip(lens in proptest::collection::vec(any::<u64>(), 0..20)) {
            let list = ChunkList { chunks: lens.iter().map(|&len| ChunkRef { id: ObjectId::of(ObjectKind::Chunk, &len.to_le_bytes()), len }).collect() };
            let bytes = list.encode();
            prop_assert_eq!(ChunkList::decode(ObjectId::of(ObjectKind::ChunkList, &bytes), &bytes).ok(), Some(list));
        }
    }
}
