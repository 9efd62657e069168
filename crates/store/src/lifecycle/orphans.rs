//! Pack files the catalog does not name (orphans): which a gc may delete, and which may hold
//! history the catalog lost (a catalog put back from an older copy, a save whose commit
//! failed), which gc keeps and `repair` takes back.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::pack::{PackReader, pack_file_name};
use crate::{ObjectKind, Store, StoreError};

/// A pack file the catalog does not name.
pub(crate) struct Orphan {
    pub(crate) path: PathBuf,
    /// Where its frames end, or why its trailer does not read.
    pub(crate) trailer: Result<u64, String>,
    /// Last written before the catalog was made.
    pub(crate) before_catalog: bool,
}

impl Store {
    /// The pack files the catalog does not name.
    pub(crate) fn orphan_packs(&self) -> Result<Vec<Orphan>, StoreError> {
        let named: HashSet<String> = self
            .catalog
            .packs()?
            .iter()
            .map(|(p, _)| pack_file_name(p))
            .collect();
        let created = self.catalog.created_ns()?;
        let dir = self.dir().join("packs");
        let mut orphans = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| StoreError::io(&dir, e))? {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".pack") || named.contains(&name) {
                continue;
            }
            let path = entry.path();
            let trailer = PackReader::open(&path)
                .and_then(|r| r.read_trailer())
                .map(|t| t.2)
                .map_err(|e| e.to_string());
            let modified = entry.metadata().and_then(|m| m.modified());
            let before_catalog = match (created, modified) {
                (Some(created), Ok(modified)) => crate::catalog::unix_ns(modified) < created,
                _ => false,
            };
            orphans.push(Orphan {
                path,
                trailer,
                before_catalog,
            });
        }
        Ok(orphans)
    }

    /// True when packs the catalog does not name may hold history it lacks: the catalog
    /// named no pack as the command began (`catalog_lost`), a pack it names is missing, or
    /// one of `orphans` (those no commit dropped) does not read or holds a snapshot it lacks.
    /// A catalog put back from an older copy looks like that, and the newer history's
    /// snapshots may need objects that catalog calls dead: gc then drops nothing at all,
    /// neither unnamed packs nor named ones, nor objects, until `snap repair` takes that
    /// history back.
    pub(crate) fn history_may_be_outside(
        &self,
        catalog_lost: bool,
        orphans: &[Orphan],
    ) -> Result<bool, StoreError> {
        if catalog_lost || self.misses_a_named_pack()? {
            return Ok(true);
        }
        for orphan in orphans {
            if self.may_hold_history(orphan)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// True when gc, run now, would drop nothing the catalog names (see
    /// [`Store::history_may_be_outside`]).
    pub fn gc_would_hold_back(&self) -> Result<bool, StoreError> {
        let catalog_lost = self.catalog.packs()?.is_empty();
        self.history_may_be_outside(catalog_lost, &self.orphans_by_drop()?.1)
    }

    /// True when a pack the catalog names has no file: the catalog does not match the packs
    /// (one put back from an older copy names packs a later gc or merge replaced), and an
    /// unnamed pack may hold the only copy of what it locates there.
    fn misses_a_named_pack(&self) -> Result<bool, StoreError> {
        Ok((self.catalog.packs()?.iter()).any(|(p, _)| !self.pack_path(p).exists()))
    }

    /// True when the orphan does not read (nothing can be ruled out), or holds a snapshot
    /// object the catalog has no row for.
    fn may_hold_history(&self, orphan: &Orphan) -> Result<bool, StoreError> {
        match orphan.trailer {
            Ok(end) => self.holds_unknown_snapshot(&orphan.path, end),
            Err(_) => Ok(true),
        }
    }

    /// True when the pack's frames up to `end` hold a snapshot object the catalog has no
    /// row for, or do not scan.
    fn holds_unknown_snapshot(&self, path: &Path, end: u64) -> Result<bool, StoreError> {
        let Ok(frames) = PackReader::open(path).and_then(|r| r.scan_frames(end)) else {
            return Ok(true);
        };
        for frame in frames.iter().filter(|f| f.kind == ObjectKind::Snapshot) {
            if self.catalog.snapshot(&frame.id)?.is_none() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The pack files the catalog does not name (nor lists as dropped) whose trailer reads
    /// and that hold a snapshot it lacks, or whose frames do not scan: history outside the
    /// catalog, as far as can be told, which gc keeps and `snap repair` takes back (a
    /// catalog put back from an older copy, or a save whose commit failed).
    pub fn history_outside_catalog(&self) -> Result<Vec<PathBuf>, StoreError> {
        let mut found = Vec::new();
        for orphan in self.orphans_by_drop()?.1 {
            if let Ok(end) = orphan.trailer
                && self.holds_unknown_snapshot(&orphan.path, end)?
            {
                found.push(orphan.path);
            }
        }
        found.sort();
        Ok(found)
    }
}
