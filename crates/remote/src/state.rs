//! What a remote holds, read without any lock: its packs' indexes (so a push or a pull knows
//! which objects are there without reading a pack), its snapshot records and its refs.

use std::collections::{BTreeMap, HashMap, HashSet};

use snap_store::ObjectId;

use crate::backend::Remote;
use crate::layout::{self, RefDoc};
use crate::{RemoteError, retry};

/// A remote's contents, as listed once.
#[derive(Debug, Default)]
pub struct RemoteState {
    /// Each indexed pack with its objects. A pack without its index is not counted: its push
    /// was killed before the index, and nothing reaches its objects.
    pub packs: BTreeMap<ObjectId, Vec<ObjectId>>,
    /// Pack files present, with their sizes (indexed or not).
    pub pack_files: HashMap<ObjectId, u64>,
    /// Every object some indexed pack holds.
    pub objects: HashSet<ObjectId>,
    /// Snapshot records present.
    pub records: HashSet<ObjectId>,
    /// Each workspace's newest ref key and number.
    pub refs: BTreeMap<String, (String, u64)>,
}

impl RemoteState {
    /// Lists the remote and reads every pack index.
    pub fn read(remote: &dyn Remote) -> Result<RemoteState, RemoteError> {
        let mut state = RemoteState::default();
        for listed in retry(|| remote.list("packs/"))? {
            if let Some(id) = layout::id_in_key(&listed.key, "packs/", ".pack") {
                state.pack_files.insert(id, listed.size);
            }
        }
        for listed in retry(|| remote.list("index/"))? {
            let Some(pack) = layout::id_in_key(&listed.key, "index/", ".idx") else {
                continue;
            };
            let bytes =
                retry(|| remote.get(&listed.key, None))?.ok_or_else(|| gone(&listed.key))?;
            let ids = layout::decode_index(&listed.key, &pack, &bytes)?;
            state.objects.extend(ids.iter().copied());
            state.packs.insert(pack, ids);
        }
        for listed in retry(|| remote.list("snapshots/"))? {
            let hex = listed.key.trim_start_matches("snapshots/");
            state.records.extend(ObjectId::from_hex(hex));
        }
        state.refs = newest_refs(&retry(|| remote.list("refs/"))?);
        Ok(state)
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
