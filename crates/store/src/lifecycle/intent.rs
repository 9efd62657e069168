//! An expunge's intent (docs/FORMAT.md 7.5): before an expunge writes any pack, the pack
//! files already in `packs/` are listed, durably, in `.snap/expunging`. Its commit names the
//! packs it wrote, and the file goes right after. A kill before that commit leaves packs the
//! catalog does not name, holding rewritten trees and records of snapshots it never took: a
//! repair would take them back as phantom snapshots, and the next expunge would refuse them.
//! [`Store::abort_expunge`] (run by every writing command, `snap recover` included, before
//! anything of its own) deletes exactly those: unnamed, and not listed as there before. The
//! store lock is held from the listing to the commit, so no other writer made them.

use std::collections::HashSet;

use crate::fs::io::{sync_dir, write_atomic};
use crate::fs::remove_if_present;
use crate::pack::pack_file_name;
use crate::{Store, StoreError};

/// The intent file, in the store directory: one pack file name a line.
pub const EXPUNGING: &str = "expunging";

impl Store {
    /// Lists the pack files there are, durably, before an expunge writes any.
    pub fn begin_expunge(&self) -> Result<(), StoreError> {
        let mut names: Vec<String> = self.pack_file_names()?.into_iter().collect();
        names.sort_unstable();
        let mut body = names.join("\n");
        body.push('\n');
        write_atomic(&self.dir().join(EXPUNGING), body.as_bytes())
    }

    /// Forgets the intent once the expunge's commit names its packs.
    pub fn end_expunge(&self) -> Result<(), StoreError> {
        remove_if_present(&self.dir().join(EXPUNGING))?;
        sync_dir(self.dir())
    }

    /// Deletes the packs an expunge killed before its commit wrote (see the module's
    /// documentation) and forgets its intent; returns how many went.
    pub fn abort_expunge(&self) -> Result<usize, StoreError> {
        let path = self.dir().join(EXPUNGING);
        let listed = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let before: HashSet<&str> = listed.lines().collect();
        let named: HashSet<String> = (self.catalog.packs()?.iter())
            .map(|(p, _)| pack_file_name(p))
            .collect();
        let dir = self.dir().join("packs");
        let mut removed = 0;
        for name in self.pack_file_names()? {
            if !before.contains(name.as_str()) && !named.contains(&name) {
                remove_if_present(&dir.join(&name))?;
                removed += 1;
            }
        }
        sync_dir(&dir)?;
        self.end_expunge()?;
        Ok(removed)
    }

    /// The names of the `.pack` files in `packs/`.
    fn pack_file_names(&self) -> Result<HashSet<String>, StoreError> {
        let dir = self.dir().join("packs");
        let mut names = HashSet::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| StoreError::io(&dir, e))? {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pack") {
                names.insert(name);
            }
        }
        Ok(names)
    }
}
