//! `snap push --repair`: a remote whose packs were damaged (overwritten, truncated, deleted
//! behind its index) is healed by the store that pushed them. Every indexed pack is read
//! and hashed; a damaged one is deleted with its index and forgotten, and the push that
//! follows re-sends what it held, judged by hash, never by a name in a listing.

use snap_store::{ObjectId, Store};

use crate::backend::Remote;
use crate::layout::RefDoc;
use crate::names::{Folder, token_in};
use crate::push::{PushPlan, plan_push_of};
use crate::state::RemoteState;
use crate::{RemoteError, check, retry};

/// Finds the damaged packs, deletes each (pack and index) from the remote and from
/// `state`, and returns their ids.
pub fn drop_damaged(
    remote: &dyn Remote,
    state: &mut RemoteState,
) -> Result<Vec<ObjectId>, RemoteError> {
    let damaged = check::damaged_packs(remote, state)?;
    for pack in &damaged {
        // The index first: a reader never meets an index whose pack is gone.
        retry(|| remote.delete(&state.names.index(pack)))?;
        retry(|| remote.delete(&state.names.pack(pack)))?;
    }
    state.forget_packs(&damaged);
    // An index that does not read names no pack: it goes with the pack of its token.
    let (index, packs) = (
        state.names.folder(Folder::Index),
        state.names.folder(Folder::Packs),
    );
    for (key, _) in std::mem::take(&mut state.unreadable_indexes) {
        retry(|| remote.delete(&key))?;
        if let Some(token) = token_in(&key, &index, ".idx") {
            retry(|| remote.delete(&format!("{packs}{token}.pack")))?;
        }
    }
    Ok(damaged)
}

/// Plans a push of every snapshot of `store`, records the remote holds included, so that
/// each object the remote no longer holds whole is sent again.
pub fn plan_repair(
    store: &Store,
    state: &RemoteState,
    workspace: &str,
    newest: Option<&RefDoc>,
) -> Result<PushPlan, RemoteError> {
    let every: Vec<ObjectId> = store.snapshots()?.into_iter().map(|(id, _)| id).collect();
    plan_push_of(store, state, workspace, newest, &every)
}
