//! What to run next, said after an error line: the libraries name what failed, and only the
//! binary knows its own commands (as jj keeps its hints in the CLI).

use snap_tree::{StoreError, TreeError};

/// The hint for the first error in `e`'s chain that has one, to follow its message.
pub(crate) fn after(e: &anyhow::Error) -> Option<&'static str> {
    e.chain().find_map(|cause| {
        let store = match cause.downcast_ref::<TreeError>() {
            Some(TreeError::Store(s)) => Some(s),
            Some(t) => return tree_hint(t),
            None => cause.downcast_ref::<StoreError>(),
        };
        store.and_then(store_hint).or_else(|| remote_hint(cause))
    })
}

fn tree_hint(e: &TreeError) -> Option<&'static str> {
    match e {
        TreeError::NoWorkspace(_) => Some(" (run `snap init` or `snap save` there)"),
        TreeError::NoSnapshots => Some(" (run `snap save` first)"),
        TreeError::Store(s) => store_hint(s),
        _ => None,
    }
}

fn store_hint(e: &StoreError) -> Option<&'static str> {
    match e {
        StoreError::NotFound(_) => Some(" (run `snap init` or `snap save` first)"),
        StoreError::BadIdentity(_) => {
            Some("; run `snap init --force` in the workspace root to record it again")
        }
        _ => None,
    }
}

#[cfg(feature = "remote")]
fn remote_hint(cause: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    use snap_remote::RemoteError;
    match cause.downcast_ref::<RemoteError>()? {
        RemoteError::NoRemote { .. } => {
            Some(" (a push, or snap remote add --create, makes a remote)")
        }
        RemoteError::NotARemote { .. } => Some("; a push makes one"),
        _ => None,
    }
}

#[cfg(not(feature = "remote"))]
fn remote_hint(_: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    None
}
