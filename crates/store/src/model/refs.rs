//! Snapshot references: `@` (HEAD), `@~N`, `last`, `#SEQ`, `step:N` (the newest snapshot of
//! that step in HEAD's session, or in any when HEAD has none), `step:N@SESSION`, and id
//! prefixes.

use crate::{ObjectId, SnapshotRecord, Store, StoreError};

/// Shortest id prefix accepted, in hex digits.
pub const MIN_PREFIX: usize = 4;

impl Store {
    /// Resolves a reference to a snapshot id and its record.
    pub fn resolve(&self, reference: &str) -> Result<(ObjectId, SnapshotRecord), StoreError> {
        let bad = |why: &str| StoreError::BadRef {
            reference: reference.to_string(),
            why: why.to_string(),
        };
        if reference == "@" || reference == "HEAD" {
            return self
                .head_record()
                .ok_or_else(|| bad("there is no snapshot yet"))?;
        }
        if let Some(n) = reference
            .strip_prefix("@~")
            .or_else(|| reference.strip_prefix("HEAD~"))
        {
            let n: u64 = n.parse().map_err(|_| bad("expected @~N with N a number"))?;
            return self.ancestor(reference, n);
        }
        if let Some((remote, seq)) = reference.split_once('#').filter(|(r, _)| !r.is_empty()) {
            return self.resolve_pulled(reference, remote, seq);
        }
        let all = self.snapshots()?;
        let found = if reference == "last" {
            all.last().cloned()
        } else if let Some(seq) = reference.strip_prefix('#') {
            let seq: u64 = seq
                .parse()
                .map_err(|_| bad("expected #SEQ with SEQ a number"))?;
            let newest = all.iter().map(|(_, r)| r.seq).max().unwrap_or(0);
            let mut matches: Vec<_> = all.into_iter().filter(|(_, r)| r.seq == seq).collect();
            if matches.is_empty() && seq >= 1 && seq < newest {
                // Numbers are handed out in order and never reused: a lower one that is
                // missing was there once.
                return Err(bad(
                    "that snapshot was pruned or deleted (`snap log --all` lists those left)",
                ));
            }
            if matches.len() > 1 {
                // Two lines of history joined by a repair (a catalog put back from an older
                // copy saved on from there): each snapshot keeps the number it was made with.
                return Err(StoreError::AmbiguousRef {
                    reference: reference.to_string(),
                    candidates: matches.iter().map(|(id, _)| id.short()).collect(),
                });
            }
            matches.pop()
        } else if let Some(step) = reference.strip_prefix("step:") {
            // `step:N@SESSION` names another session's turn.
            let (step, named) = match step.split_once('@') {
                Some((step, session)) => (step, Some(session.to_string())),
                None => (step, None),
            };
            let step: u64 = step
                .parse()
                .map_err(|_| bad("expected step:N or step:N@SESSION with N a number"))?;
            // Steps count turns within one agent session: HEAD's, when it has one.
            let session = match (named, self.head_record()) {
                (Some(named), _) => Some(named),
                (None, Some(head)) => head?.1.session,
                (None, None) => None,
            };
            all.into_iter()
                .rev()
                .find(|(_, r)| r.step == Some(step) && (session.is_none() || r.session == session))
        } else {
            return match resolve_prefix(reference, all) {
                Err(StoreError::UnknownRef(_)) => match self.resolve_renamed(reference) {
                    Err(StoreError::UnknownRef(_)) => {
                        let pulled = self.pulled()?.into_iter().map(|p| (p.id, p.record));
                        resolve_prefix(reference, pulled.collect())
                    }
                    found => found,
                },
                found => found,
            };
        };
        found.ok_or_else(|| StoreError::UnknownRef(reference.to_string()))
    }

    /// An id prefix of a snapshot an expunge rewrote: its new id's snapshot (a harness may
    /// hold the old id of a checkpoint).
    fn resolve_renamed(&self, reference: &str) -> Result<(ObjectId, SnapshotRecord), StoreError> {
        let lower = reference.to_ascii_lowercase();
        let mut found: Vec<ObjectId> = (self.catalog.renamed()?.into_iter())
            .filter(|(old, _)| old.to_hex().starts_with(&lower))
            .map(|(_, new)| new)
            .collect();
        found.dedup();
        match found.as_slice() {
            [new] => Ok((*new, self.snapshot(new)?)),
            [] => Err(StoreError::UnknownRef(reference.to_string())),
            _ => Err(StoreError::AmbiguousRef {
                reference: reference.to_string(),
                candidates: found.iter().map(ObjectId::short).collect(),
            }),
        }
    }

    /// `REMOTE#N`: the snapshot pulled from that remote that its workspace numbered N.
    fn resolve_pulled(
        &self,
        reference: &str,
        remote: &str,
        seq: &str,
    ) -> Result<(ObjectId, SnapshotRecord), StoreError> {
        let seq: u64 = seq.parse().map_err(|_| StoreError::BadRef {
            reference: reference.to_string(),
            why: "expected REMOTE#N with N a number".into(),
        })?;
        let mut found: Vec<_> = (self.pulled()?.into_iter())
            .filter(|p| p.remote == remote && p.record.seq == seq)
            .collect();
        match found.len() {
            0 => Err(StoreError::UnknownRef(reference.to_string())),
            1 => {
                let pulled = found.remove(0);
                Ok((pulled.id, pulled.record))
            }
            // Two workspaces of one remote both made a snapshot N: name it by id.
            _ => Err(StoreError::AmbiguousRef {
                reference: reference.to_string(),
                candidates: found.iter().map(|p| p.id.short()).collect(),
            }),
        }
    }

    fn head_record(&self) -> Option<Result<(ObjectId, SnapshotRecord), StoreError>> {
        match self.history() {
            Ok(h) => h.head.map(|id| self.snapshot(&id).map(|r| (id, r))),
            Err(e) => Some(Err(e)),
        }
    }

    /// The snapshot `n` parents back from HEAD.
    fn ancestor(&self, reference: &str, n: u64) -> Result<(ObjectId, SnapshotRecord), StoreError> {
        let head = self
            .history()?
            .head
            .ok_or_else(|| StoreError::UnknownRef(reference.to_string()))?;
        let mut current = (head, self.snapshot(&head)?);
        for _ in 0..n {
            let parent = current.1.parent.ok_or_else(|| StoreError::BadRef {
                reference: reference.to_string(),
                why: "history is not that deep".into(),
            })?;
            let record = self
                .catalog
                .snapshot(&parent)?
                .ok_or_else(|| StoreError::BadRef {
                    reference: reference.to_string(),
                    why: "history is not that deep (older snapshots were pruned)".into(),
                })?;
            current = (parent, record);
        }
        Ok(current)
    }
}

fn resolve_prefix(
    reference: &str,
    all: Vec<(ObjectId, SnapshotRecord)>,
) -> Result<(ObjectId, SnapshotRecord), StoreError> {
    let lower = reference.to_ascii_lowercase();
    if lower.len() < MIN_PREFIX || lower.len() > 64 || !lower.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(StoreError::UnknownRef(reference.to_string()));
    }
    let mut matches: Vec<_> = all
        .into_iter()
        .filter(|(id, _)| id.to_hex().starts_with(&lower))
        .collect();
    match matches.len() {
        0 => Err(StoreError::UnknownRef(reference.to_string())),
        1 => Ok(matches.remove(0)),
        _ => Err(StoreError::AmbiguousRef {
            reference: reference.to_string(),
            candidates: matches
                .iter()
                .map(|(id, r)| format!("{} (#{})", id.short(), r.seq))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChangeStats, SnapshotKind};

    fn record(seq: u64) -> SnapshotRecord {
        SnapshotRecord {
            seq,
            root: ObjectId([0; 32]),
            parent: None,
            time_ns: 0,
            kind: SnapshotKind::Save,
            message: String::new(),
            step: None,
            session: None,
            meta: Vec::new(),
            stats: ChangeStats::default(),
        }
    }

    fn id(tail: u8) -> ObjectId {
        let mut b = [0xab; 32];
        b[1] = 0xcd;
        b[2] = tail;
        ObjectId(b)
    }

    #[test]
    fn prefixes_resolve_and_ambiguity_lists_candidates() {
        let all = vec![(id(1), record(1)), (id(2), record(2))];
        assert_eq!(resolve_prefix("abcd02", all.clone()).unwrap().1.seq, 2);
        assert_eq!(resolve_prefix("ABCD01", all.clone()).unwrap().1.seq, 1);
        match resolve_prefix("abcd", all.clone()) {
            Err(StoreError::AmbiguousRef { candidates, .. }) => {
                assert_eq!(candidates.len(), 2);
                assert!(candidates[0].contains("(#1)"));
            }
            other => panic!("expected ambiguity, got {other:?}"),
        }
        assert!(
            matches!(
                resolve_prefix("abc", all.clone()),
                Err(StoreError::UnknownRef(_))
            ),
            "too short"
        );
        assert!(matches!(
            resolve_prefix("ffff", all),
            Err(StoreError::UnknownRef(_))
        ));
    }
}
