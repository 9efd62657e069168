//! What a remote holds, read without any lock: its packs' indexes (so a push or a pull knows
//! which objects are there without reading a pack), its snapshot records, its refs and the
//! snapshot ids an expunge renamed away (`expunged/`, listed; their bodies are read only
//! when a new id is wanted, [`RemoteState::resolve`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use snap_store::ObjectId;

use crate::backend::{Listed, Remote};
use crate::layout::{self, Indexed, RefDoc};
use crate::names::{Folder, Names, token_in};
use crate::{RemoteError, retry};

/// A remote's contents, as listed once. Records and expunged ids are held by key: an
/// encrypted remote's listing names tokens, not ids, so they are asked for by id
/// ([`RemoteState::has_record`], [`RemoteState::is_expunged`]).
#[derive(Debug, Default)]
pub struct RemoteState {
    /// How the remote names its objects.
    pub names: Names,
    /// Each indexed pack with its objects. A pack without its index is not counted: its push
    /// was killed before the index, and nothing reaches its objects.
    pub packs: BTreeMap<ObjectId, Vec<Indexed>>,
    /// Pack files present whose id is known, with their sizes (indexed or not).
    pub pack_files: HashMap<ObjectId, u64>,
    /// Pack files of an encrypted remote that no index names (a killed push's): their ids
    /// are unknown, and only a remote gc's marks reach them.
    pub stray_packs: Vec<Listed>,
    /// Every object a push may count on: one with a copy in an indexed, unmarked pack that
    /// is there, whose base (and its base, down the chain) has such a copy too.
    pub objects: HashSet<ObjectId>,
    /// Indexes that did not read (damaged, or sealed under another key): key and why. Their
    /// packs count as unindexed, so a push sends what they held again.
    pub unreadable_indexes: Vec<(String, String)>,
    /// The keys of the snapshot records present.
    pub record_keys: HashSet<String>,
    /// Each workspace's newest ref key and number.
    pub refs: BTreeMap<String, (String, u64)>,
    /// Newest refs of an encrypted remote that did not open, by workspace token: key and
    /// why. Their workspace is unknown, so every reader that needs all refs is refused.
    pub unreadable_refs: BTreeMap<String, (String, String)>,
    /// The keys a remote gc has marked for deletion (`trash/<key>`, crate::gc): the objects
    /// of a marked pack are not in [`RemoteState::objects`], so no push relies on them.
    pub marked: HashSet<String>,
    /// The layout marker: absent on a remote no push has written to.
    pub layout: layout::Marker,
    /// The keys of the snapshot ids an expunge renamed away (`expunged/<id>`): no command
    /// takes, pushes or keeps their records, whatever a ref names.
    pub expunged_keys: HashSet<String>,
}

/// The most renamings [`RemoteState::resolve`] follows: each expunge of a snapshot adds one.
const RENAMES_FOLLOWED: usize = 64;

impl RemoteState {
    /// Lists the remote and reads every pack index, for a push: a remote without a
    /// marker reads as empty; one of a layout this snap does not know is refused, and so
    /// is one whose layout is not the one `remote` names objects by.
    pub fn read(remote: &dyn Remote) -> Result<RemoteState, RemoteError> {
        let names = remote.names();
        let mut state = RemoteState {
            layout: layout::read_marker(remote)?,
            names: names.clone(),
            ..RemoteState::default()
        };
        check_layout(remote, state.layout, &names)?;
        let trash = names.folder(Folder::Trash);
        for listed in retry(|| remote.list(&trash))? {
            state
                .marked
                .extend(listed.key.strip_prefix(&trash).map(str::to_string));
        }
        state.read_packs(remote)?;
        let records = retry(|| remote.list(&names.folder(Folder::Snapshots)))?;
        state.record_keys = records.into_iter().map(|l| l.key).collect();
        let expunged = retry(|| remote.list(&names.folder(Folder::Expunged)))?;
        state.expunged_keys = expunged.into_iter().map(|l| l.key).collect();
        state.read_refs(remote)?;
        state.objects = state.readable();
        Ok(state)
    }

    /// The indexes (each read, its pack id taken from its body and checked against its key),
    /// then the pack files, matched to them by key.
    fn read_packs(&mut self, remote: &dyn Remote) -> Result<(), RemoteError> {
        let folder = self.names.folder(Folder::Index);
        for listed in retry(|| remote.list(&folder))? {
            if token_in(&listed.key, &folder, ".idx").is_none() {
                continue;
            }
            match self.read_index(remote, &listed.key) {
                Ok((pack, objects)) => drop(self.packs.insert(pack, objects)),
                Err(RemoteError::Corrupt { key, why }) => self.unreadable_indexes.push((key, why)),
                Err(e) => return Err(e),
            }
        }
        let by_key: HashMap<String, ObjectId> = (self.packs.keys())
            .map(|p| (self.names.pack(p), *p))
            .collect();
        let folder = self.names.folder(Folder::Packs);
        for listed in retry(|| remote.list(&folder))? {
            let plain = || token_in(&listed.key, &folder, ".pack").and_then(ObjectId::from_hex);
            let id = by_key
                .get(&listed.key)
                .copied()
                .or_else(|| match &self.names {
                    Names::Plain => plain(),
                    Names::Keyed(_) => None,
                });
            match id {
                Some(id) => drop(self.pack_files.insert(id, listed.size)),
                None => self.stray_packs.push(listed),
            }
        }
        Ok(())
    }

    /// One index: its pack, taken from its body and checked against its key, and objects.
    fn read_index(
        &self,
        remote: &dyn Remote,
        key: &str,
    ) -> Result<(ObjectId, Vec<Indexed>), RemoteError> {
        let bytes = retry(|| remote.get(key, None))?.ok_or_else(|| gone(key))?;
        let pack = layout::index_pack(&bytes)
            .filter(|p| self.names.index(p) == key)
            .ok_or_else(|| RemoteError::Corrupt {
                key: key.to_string(),
                why: "not the index of the pack its key names".into(),
            })?;
        Ok((pack, layout::decode_index(key, &pack, &bytes)?))
    }

    /// Each workspace's newest ref. On an encrypted remote the key names a token, so the
    /// ref is read to learn its workspace (one small get per workspace).
    fn read_refs(&mut self, remote: &dyn Remote) -> Result<(), RemoteError> {
        let folder = self.names.folder(Folder::Refs);
        let newest = newest_refs(&folder, &retry(|| remote.list(&folder))?);
        for (token, (key, n)) in newest {
            if !self.names.sealed() {
                self.refs.insert(token, (key, n));
                continue;
            }
            let read = retry(|| remote.get(&key, None))
                .and_then(|b| b.ok_or_else(|| gone(&key)))
                .and_then(|bytes| RefDoc::decode(&key, &bytes));
            match read {
                Ok(doc) if self.names.workspace_token(&doc.workspace) == token => {
                    self.refs.insert(doc.workspace, (key, n));
                }
                Ok(_) => {
                    let why = "it names another workspace than its key".to_string();
                    self.unreadable_refs.insert(token, (key, why));
                }
                Err(RemoteError::Corrupt { why, .. }) => {
                    self.unreadable_refs.insert(token, (key, why));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether the remote holds the record of `id`.
    pub fn has_record(&self, id: &ObjectId) -> bool {
        self.record_keys.contains(&self.names.record(id))
    }

    /// Whether an expunge renamed `id` away.
    pub fn is_expunged(&self, id: &ObjectId) -> bool {
        self.expunged_keys.contains(&self.names.expunged(id))
    }

    /// The first newest ref or index that did not read, as the error naming it: what a
    /// collection, which must see everything the remote holds, refuses to run past.
    pub fn refuse_unreadable(&self) -> Result<(), RemoteError> {
        let first = self
            .unreadable_refs
            .values()
            .chain(&self.unreadable_indexes)
            .next();
        match first {
            Some((key, why)) => Err(RemoteError::Corrupt {
                key: key.clone(),
                why: why.clone(),
            }),
            None => Ok(()),
        }
    }

    /// [`RemoteState::read`] for every command but a push: a remote without the marker is
    /// [`RemoteError::NotARemote`], so a mistyped URL never passes as an empty remote.
    pub fn read_existing(remote: &dyn Remote) -> Result<RemoteState, RemoteError> {
        let state = RemoteState::read(remote)?;
        match state.layout {
            layout::Marker::Plain | layout::Marker::Sealed => Ok(state),
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
        let token = self.names.workspace_token(workspace);
        if let Some((key, why)) = self.unreadable_refs.get(&token) {
            return Err(RemoteError::Corrupt {
                key: key.clone(),
                why: why.clone(),
            });
        }
        let Some((key, _)) = self.refs.get(workspace) else {
            return Ok(None);
        };
        let bytes = retry(|| remote.get(key, None))?.ok_or_else(|| gone(key))?;
        RefDoc::decode(key, &bytes).map(Some)
    }

    /// The snapshots `doc` names that no expunge renamed away, in its order.
    pub fn named_live(&self, doc: &RefDoc) -> Vec<ObjectId> {
        (doc.snapshot_ids().into_iter())
            .filter(|id| !self.is_expunged(id))
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
            if !self.is_expunged(&at) {
                return Ok(Some(at));
            }
            let key = self.names.expunged(&at);
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
            .filter(|(pack, _)| !self.marked.contains(&self.names.pack(pack)))
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
        let key = self.names.record(id);
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
        let token = self.names.workspace_token(workspace);
        let unreadable = self.unreadable_refs.get(&token).map(|(key, _)| key);
        let n_of = |key: &String| key.rsplit('/').next().and_then(|n| n.parse::<u64>().ok());
        let known = self.refs.get(workspace).map(|(_, n)| *n);
        known.max(unreadable.and_then(n_of)).map_or(1, |n| n + 1)
    }
}

/// Refuses a marker that does not fit how `remote` names objects: a sealed remote opened
/// without its key, or a key used on a plain one.
fn check_layout(
    remote: &dyn Remote,
    marker: layout::Marker,
    names: &Names,
) -> Result<(), RemoteError> {
    let why = match (marker, names.sealed()) {
        (layout::Marker::Sealed, false) => "it is encrypted, and no key of it was given",
        (layout::Marker::Plain, true) => "it is not encrypted, and a key was given for it",
        _ => return Ok(()),
    };
    Err(RemoteError::Encryption {
        url: remote.describe(),
        why: why.into(),
    })
}

/// An object listed a moment ago and gone now: only a remote gc removes objects.
fn gone(key: &str) -> RemoteError {
    RemoteError::Corrupt {
        key: key.to_string(),
        why: "listed, then absent (a remote gc may be running)".into(),
    }
}

/// Each workspace token's newest ref (the largest number) among the keys listed in `folder`.
fn newest_refs(folder: &str, listed: &[Listed]) -> BTreeMap<String, (String, u64)> {
    let mut out: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for l in listed {
        let Some(rest) = l.key.strip_prefix(folder) else {
            continue;
        };
        let mut parts = rest.split('/');
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
