//! The intent of a command that writes packs beyond a save's protocol (docs/FORMAT.md 7.5):
//! an expunge's rewrite, and the packs a pull or clone takes in. Before it writes any pack,
//! the pack files already in `packs/` are listed, durably, in `.snap/writing-packs`; its last
//! commit names the packs it wrote, and the file goes right after. A kill before that commit
//! leaves packs the catalog does not name, holding records of snapshots it never took (an
//! expunge's rewrite; a pull's records) or objects nothing reaches (a pull's downloads, which
//! may hold what an expunge took out): a repair would take them back as phantom snapshots,
//! and the next expunge would refuse them. [`Store::abort_pack_intent`] (run by every writing
//! command, `snap recover` included, before anything of its own) deletes exactly those:
//! unnamed, and not listed as there before. The store lock is held from the listing to the
//! commit, so no other writer made them.

use std::collections::HashSet;

use crate::fs::io::{sync_dir, write_atomic};
use crate::fs::remove_if_present;
use crate::pack::pack_file_name;
use crate::{Store, StoreError};

/// The intent file, in the store directory: one pack file name a line.
pub const WRITING_PACKS: &str = "writing-packs";

impl Store {
    /// Lists the pack files there are, durably, before an expunge or an intake writes any.
    pub fn begin_pack_intent(&self) -> Result<(), StoreError> {
        let mut names: Vec<String> = self.pack_file_names()?.into_iter().collect();
        names.sort_unstable();
        let mut body = names.join("\n");
        body.push('\n');
        write_atomic(&self.dir().join(WRITING_PACKS), body.as_bytes())
    }

    /// Forgets the intent once the command's commit names its packs.
    pub fn end_pack_intent(&self) -> Result<(), StoreError> {
        remove_if_present(&self.dir().join(WRITING_PACKS))?;
        sync_dir(self.dir())
    }

    /// Deletes the packs a command killed before its commit wrote (see the module's
    /// documentation) and forgets its intent; returns how many went.
    pub fn abort_pack_intent(&self) -> Result<usize, StoreError> {
        let path = self.dir().join(WRITING_PACKS);
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
        self.end_pack_intent()?;
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
