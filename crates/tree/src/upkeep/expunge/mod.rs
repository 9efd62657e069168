//! `Workspace::expunge`: a deliberate loss of history (docs/SAFETY.md). Paths are taken out of
//! every snapshot (or the ones named): the trees that held them are written again, and the
//! records of those snapshots and of every snapshot after them (their parents changed, and
//! so their ids) are replaced at the same sequence numbers. HEAD, the redo stack and
//! `revert=` meta are remapped in the same commit, with an old -> new id table so old ids
//! still resolve. Then [`snap_store::Store::purge`] rewrites the packs so the bytes are gone.
//! The working tree is never touched; a path still on disk joins `exclude_paths` unless told.

mod rewrite;

use crate::history::query::Reader;
use crate::record::Recorder;
use std::collections::{HashMap, HashSet};

use snap_store::{
    ChangeStats, Commit, DirCacheUpdate, ExpungeRows, HistoryState, ObjectId, ObjectKind,
    PurgeReport, SnapshotRecord, StatCacheUpdate,
};

use crate::error::TreeError;
use crate::flat::{self, count_changes, diff_files};
use crate::parts::Run;
use crate::upkeep::Upkeep;
use crate::{FlatTree, add_exclude_path};

pub use rewrite::Taken;
use rewrite::{Rewriter, Rewritten};

/// Whether the expunged paths still on disk are left out of later saves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracking {
    /// Add each to `exclude_paths`, or the next save records it again (the default).
    Exclude,
    /// Leave the config alone (`--keep-tracking`).
    Keep,
}

/// What to expunge.
#[derive(Clone, Copy, Debug)]
pub struct ExpungeAsk<'a> {
    /// Workspace-relative paths (files or directories).
    pub paths: &'a [Vec<u8>],
    /// Only these snapshots' trees (references); empty: every snapshot.
    pub snapshots: &'a [String],
    /// What becomes of the paths on disk.
    pub tracking: Tracking,
}

/// One snapshot given a new id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// Its sequence number, which stays.
    pub seq: u64,
    /// The id it had.
    pub old: ObjectId,
    /// The id it has now (or would have).
    pub new: ObjectId,
    /// True when its tree held an expunged path; false when only its parent changed.
    pub held: bool,
}

/// What an expunge did, or would do.
#[derive(Clone, Debug, Default)]
pub struct ExpungeOutcome {
    /// True for a preview: nothing was written.
    pub dry_run: bool,
    /// Every snapshot given a new id, in sequence order.
    pub renamed: Vec<Renamed>,
    /// What was taken out, by expunged path (a path no snapshot held is absent).
    pub taken: Vec<(Vec<u8>, Taken)>,
    /// Paths added to `exclude_paths` (or that would be).
    pub excluded: Vec<Vec<u8>>,
    /// The purge that took the bytes out of the packs (not in a preview).
    pub purge: Option<PurgeReport>,
}

impl Upkeep<'_> {
    pub(crate) fn expunge(
        &self,
        ask: ExpungeAsk<'_>,
        run: Run,
    ) -> Result<ExpungeOutcome, TreeError> {
        // Every unnamed pack gc would keep, not only those holding a snapshot the catalog
        // lacks: the purge's last step could delete none of them, and would stop there,
        // leaving every writing command to fail on the pending purge until a repair.
        if let Some(path) = self.parts.store.unnamed_packs_kept()?.first() {
            return Err(TreeError::ExpungeRefused(format!(
                "{} may hold history the catalog does not name: run `snap repair` first",
                path.display()
            )));
        }
        let targets = self.expunge_targets(ask.snapshots)?;
        let writer = match run {
            Run::DryRun => self.parts.store.dry_writer(),
            Run::Apply => {
                // Before any pack of the rewrite is sealed: a kill before the commit is then
                // rolled back by the next writing command, never taken in by a repair.
                self.parts.store.begin_pack_intent()?;
                self.parts.store.writer()
            }
        };
        let mut rewriter = Rewriter::new(&self.parts.store, &writer, ask.paths);
        let plan = self.plan_expunge(&mut rewriter, targets.as_ref())?;
        let taken: Vec<(Vec<u8>, Taken)> = rewriter.taken.clone().into_iter().collect();
        let excluded = self.on_disk(ask);
        let mut out = ExpungeOutcome {
            dry_run: run == Run::DryRun,
            renamed: plan.renamed.clone(),
            taken,
            excluded,
            purge: None,
        };
        if run == Run::DryRun {
            return Ok(out);
        }
        if plan.renamed.is_empty() {
            drop(writer);
            self.parts.store.abort_pack_intent()?;
            return Ok(out);
        }
        // The config first: killed after it, the path is left out and history as it was.
        for path in &out.excluded {
            add_exclude_path(self.parts.store.dir(), &String::from_utf8_lossy(path))?;
        }
        for (_, record) in &plan.records {
            writer.put(ObjectKind::Snapshot, &record.encode())?;
        }
        let removed_files: Vec<Vec<u8>> = (out.taken.iter())
            .flat_map(|(_, t)| t.files.iter().cloned())
            .collect();
        let mut commit = self.expunge_commit(plan, removed_files)?;
        commit.packs = writer.finish()?;
        self.parts.store.commit_expunge(commit)?;
        out.purge = Some(self.parts.store.purge()?);
        Ok(out)
    }

    /// The snapshots whose trees are rewritten; `None` for all.
    fn expunge_targets(&self, refs: &[String]) -> Result<Option<HashSet<ObjectId>>, TreeError> {
        if refs.is_empty() {
            return Ok(None);
        }
        let mut out = HashSet::new();
        for r in refs {
            out.insert(Reader::new(self.parts).resolve(r)?.id);
        }
        Ok(Some(out))
    }

    /// The expunged paths the working tree still has: they join `exclude_paths`.
    fn on_disk(&self, ask: ExpungeAsk<'_>) -> Vec<Vec<u8>> {
        if ask.tracking == Tracking::Keep {
            return Vec::new();
        }
        (ask.paths.iter())
            .filter(|p| {
                crate::scan::abs(&self.parts.root, p)
                    .symlink_metadata()
                    .is_ok()
            })
            .cloned()
            .collect()
    }

    /// Every record in sequence order, rewritten where its tree, parent or `revert=` meta
    /// changes.
    fn plan_expunge(
        &self,
        rewriter: &mut Rewriter<'_>,
        targets: Option<&HashSet<ObjectId>>,
    ) -> Result<ExpungePlan, TreeError> {
        let mut plan = ExpungePlan::default();
        // Old id -> (new id, new root, what its tree no longer holds).
        let mut now: HashMap<ObjectId, (ObjectId, Rewritten)> = HashMap::new();
        for (id, record) in self.parts.store.snapshots()? {
            let held = targets.is_none_or(|t| t.contains(&id));
            let root = match held {
                true => rewriter.root(record.root)?,
                false => Rewritten::same(record.root),
            };
            let parent = record
                .parent
                .map(|p| now.get(&p).map_or(p, |(new, _)| *new));
            let meta = remap_meta(&record.meta, &plan.ids);
            let changed = root.id != record.root || parent != record.parent || meta != record.meta;
            if !changed {
                now.insert(id, (id, root));
                continue;
            }
            let parent_root = record.parent.and_then(|p| now.get(&p)).map(|(_, r)| *r);
            let stats = self.expunged_stats(&record, root, parent_root, rewriter)?;
            let new = SnapshotRecord {
                root: root.id,
                parent,
                meta,
                stats,
                ..record.clone()
            };
            let new_id = ObjectId::of(ObjectKind::Snapshot, &new.encode());
            plan.renamed.push(Renamed {
                seq: record.seq,
                old: id,
                new: new_id,
                held: root.id != record.root,
            });
            plan.ids.insert(id, new_id);
            plan.records.push((new_id, new));
            now.insert(id, (new_id, root));
        }
        Ok(plan)
    }

    /// A rewritten record's stats: its change against its (rewritten) parent, counted again
    /// where either side lost paths; totals less what its tree lost.
    fn expunged_stats(
        &self,
        record: &SnapshotRecord,
        root: Rewritten,
        parent: Option<Rewritten>,
        rewriter: &Rewriter<'_>,
    ) -> Result<ChangeStats, TreeError> {
        let mut stats = record.stats;
        stats.files = stats.files.saturating_sub(root.files);
        stats.bytes = stats.bytes.saturating_sub(root.bytes);
        let parent_lost = parent.is_some_and(|p| p.files > 0);
        if root.files == 0 && !parent_lost {
            return Ok(stats);
        }
        // Against its parent, or against nothing when it has none or the parent was pruned
        // (as `show` and `log --stats` count it): everything it holds was added.
        let (mut old, mut new) = match self.stored_parent(record)? {
            Some(parent_root) => flat::unfold_pair(&self.parts.store, &parent_root, &record.root)?,
            None => (
                FlatTree::new(),
                flat::flatten(&self.parts.store, &record.root)?,
            ),
        };
        let gone = |flat: &mut FlatTree, lost: bool| {
            for path in rewriter.paths().iter().filter(|_| lost) {
                flat::remove_within(flat, path);
            }
        };
        gone(&mut old, parent_lost);
        gone(&mut new, root.files > 0);
        let changes = diff_files(&old, &new);
        (stats.added, stats.modified, stats.deleted) = count_changes(&changes);
        if stats.lines.is_some() {
            stats.lines = Recorder::new(self.parts).line_stats(&old, &new, &changes);
        }
        Ok(stats)
    }

    /// The root of `record`'s parent, or `None` when it has none or the parent is gone from
    /// the store (pruned, then collected).
    fn stored_parent(&self, record: &SnapshotRecord) -> Result<Option<ObjectId>, TreeError> {
        let Some(parent) = record.parent else {
            return Ok(None);
        };
        match self.parts.store.snapshot(&parent) {
            Ok(parent) => Ok(Some(parent.root)),
            Err(snap_store::StoreError::MissingObject { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn expunge_commit(
        &self,
        plan: ExpungePlan,
        removed_files: Vec<Vec<u8>>,
    ) -> Result<Commit, TreeError> {
        let state = self.parts.store.history()?;
        let map = |id: ObjectId| plan.ids.get(&id).copied().unwrap_or(id);
        Ok(Commit {
            snapshots: plan.records,
            remove_snapshots: plan.renamed.iter().map(|r| r.old).collect(),
            history: Some(HistoryState {
                head: state.head.map(map),
                redo: state.redo.into_iter().map(map).collect(),
            }),
            stat_cache: StatCacheUpdate {
                remove: removed_files,
                dirs: DirCacheUpdate {
                    clear: true,
                    ..DirCacheUpdate::default()
                },
                ..StatCacheUpdate::default()
            },
            expunge: Some(ExpungeRows {
                renamed: plan.renamed.iter().map(|r| (r.old, r.new)).collect(),
            }),
            ..Commit::default()
        })
    }
}

/// An expunge's new records and renamings.
#[derive(Debug, Default)]
struct ExpungePlan {
    renamed: Vec<Renamed>,
    records: Vec<(ObjectId, SnapshotRecord)>,
    ids: HashMap<ObjectId, ObjectId>,
}

/// `revert=<hex>` pointed at the renamed snapshot's new id.
fn remap_meta(
    meta: &[(String, String)],
    ids: &HashMap<ObjectId, ObjectId>,
) -> Vec<(String, String)> {
    (meta.iter())
        .map(|(k, v)| {
            let renamed = (k == "revert")
                .then(|| ObjectId::from_hex(v))
                .flatten()
                .and_then(|old| ids.get(&old));
            match renamed {
                Some(new) => (k.clone(), new.to_hex()),
                None => (k.clone(), v.clone()),
            }
        })
        .collect()
}
