//! The store's owner: `.snap/workspace` names the workspace a store belongs to (a random id
//! and the root directory it was recorded for), so an external store (`--store`,
//! `SNAP_STORE`) is never applied to another directory, and a command run from a
//! subdirectory acts on the recorded root, as git does.
//!
//! The file lives beside the catalog, not in it, so a catalog rebuilt by `repair` keeps it,
//! and opening a store costs no catalog write. Layout (docs/FORMAT.md 4.9):
//!
//! ```text
//! | magic "snapws\0" [7] | version u8 = 1 | workspace id [16] | root length u32 LE |
//! | root path bytes [root length] | BLAKE3 of every byte before it [32] |
//! ```

use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::StoreError;

/// The file's name in the store directory.
pub const IDENTITY_FILE: &str = "workspace";

/// Magic and version: `snapws\0` then version 1.
const MAGIC: [u8; 8] = *b"snapws\0\x01";
/// Length of the workspace id.
pub const WORKSPACE_ID_LEN: usize = 16;
/// Length of the trailing checksum.
const SUM_LEN: usize = 32;

/// Who a store belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceIdentity {
    /// Random, chosen when the store first records its workspace; kept when the root moves.
    pub id: [u8; WORKSPACE_ID_LEN],
    /// The workspace root, absolute and canonical.
    pub root: PathBuf,
}

impl WorkspaceIdentity {
    /// A new identity with a fresh random id.
    pub fn new(root: &Path) -> Result<WorkspaceIdentity, StoreError> {
        let mut id = [0u8; WORKSPACE_ID_LEN];
        let random = Path::new("/dev/urandom");
        std::fs::File::open(random)
            .and_then(|mut f| f.read_exact(&mut id))
            .map_err(|e| StoreError::io(random, e))?;
        Ok(WorkspaceIdentity {
            id,
            root: root.to_path_buf(),
        })
    }

    /// The id as 32 lowercase hex digits.
    pub fn id_hex(&self) -> String {
        self.id.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bytes of `.snap/workspace`.
    pub fn encode(&self) -> Vec<u8> {
        let root = self.root.as_os_str().as_bytes();
        let mut out = Vec::with_capacity(MAGIC.len() + WORKSPACE_ID_LEN + 4 + root.len() + 32);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.id);
        out.extend_from_slice(&(root.len() as u32).to_le_bytes());
        out.extend_from_slice(root);
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    /// Decodes `.snap/workspace`; `None` when the bytes are not one whole, intact record.
    pub fn decode(bytes: &[u8]) -> Option<WorkspaceIdentity> {
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(SUM_LEN)?)?;
        if blake3::hash(body).as_bytes() != sum {
            return None;
        }
        let rest = body.strip_prefix(&MAGIC)?;
        let (id, rest) = rest.split_first_chunk::<WORKSPACE_ID_LEN>()?;
        let (len, root) = rest.split_first_chunk::<4>()?;
        if root.len() != u32::from_le_bytes(*len) as usize || root.is_empty() {
            return None;
        }
        Some(WorkspaceIdentity {
            id: *id,
            root: PathBuf::from(std::ffi::OsString::from_vec(root.to_vec())),
        })
    }

    /// Reads the identity of the store in `dir`; `None` for a store that has not recorded
    /// one yet (created before snap recorded identities).
    pub fn read(dir: &Path) -> Result<Option<WorkspaceIdentity>, StoreError> {
        let path = dir.join(IDENTITY_FILE);
        let bytes = match crate::fs::io::read_no_follow(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(crate::fs::io::no_follow_error(&path, e)),
        };
        WorkspaceIdentity::decode(&bytes)
            .map(Some)
            .ok_or(StoreError::BadIdentity(path))
    }

    /// Records this identity in the store in `dir`, atomically and durably.
    pub fn write(&self, dir: &Path) -> Result<(), StoreError> {
        crate::fs::io::write_atomic(&dir.join(IDENTITY_FILE), &self.encode())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_identity_round_trips_and_damage_is_refused() {
        let ident = WorkspaceIdentity::new(Path::new("/home/me/project")).unwrap();
        let bytes = ident.encode();
        assert_eq!(WorkspaceIdentity::decode(&bytes), Some(ident.clone()));
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert_eq!(WorkspaceIdentity::decode(&bad), None, "flip at {at}");
        }
        for len in 0..bytes.len() {
            assert_eq!(
                WorkspaceIdentity::decode(&bytes[..len]),
                None,
                "cut at {len}"
            );
        }
    }

    #[test]
    fn ids_are_random() {
        let a = WorkspaceIdentity::new(Path::new("/a")).unwrap();
        let b = WorkspaceIdentity::new(Path::new("/a")).unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(a.id_hex().len(), 32);
    }

    #[test]
    fn a_store_without_the_file_has_no_identity() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(WorkspaceIdentity::read(dir.path()).unwrap(), None);
        let ident = WorkspaceIdentity::new(Path::new("/w")).unwrap();
        ident.write(dir.path()).unwrap();
        assert_eq!(WorkspaceIdentity::read(dir.path()).unwrap(), Some(ident));
        std::fs::write(dir.path().join(IDENTITY_FILE), b"junk").unwrap();
        assert!(matches!(
            WorkspaceIdentity::read(dir.path()),
            Err(StoreError::BadIdentity(_))
        ));
    }
}
