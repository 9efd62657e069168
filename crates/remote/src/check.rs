//! Checks: that a server honours create-only puts (`snap remote add`), and that a remote is
//! whole (`snap verify --remote`): every ref's snapshots (but those listed as expunged,
//! whose records are gone by design) have their records, every record's
//! tree is in an indexed pack, every indexed pack is there and hashes to its name.

use std::collections::HashSet;

use snap_store::{ObjectId, ObjectKind, SnapshotRecord};

use crate::backend::{Put, Remote};
use crate::state::RemoteState;
use crate::{RemoteError, retry};

/// Racing creates the conditional-put check makes of one key.
const RACERS: usize = 6;

/// Makes `RACERS` create-only puts of one new key at once, from as many threads: exactly one
/// must win, and the object must hold the winner's bytes. Removes the key after.
pub fn conditional_puts(remote: &dyn Remote) -> Result<(), RemoteError> {
    let key = format!("tmp/put-check-{}-{}", std::process::id(), now_nanos());
    let results: Vec<Result<Put, RemoteError>> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..RACERS)
            .map(|i| {
                let key = &key;
                s.spawn(move || remote.put_if_absent(key, format!("racer {i}").as_bytes()))
            })
            .collect();
        racers
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut won = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        if r? == Put::Created {
            won.push(i);
        }
    }
    let held = retry(|| remote.get(&key, None))?;
    let _ = remote.delete(&key);
    let refuse = |why: String| RemoteError::NoConditionalPuts {
        url: remote.describe(),
        why,
    };
    match won.as_slice() {
        [one] if held == Some(format!("racer {one}").into_bytes()) => Ok(()),
        [_] => Err(refuse(
            "the object does not hold the winning put's bytes".into(),
        )),
        _ => Err(refuse(format!(
            "{} of {RACERS} racing creates of one key succeeded",
            won.len()
        ))),
    }
}

/// What `verify --remote` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteCheck {
    /// Workspaces (refs) checked.
    pub workspaces: usize,
    /// Snapshots their newest refs name.
    pub snapshots: usize,
    /// Packs read and hashed.
    pub packs: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Each problem, one line each.
    pub problems: Vec<String>,
}

/// Checks the remote: see the module's documentation. With `read_data`, every pack is
/// downloaded and hashed; without, only its presence and length are checked.
pub fn verify(remote: &dyn Remote, read_data: bool) -> Result<RemoteCheck, RemoteError> {
    let state = RemoteState::read_existing(remote)?;
    let mut check = RemoteCheck::default();
    for pack in state.packs.keys() {
        check.packs += 1;
        check_pack(remote, &state, pack, read_data, &mut check)?;
    }
    // Every indexed object, marked packs' too (state.objects leaves those out for pushes).
    let indexed: HashSet<ObjectId> = state.packs.values().flatten().map(|o| o.id).collect();
    let mut seen = HashSet::new();
    for workspace in state.refs.keys() {
        check.workspaces += 1;
        let Some(doc) = state.read_ref(remote, workspace)? else {
            continue;
        };
        // An expunged id's record is deleted by the push that records it (crate::push).
        for id in state.named_live(&doc) {
            if seen.insert(id) {
                check.snapshots += 1;
                check_record(remote, &indexed, &id, &mut check)?;
            }
        }
    }
    let unreadable = state
        .unreadable_refs
        .values()
        .chain(&state.unreadable_indexes);
    for (key, why) in unreadable {
        check.problems.push(format!("{key}: {why}{REPAIR}"));
    }
    Ok(check)
}

fn check_pack(
    remote: &dyn Remote,
    state: &RemoteState,
    pack: &ObjectId,
    read_data: bool,
    check: &mut RemoteCheck,
) -> Result<(), RemoteError> {
    let key = state.names.pack(pack);
    if !state.pack_files.contains_key(pack) {
        check
            .problems
            .push(format!("{key}: indexed, and absent{REPAIR}"));
        return Ok(());
    }
    if !read_data {
        return Ok(());
    }
    let body = match retry(|| remote.get(&key, None)) {
        Ok(Some(body)) => body,
        Ok(None) => {
            check
                .problems
                .push(format!("{key}: indexed, and absent{REPAIR}"));
            return Ok(());
        }
        Err(RemoteError::Corrupt { why, .. }) => {
            check.problems.push(format!("{key}: {why}{REPAIR}"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    check.bytes += body.len() as u64;
    if !pack_body_matches(pack, &body) {
        check
            .problems
            .push(format!("{key}: its body does not hash to its name{REPAIR}"));
    }
    Ok(())
}

/// How a damaged pack is healed, as a problem line says it.
const REPAIR: &str = " (snap push --repair from a store that holds its objects sends them again)";

/// The indexed packs that are absent or do not hash to their names; each is read whole.
pub fn damaged_packs(
    remote: &dyn Remote,
    state: &RemoteState,
) -> Result<Vec<ObjectId>, RemoteError> {
    let mut damaged = Vec::new();
    for pack in state.packs.keys() {
        let sound = match state.pack_files.contains_key(pack) {
            false => false,
            true => match remote.get(&state.names.pack(pack), None) {
                Ok(Some(body)) => pack_body_matches(pack, &body),
                Ok(None) => false,
                // Larger than any pack snap writes: damage, not a reason to stop.
                Err(RemoteError::Corrupt { .. }) => false,
                Err(e) => return Err(e),
            },
        };
        if !sound {
            damaged.push(*pack);
        }
    }
    Ok(damaged)
}

/// True when the pack's footer gives a body that hashes to `pack`.
fn pack_body_matches(pack: &ObjectId, body: &[u8]) -> bool {
    let Some(footer) = body.len().checked_sub(56).map(|at| &body[at..]) else {
        return false;
    };
    let mut end = [0u8; 8];
    end.copy_from_slice(&footer[8..16]);
    let end = u64::from_le_bytes(end);
    usize::try_from(end)
        .ok()
        .filter(|e| *e <= body.len() - 56)
        .is_some_and(|e| {
            blake3::hash(&body[..e]).as_bytes() == &pack.0 && &footer[16..48] == pack.0.as_slice()
        })
}

fn check_record(
    remote: &dyn Remote,
    indexed: &HashSet<ObjectId>,
    id: &ObjectId,
    check: &mut RemoteCheck,
) -> Result<(), RemoteError> {
    let key = remote.names().record(id);
    let raw = match retry(|| remote.get(&key, None)) {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            check
                .problems
                .push(format!("{key}: a ref names it, and it is absent"));
            return Ok(());
        }
        Err(RemoteError::Corrupt { why, .. }) => {
            check.problems.push(format!("{key}: {why}"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    check.bytes += raw.len() as u64;
    if ObjectId::of(ObjectKind::Snapshot, &raw) != *id {
        check
            .problems
            .push(format!("{key}: its bytes do not hash to its id"));
        return Ok(());
    }
    match SnapshotRecord::decode(*id, &raw) {
        Ok(record) if !indexed.contains(&record.root) => check.problems.push(format!(
            "{key}: its tree {} is in no indexed pack",
            record.root
        )),
        Ok(_) => {}
        Err(e) => check.problems.push(format!("{key}: {e}")),
    }
    Ok(())
}

fn now_nanos() -> u128 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_nanos())
}
