//! The keys objects take on a remote, in either layout (docs/FORMAT.md 9):
//!
//! ```text
//! plain (layout 1)                 encrypted (layout 2)
//! packs/<pack id hex>.pack         sealed/packs/<token>.pack
//! index/<pack id hex>.idx          sealed/index/<token>.idx
//! snapshots/<snapshot id hex>      sealed/snapshots/<token>
//! expunged/<old snapshot id hex>   sealed/expunged/<token>
//! refs/<workspace hex>/<n:020>     sealed/refs/<token of the workspace>/<n:020>
//! trash/<key>                      sealed/trash/<key>
//! ```
//!
//! A token is BLAKE3 keyed with the remote's name key over the id's bytes (the workspace
//! id's hex text for a ref): the listing of an encrypted remote names no content id, no
//! pack id and no workspace id. Layout 2 keeps everything under `sealed/`, so a remote
//! being moved from layout 1 (`snap remote encrypt`) tells the two apart by their keys.

use std::sync::Arc;

use snap_store::ObjectId;

use crate::crypt::MasterKey;

/// The folders of a layout, each of one kind of object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Folder {
    /// Packs.
    Packs,
    /// Pack indexes.
    Index,
    /// Snapshot records.
    Snapshots,
    /// Ids an expunge renamed away.
    Expunged,
    /// Each workspace's refs.
    Refs,
    /// A remote gc's marks.
    Trash,
}

impl Folder {
    fn name(self) -> &'static str {
        match self {
            Folder::Packs => "packs/",
            Folder::Index => "index/",
            Folder::Snapshots => "snapshots/",
            Folder::Expunged => "expunged/",
            Folder::Refs => "refs/",
            Folder::Trash => "trash/",
        }
    }
}

/// The prefix of every key of layout 2 but the marker and the key objects.
pub const SEALED_ROOT: &str = "sealed/";

/// How a remote names its objects: by their ids (layout 1) or by keyed tokens (layout 2).
#[derive(Clone, Debug, Default)]
pub enum Names {
    /// Layout 1: ids in hex.
    #[default]
    Plain,
    /// Layout 2: tokens under the remote's master key.
    Keyed(Arc<MasterKey>),
}

impl Names {
    /// The prefix of a folder: `packs/` or `sealed/packs/`.
    pub fn folder(&self, folder: Folder) -> String {
        match self {
            Names::Plain => folder.name().to_string(),
            Names::Keyed(_) => format!("{SEALED_ROOT}{}", folder.name()),
        }
    }

    /// An id as its keys spell it.
    pub fn token(&self, id: &ObjectId) -> String {
        match self {
            Names::Plain => id.to_hex(),
            Names::Keyed(key) => key.name_of(id),
        }
    }

    /// A workspace id (hex text) as its refs' keys spell it.
    pub fn workspace_token(&self, workspace: &str) -> String {
        match self {
            Names::Plain => workspace.to_string(),
            Names::Keyed(key) => key.keyed(workspace.as_bytes()),
        }
    }

    /// The key of a pack.
    pub fn pack(&self, id: &ObjectId) -> String {
        format!("{}{}.pack", self.folder(Folder::Packs), self.token(id))
    }

    /// The key of a pack's index.
    pub fn index(&self, id: &ObjectId) -> String {
        format!("{}{}.idx", self.folder(Folder::Index), self.token(id))
    }

    /// The key of a snapshot record.
    pub fn record(&self, id: &ObjectId) -> String {
        format!("{}{}", self.folder(Folder::Snapshots), self.token(id))
    }

    /// The key saying an expunge renamed `old` away.
    pub fn expunged(&self, old: &ObjectId) -> String {
        format!("{}{}", self.folder(Folder::Expunged), self.token(old))
    }

    /// The prefix of one workspace's refs.
    pub fn refs_prefix(&self, workspace: &str) -> String {
        let token = self.workspace_token(workspace);
        format!("{}{token}/", self.folder(Folder::Refs))
    }

    /// The key of a workspace's `n`-th ref, zero-padded so keys sort by `n`.
    pub fn ref_key(&self, workspace: &str, n: u64) -> String {
        format!("{}{n:020}", self.refs_prefix(workspace))
    }

    /// The mark a remote gc writes for `key`.
    pub fn trash(&self, key: &str) -> String {
        format!("{}{key}", self.folder(Folder::Trash))
    }

    /// Whether objects are sealed under these names.
    pub fn sealed(&self) -> bool {
        matches!(self, Names::Keyed(_))
    }
}

/// The token between `folder` and `ext` in a listed key.
pub fn token_in<'a>(key: &'a str, folder: &str, ext: &str) -> Option<&'a str> {
    key.strip_prefix(folder)?.strip_suffix(ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_layout_one() {
        let id = ObjectId([7; 32]);
        let names = Names::Plain;
        assert_eq!(names.pack(&id), format!("packs/{}.pack", id.to_hex()));
        assert_eq!(names.ref_key("ab", 3), "refs/ab/00000000000000000003");
        assert_eq!(
            names.trash(&names.record(&id)),
            format!("trash/snapshots/{}", id.to_hex())
        );
    }

    #[test]
    fn keyed_names_hide_ids_and_stay_apart() {
        let id = ObjectId([7; 32]);
        let key = Arc::new(MasterKey::generate().expect("random"));
        let names = Names::Keyed(key);
        let all = [
            names.pack(&id),
            names.index(&id),
            names.record(&id),
            names.ref_key("ab", 1),
        ];
        for key in &all {
            assert!(
                key.starts_with(SEALED_ROOT) && !key.contains(&id.to_hex()),
                "{key}"
            );
        }
        assert_eq!(
            names.token(&id),
            names.token(&id),
            "a token is a function of the id"
        );
        assert_ne!(names.workspace_token("ab"), "ab");
    }
}
