//! What a remote holds, read without any lock: its packs' indexes (so a push or a pull knows
//! which objects are there without reading a pack), its snapshot records, its refs and the
//! snapshot ids an expunge renamed away (`expunged/`, listed; their bodies are read only
//! when a new id is wanted, [`RemoteState::resolve`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use snap_store::ObjectId;

use crate::backend::Remote;
use crate::layout::{self, Indexed, RefDoc};
use crate::{RemoteError, retry};

/// A remote's contents, as listed once.
#[derive(Debug, Default)]
pub struct RemoteState {
    /// Each indexed pack with its objects. A pack without its index is not counted: its push
    /// was killed before the index, and nothing reaches its objects.
    pub packs: BTreeMap<ObjectId, Vec<Indexed>>,
    /// Pack files present, with their sizes (indexed or not).
    pub pack_files: HashMap<ObjectId, u64>,
    /// Every object a push may count on: one with a copy in an indexed, unmarked pack that
    /// is there, whose base (and its base, down the chain) has such a copy too.
    pub objects: HashSet<ObjectId>,
    /// Snapshot records present.
    pub records: HashSet<ObjectId>,
    /// Each workspace's newest ref key and number.
    pub refs: BTreeMap<String, (String, u64)>,
    /// The keys a remote gc has marked for deletion (`trash/<key>`, crate::gc): the objects
    /// of a marked pack are not in [`RemoteState::objects`], so no push relies on them.
    pub marked: HashSet<String>,
    /// The layout marker: absent on a remote no push has written to.
    pub layout: layout::Marker,
    /// Snapshot ids an expunge renamed away (`expunged/<id>`): no command takes, pushes or
    /// keeps their records, whatever a ref names.
    pub expunged: HashSet<ObjectId>,
}

/// The most renamings [`RemoteState::resolve`] follows: each expunge of a snapshot adds one.
const RENAMES_FOLLOWED: usize = 64;

impl RemoteState {
    /// Lists the remote and reads every pack index, for a push: a remote without a
    /// marker reads as empty; one of a layout this snap does not know is refused.
    pub fn read(remote: &dyn Remote) -> Result<RemoteState, RemoteError> {
        let mut state = RemoteState {
            layout: layout::read_marker(remote)?,
            ..RemoteState::default()
        };
        for listed in retry(|| remote.list("packs/"))? {
            if let Some(id) = layout::id_in_key(&listed.key, "packs/", ".pack") {
                state.pack_files.insert(id, listed.size);
            }
        }
        for listed in retry(|| remote.list(layout::TRASH))? {
            state
                .marked
                .extend(listed.key.strip_prefix(layout::TRASH).map(str::to_string));
        }
        for listed in retry(|| remote.list("index/"))? {
            let Some(pack) = layout::id_in_key(&listed.key, "index/", ".idx") else {
                continue;
            };
            let bytes =
                retry(|| remote.get(&listed.key, None))?.ok_or_else(|| gone(&listed.key))?;
            let objects = layout::decode_index(&listed.key, &pack, &bytes)?;
            state.packs.insert(pack, objects);
        }
        for listed in retry(|| remote.list("snapshots/"))? {
            let hex = listed.key.trim_start_matches("snapshots/");
            state.records.extend(ObjectId::from_hex(hex));
        }
        for listed in retry(|| remote.list(layout::EXPUNGED))? {
            let hex = listed.key.trim_start_matches(layout::EXPUNGED);
            state.expunged.extend(ObjectId::from_hex(hex));
        }
        state.refs = newest_refs(&retry(|| remote.list("refs/"))?);
        state.objects = state.readable();
        Ok(state)
    }

    /// [`RemoteState::read`] for every command but a push: a remote without the marker is
    /// [`RemoteError::NotARemote`], so a mistyped URL never passes as an empty remote.
    pub fn read_existing(remote: &dyn Remote) -> Result<RemoteState, RemoteError> {
        let state = RemoteState::read(remote)?;
        match state.layout {
            layout::Marker::Current => Ok(state),
            layout::Marker::Absent => Err(RemoteError::NotARemote {
                url: remote.describe(),
            }),
        }
    }

    /// Counts `packs` as gone: neither they nor the objects only they held are there.
    pub fn forget_packs(&mut self, packs: &[ObjectId]) {
        for pack in packs {
            self.packs.remove(pack);
            self.pack_files.remove(pack);
        }
        self.objects = self.readable();
    }

    /// The newest ref of `workspace`, read; `None` before its first push.
    pub fn read_ref(
        &self,
        remote: &dyn Remote,
        workspace: &str,
    ) -> Result<Option<RefDoc>, RemoteError> {
        let Some((key, _)) = self.refs.get(workspace) else {
            return Ok(None);
        };
        let bytes = retry(|| remote.get(key, None))?.ok_or_else(|| gone(key))?;
        RefDoc::decode(key, &bytes).map(Some)
    }

    /// The snapshots `doc` names that no expunge renamed away, in its order.
    pub fn named_live(&self, doc: &RefDoc) -> Vec<ObjectId> {
        (doc.snapshot_ids().into_iter())
            .filter(|id| !self.expunged.contains(id))
            .collect()
    }

    /// The id `id` has now: itself when no expunge renamed it, else the newest id the
    /// `expunged/` objects lead to (each read), `None` when one says the snapshot was
    /// dropped or the chain does not end.
    pub fn resolve(
        &self,
        remote: &dyn Remote,
        id: &ObjectId,
    ) -> Result<Option<ObjectId>, RemoteError> {
        let mut at = *id;
        for _ in 0..RENAMES_FOLLOWED {
            if !self.expunged.contains(&at) {
                return Ok(Some(at));
            }
            let key = layout::expunged_key(&at);
            let body = retry(|| remote.get(&key, None))?.ok_or_else(|| gone(&key))?;
            match layout::decode_expunged(&key, &body)? {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The objects [`RemoteState::objects`] holds: copies stored whole first, then those
    /// whose base is already in, until none is added (a chain is at most 17 frames long).
    fn readable(&self) -> HashSet<ObjectId> {
        let copies: Vec<&Indexed> = (self.packs.iter())
            .filter(|(pack, _)| self.pack_files.contains_key(pack))
            .filter(|(pack, _)| !self.marked.contains(&layout::pack_key(pack)))
            .flat_map(|(_, objects)| objects)
            .collect();
        let mut readable: HashSet<ObjectId> = (copies.iter())
            .filter(|o| o.base.is_none())
            .map(|o| o.id)
            .collect();
        loop {
            let before = readable.len();
            for copy in &copies {
                if copy.base.is_some_and(|b| readable.contains(&b)) {
                    readable.insert(copy.id);
                }
            }
            if readable.len() == before {
                return readable;
            }
        }
    }

    /// A snapshot record on the remote, checked against its id.
    pub fn read_record(
        &self,
        remote: &dyn Remote,
        id: &ObjectId,
    ) -> Result<snap_store::SnapshotRecord, RemoteError> {
        let key = layout::record_key(id);
        let raw = retry(|| remote.get(&key, None))?.ok_or_else(|| gone(&key))?;
        let corrupt = |why: String| RemoteError::Corrupt {
            key: key.clone(),
            why,
        };
        if ObjectId::of(snap_store::ObjectKind::Snapshot, &raw) != *id {
            return Err(corrupt("its bytes do not hash to its id".into()));
        }
        snap_store::SnapshotRecord::decode(*id, &raw).map_err(|e| corrupt(e.to_string()))
    }

    /// The number the next ref of `workspace` takes.
    pub fn next_ref(&self, workspace: &str) -> u64 {
        self.refs.get(workspace).map_or(1, |(_, n)| n + 1)
    }
}

/// An object listed a moment ago and gone now: only a remote gc removes objects.
fn gone(key: &str) -> RemoteError {
    RemoteError::Corrupt {
        key: key.to_string(),
        why: "listed, then absent (a remote gc may be running)".into(),
    }
}

/// Each workspace's newest ref (the largest number) among the listed keys.
fn newest_refs(listed: &[crate::backend::Listed]) -> BTreeMap<String, (String, u64)> {
    let mut out: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for l in listed {
        let mut parts = l.key.trim_start_matches("refs/").split('/');
        let (Some(ws), Some(n), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let newer = out.get(ws).is_none_or(|(_, old)| n > *old);
        if newer {
            out.insert(ws.to_string(), (l.key.clone(), n));
        }
    }
    out
}
