//! A stored tree listed only along chosen directories: the entries of each directory from
//! the root down to each of them, themselves included. What a capture from a change source
//! starts from: everything else stays a single node, its contents unread.

use std::collections::HashSet;

use snap_store::{EntryKind, ObjectId, Store, StoreError};

use super::{FlatTree, Node, join};

/// Tree `root` listed along `dirs`: the entries of the root, of each directory above one of
/// `dirs`, and of each of `dirs` that is a directory in the tree. Returns the flat tree and
/// the directories listed (`""` for the root). A path that is absent or not a directory in
/// the tree stops the listing on its way at its nearest listed ancestor.
pub fn list_dirs(
    store: &Store,
    root: &ObjectId,
    dirs: &[Vec<u8>],
) -> Result<(FlatTree, HashSet<Vec<u8>>), StoreError> {
    let mut flat = FlatTree::new();
    let mut listed = HashSet::new();
    list_one(store, &mut flat, &mut listed, b"", root)?;
    for dir in dirs.iter().filter(|d| !d.is_empty()) {
        let mut here: Vec<u8> = Vec::new();
        for name in dir.split(|&b| b == b'/') {
            here = join(&here, name);
            match flat.get(&here) {
                Some(node) if node.kind == EntryKind::Dir => {
                    let id = node.id;
                    list_one(store, &mut flat, &mut listed, &here, &id)?;
                }
                _ => break,
            }
        }
    }
    Ok((flat, listed))
}

/// Lists directory `dir` (tree `id`) into `flat`, once.
fn list_one(
    store: &Store,
    flat: &mut FlatTree,
    listed: &mut HashSet<Vec<u8>>,
    dir: &[u8],
    id: &ObjectId,
) -> Result<(), StoreError> {
    if !listed.insert(dir.to_vec()) {
        return Ok(());
    }
    for entry in store.read_tree(id)?.entries {
        flat.insert(join(dir, &entry.name), Node::from(&entry));
    }
    Ok(())
}
