//! The remote half of `snap expunge`: every pack of a remote that holds an object no live
//! record reaches is rewritten without it (docs/SAFETY.md, Remotes).
//!
//! A pack is *stale* when it holds an object outside the live reach, or a copy stored
//! against a base every copy of which is in a stale pack (a reader that took such a pack
//! would meet a frame it cannot decode). The live objects the stale packs held are sent
//! again from the local store in new packs (put create-only, each before its index), then
//! each stale pack is marked (`trash/`, [`crate::gc`]): from then on pushes and readers
//! count its objects as absent, a collection prefers the new copies, and deletes the stale
//! pack once its mark is older than the grace period. A repack killed anywhere leaves at
//! worst new packs no one needs yet, or stale packs not marked yet: the next one finds the
//! same stale packs and sends only what is still missing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use snap_store::{ObjectId, Outgoing, SealedPack};

use crate::backend::Remote;
use crate::layout;
use crate::push::{REMOTE_PACK_TARGET, Sent, send_pack};
use crate::state::RemoteState;
use crate::{RemoteError, retry};

/// What a repack did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepackReport {
    /// Stale packs found (marked now or before).
    pub stale: usize,
    /// Their bytes.
    pub stale_bytes: u64,
    /// Packs uploaded with the live objects the stale ones held.
    pub packs: usize,
    /// Objects in them.
    pub objects: usize,
    /// Bytes uploaded.
    pub bytes: u64,
    /// Stale packs marked now.
    pub marked: usize,
}

/// The indexed, unmarked packs that hold an object outside `live`, or a copy whose base
/// only such packs hold (see the module's documentation), in id order.
pub fn stale_packs(state: &RemoteState, live: &HashSet<ObjectId>) -> Vec<ObjectId> {
    let unmarked = |pack: &ObjectId| !state.marked.contains(&state.names.pack(pack));
    let packs: Vec<_> = state.packs.iter().filter(|(p, _)| unmarked(p)).collect();
    let mut stale: HashSet<ObjectId> = (packs.iter())
        .filter(|(_, objects)| objects.iter().any(|o| !live.contains(&o.id)))
        .map(|(pack, _)| **pack)
        .collect();
    loop {
        let holders = holders(&packs, &stale);
        let more: Vec<ObjectId> = (packs.iter())
            .filter(|(pack, _)| !stale.contains(*pack))
            .filter(|(_, objects)| {
                let lost = |b: &ObjectId| !holders.contains(b);
                objects.iter().any(|o| o.base.as_ref().is_some_and(lost))
            })
            .map(|(pack, _)| **pack)
            .collect();
        if more.is_empty() {
            let mut out: Vec<ObjectId> = stale.into_iter().collect();
            out.sort();
            return out;
        }
        stale.extend(more);
    }
}

/// The objects some pack outside `stale` holds.
fn holders(
    packs: &[(&ObjectId, &Vec<layout::Indexed>)],
    stale: &HashSet<ObjectId>,
) -> HashSet<ObjectId> {
    (packs.iter())
        .filter(|(pack, _)| !stale.contains(*pack))
        .flat_map(|(_, objects)| objects.iter().map(|o| o.id))
        .collect()
}

/// Uploads the packs of `outgoing` (planned against `state` with the stale packs
/// forgotten, so it holds what only they held) with their indexes; packs are written in
/// `staging` (made, then emptied).
pub fn send_again(
    remote: &dyn Remote,
    outgoing: Outgoing,
    state: &RemoteState,
    staging: &Path,
    report: &mut RepackReport,
) -> Result<(), RemoteError> {
    let mut on_sealed = |pack: SealedPack| -> Result<(), RemoteError> {
        let sent = send_pack(remote, state, &pack);
        let _ = std::fs::remove_file(&pack.path);
        snap_store::failpoint!("repack-after-pack");
        if sent? != Sent::Reused {
            report.packs += 1;
            report.objects += pack.objects.len();
            report.bytes += pack.bytes;
        }
        Ok(())
    };
    let written = outgoing.write_packs(staging, REMOTE_PACK_TARGET, &mut on_sealed);
    let _ = std::fs::remove_dir_all(staging);
    written
}

/// Marks each of `stale` (`trash/<pack key>`, the time `now_ns`) unless it is marked.
pub fn mark_stale(
    remote: &dyn Remote,
    stale: &[ObjectId],
    sizes: &HashMap<ObjectId, u64>,
    now_ns: i64,
    report: &mut RepackReport,
) -> Result<(), RemoteError> {
    let when = now_ns.to_string();
    let names = remote.names();
    for pack in stale {
        let mark = names.trash(&names.pack(pack));
        if retry(|| remote.put_if_absent(&mark, when.as_bytes()))? == crate::Put::Created {
            report.marked += 1;
        }
        report.stale += 1;
        report.stale_bytes += sizes.get(pack).copied().unwrap_or(0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Indexed;

    fn id(n: u8) -> ObjectId {
        ObjectId::of(snap_store::ObjectKind::Chunk, &[n])
    }

    fn whole(n: u8) -> Indexed {
        Indexed {
            id: id(n),
            base: None,
        }
    }

    fn delta(n: u8, base: u8) -> Indexed {
        Indexed {
            id: id(n),
            base: Some(id(base)),
        }
    }

    /// Packs 10.. holding the given objects, every one present and indexed.
    fn state(packs: Vec<Vec<Indexed>>) -> RemoteState {
        let mut state = RemoteState::default();
        for (i, objects) in packs.into_iter().enumerate() {
            let pack = id(100 + i as u8);
            state.pack_files.insert(pack, 1);
            state.packs.insert(pack, objects);
        }
        state
    }

    #[test]
    fn a_pack_is_stale_for_a_dead_object_or_a_base_only_stale_packs_hold() {
        // 0: live 1 with dead 2 (stale); 1: live 3 against 2 (its base only in a stale
        // pack: stale too); 2: live 4 against 1 (1 is held by pack 0, stale, and by
        // pack 3: fine); 3: live 1 whole; 4: live 5 alone.
        let s = state(vec![
            vec![whole(1), whole(2)],
            vec![delta(3, 2)],
            vec![delta(4, 1)],
            vec![whole(1)],
            vec![whole(5)],
        ]);
        let live: HashSet<ObjectId> = [1, 3, 4, 5].map(id).into();
        assert_eq!(stale_packs(&s, &live), {
            let mut v = vec![id(100), id(101)];
            v.sort();
            v
        });
    }

    #[test]
    fn marked_packs_are_not_stale_again_and_all_live_is_clean() {
        let mut s = state(vec![vec![whole(1), whole(2)], vec![whole(1)]]);
        s.marked.insert(s.names.pack(&id(100)));
        let live: HashSet<ObjectId> = [1].map(id).into();
        assert_eq!(stale_packs(&s, &live), Vec::<ObjectId>::new());
        let live: HashSet<ObjectId> = [1, 2].map(id).into();
        assert_eq!(
            stale_packs(&state(vec![vec![whole(1), whole(2)]]), &live),
            vec![]
        );
    }
}
