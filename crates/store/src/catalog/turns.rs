//! The `turns` table: for each agent session, the number of its current turn (how many
//! prompts the hook has seen in it); and the `told` table: what the hook last told the
//! session's model the tree was. Created by its first write; a session it lacks, or a
//! catalog without the table, is at turn 0. `repair` rebuilds the catalog without it, so a
//! session's count then starts again.

use redb::{ReadableTable, TableDefinition};

use super::Catalog;
use crate::{ObjectId, StoreError};

/// Session name (UTF-8) -> turn number.
const TURNS: TableDefinition<&str, u64> = TableDefinition::new("turns");

/// Session name (UTF-8) -> snapshot id [32] ‖ tree id [32]: when the session's newest
/// snapshot was that snapshot, the hook told the agent the tree was that tree.
const TOLD: TableDefinition<&str, &[u8]> = TableDefinition::new("told");

impl Catalog {
    /// The current turn of `session` (0 before its first prompt).
    pub fn turn(&self, session: &str) -> Result<u64, StoreError> {
        let txn = self.read()?;
        let table = match txn.open_table(TURNS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
            Err(e) => return Err(self.err(e)),
        };
        let turn = table.get(session).map_err(|e| self.err(e))?;
        Ok(turn.map_or(0, |v| v.value()))
    }

    /// Counts a new turn of `session` in one durable commit and returns its number.
    pub fn start_turn(&self, session: &str) -> Result<u64, StoreError> {
        let txn = self.begin_write()?;
        let turn = {
            let mut table = txn.open_table(TURNS).map_err(|e| self.err(e))?;
            let turn = table
                .get(session)
                .map_err(|e| self.err(e))?
                .map_or(0, |v| v.value())
                + 1;
            table.insert(session, turn).map_err(|e| self.err(e))?;
            turn
        };
        txn.commit().map_err(|e| self.err(e))?;
        Ok(turn)
    }
}

impl Catalog {
    /// What the hook last told `session` the tree was, and the session's newest snapshot
    /// then: `(snapshot, tree)`.
    pub fn told(&self, session: &str) -> Result<Option<(ObjectId, ObjectId)>, StoreError> {
        let txn = self.read()?;
        let table = match txn.open_table(TOLD) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.err(e)),
        };
        let row = table.get(session).map_err(|e| self.err(e))?;
        Ok(row.and_then(|v| {
            let v = v.value();
            Some((
                ObjectId::from_slice(v.get(..32)?)?,
                ObjectId::from_slice(v.get(32..)?)?,
            ))
        }))
    }

    /// Records that `session`, whose newest snapshot is `snapshot`, was told of `tree`.
    pub fn set_told(
        &self,
        session: &str,
        snapshot: &ObjectId,
        tree: &ObjectId,
    ) -> Result<(), StoreError> {
        let txn = self.begin_write()?;
        {
            let mut table = txn.open_table(TOLD).map_err(|e| self.err(e))?;
            let row = [snapshot.0, tree.0].concat();
            table
                .insert(session, row.as_slice())
                .map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn turns_count_per_session_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        drop(Catalog::create(&path).unwrap());
        let catalog = Catalog::open(&path, false).unwrap();
        assert_eq!(catalog.turn("a").unwrap(), 0);
        assert_eq!(catalog.start_turn("a").unwrap(), 1);
        assert_eq!(catalog.start_turn("a").unwrap(), 2);
        assert_eq!(catalog.start_turn("b").unwrap(), 1);
        drop(catalog);
        let catalog = Catalog::open(&path, true).unwrap();
        assert_eq!(
            (catalog.turn("a").unwrap(), catalog.turn("b").unwrap()),
            (2, 1)
        );
    }
}
