//! What an expunge leaves in the catalog: the `expunged` table, old snapshot id -> the id its
//! rewritten record has now (so a harness's saved checkpoint still resolves), and
//! `meta["purge"]`, the pending purge an expunge commits with its rewrite (FORMAT.md 6.8):
//! the next writing command finishes a purge a kill interrupted.

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use super::Catalog;
use super::tables::META;
use crate::{ObjectId, StoreError};

/// Old snapshot id [32] -> new snapshot id [32].
const EXPUNGED: TableDefinition<&[u8], &[u8]> = TableDefinition::new("expunged");

/// The agent sessions' `told` rows name snapshots by id: an expunge drops them (the next
/// prompt tells the agent afresh).
const TOLD: TableDefinition<&str, &[u8]> = TableDefinition::new("told");

/// `meta["purge"]`: byte 0 is the phase, then, for [`PurgeRow::Unlink`], n x 32 pack ids.
const PURGE_KEY: &str = "purge";
const PHASE_PENDING: u8 = 1;
const PHASE_UNLINK: u8 = 2;

/// Where a purge stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PurgeRow {
    /// Snapshots were rewritten; the packs still hold what they dropped.
    Pending,
    /// The packs were rewritten and committed; these old packs' files are still to delete.
    Unlink(Vec<ObjectId>),
    /// Done: the row goes.
    Done,
}

impl PurgeRow {
    fn encode(&self) -> Option<Vec<u8>> {
        match self {
            PurgeRow::Pending => Some(vec![PHASE_PENDING]),
            PurgeRow::Unlink(packs) => {
                let mut out = vec![PHASE_UNLINK];
                packs.iter().for_each(|p| out.extend_from_slice(&p.0));
                Some(out)
            }
            PurgeRow::Done => None,
        }
    }

    fn decode(bytes: &[u8]) -> Option<PurgeRow> {
        match bytes.split_first()? {
            (&PHASE_PENDING, []) => Some(PurgeRow::Pending),
            (&PHASE_UNLINK, ids) if ids.len() % 32 == 0 => Some(PurgeRow::Unlink(
                ids.chunks(32).filter_map(ObjectId::from_slice).collect(),
            )),
            _ => None,
        }
    }
}

/// The rows an expunge commits with its rewritten snapshots.
#[derive(Clone, Debug, Default)]
pub struct ExpungeRows {
    /// Each rewritten snapshot: old id, new id.
    pub renamed: Vec<(ObjectId, ObjectId)>,
}

impl Catalog {
    /// The pending purge, if an expunge left one.
    pub fn purge_row(&self) -> Result<Option<PurgeRow>, StoreError> {
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let Some(row) = meta.get(PURGE_KEY).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        PurgeRow::decode(row.value())
            .map(Some)
            .ok_or_else(|| self.err("bad purge record"))
    }

    /// Every (old id, new id) pair an expunge recorded.
    pub fn renamed(&self) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        let txn = self.read()?;
        let table = match txn.open_table(EXPUNGED) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let pair = ObjectId::from_slice(k.value()).zip(ObjectId::from_slice(v.value()));
            out.push(pair.ok_or_else(|| self.err("bad expunged record"))?);
        }
        Ok(out)
    }

    pub(super) fn write_purge(
        &self,
        txn: &WriteTransaction,
        row: &PurgeRow,
    ) -> Result<(), StoreError> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        match row.encode() {
            Some(bytes) => meta.insert(PURGE_KEY, bytes.as_slice()).map(drop),
            None => meta.remove(PURGE_KEY).map(drop),
        }
        .map_err(|e| self.err(e))
    }

    /// Records each renaming, and points older renamings of a renamed id at its newest id, so
    /// one lookup always lands on a snapshot the catalog holds. Drops the `told` rows.
    pub(super) fn write_expunged(
        &self,
        txn: &WriteTransaction,
        rows: &ExpungeRows,
    ) -> Result<(), StoreError> {
        let mut table = txn.open_table(EXPUNGED).map_err(|e| self.err(e))?;
        let newest: std::collections::HashMap<ObjectId, ObjectId> =
            rows.renamed.iter().copied().collect();
        let mut repoint = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let to = ObjectId::from_slice(v.value()).and_then(|v| newest.get(&v).copied());
            if let Some(to) = to {
                repoint.push((k.value().to_vec(), to));
            }
        }
        for (old, to) in repoint.iter().map(|(k, to)| (k.as_slice(), to)) {
            table
                .insert(old, to.0.as_slice())
                .map_err(|e| self.err(e))?;
        }
        for (old, new) in &rows.renamed {
            table
                .insert(old.0.as_slice(), new.0.as_slice())
                .map_err(|e| self.err(e))?;
        }
        match txn.delete_table(TOLD) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PurgeRow;
    use crate::ObjectId;

    #[test]
    fn purge_rows_round_trip_and_refuse_garbage() {
        let packs = vec![ObjectId([7; 32]), ObjectId([9; 32])];
        for row in [PurgeRow::Pending, PurgeRow::Unlink(packs)] {
            let bytes = row.encode().unwrap();
            assert_eq!(PurgeRow::decode(&bytes), Some(row));
        }
        assert_eq!(PurgeRow::Done.encode(), None);
        assert_eq!(PurgeRow::decode(&[2, 1, 2]), None);
        assert_eq!(PurgeRow::decode(&[3]), None);
        assert_eq!(PurgeRow::decode(&[]), None);
    }
}
