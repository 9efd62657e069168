//! Snapshots pulled from a remote (`snap pull`), kept apart from the store's own history:
//! the `pulled` table (FORMAT.md 6.9). They are not in `snapshots`, so `#N`, `@~N`, HEAD,
//! the redo stack and prune never see them; gc keeps what they reach; they are named
//! `REMOTE#N` by the number their workspace gave them. Their records are in no pack, so
//! `repair` does not take them back (pull again), and an expunge forgets them all (their
//! trees may hold what it takes out).

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use super::Catalog;
use crate::{ObjectId, SnapshotRecord, StoreError, WORKSPACE_ID_LEN};

/// Snapshot id [32] -> remote name length u8 ‖ remote name ‖ workspace id [16] ‖ record
/// (4.6, with its version byte).
const PULLED: TableDefinition<&[u8], &[u8]> = TableDefinition::new("pulled");

/// One pulled snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    /// Its id (the BLAKE3 of its record, as everywhere).
    pub id: ObjectId,
    /// The name of the remote it came from (`snap remote add`'s, or `url`).
    pub remote: String,
    /// The workspace that made it.
    pub workspace: [u8; WORKSPACE_ID_LEN],
    /// Its record.
    pub record: SnapshotRecord,
}

/// What a commit does to the `pulled` table.
#[derive(Clone, Debug, Default)]
pub enum PulledChange {
    /// Nothing.
    #[default]
    Keep,
    /// Adds these rows (a pull).
    Add(Vec<Pulled>),
    /// Drops every row (an expunge, `delete --all`).
    Forget,
}

impl Pulled {
    fn encode(&self) -> Vec<u8> {
        let name = self.remote.as_bytes();
        let len = name.len().min(255);
        let mut out = Vec::with_capacity(1 + len + WORKSPACE_ID_LEN + 128);
        out.push(len as u8);
        out.extend_from_slice(&name[..len]);
        out.extend_from_slice(&self.workspace);
        out.extend_from_slice(&self.record.encode());
        out
    }

    fn decode(key: &[u8], value: &[u8]) -> Option<Pulled> {
        let id = ObjectId::from_slice(key)?;
        let (&len, rest) = value.split_first()?;
        let (name, rest) = rest.split_at_checked(usize::from(len))?;
        let (workspace, record) = rest.split_at_checked(WORKSPACE_ID_LEN)?;
        Some(Pulled {
            id,
            remote: String::from_utf8(name.to_vec()).ok()?,
            workspace: workspace.try_into().ok()?,
            record: SnapshotRecord::decode(id, record).ok()?,
        })
    }
}

impl Catalog {
    /// Every pulled snapshot, by id.
    pub fn pulled(&self) -> Result<Vec<Pulled>, StoreError> {
        let txn = self.read()?;
        let table = match txn.open_table(PULLED) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let pulled = Pulled::decode(k.value(), v.value());
            out.push(pulled.ok_or_else(|| self.err("bad pulled record"))?);
        }
        Ok(out)
    }

    pub(super) fn write_pulled(
        &self,
        txn: &WriteTransaction,
        change: &PulledChange,
    ) -> Result<(), StoreError> {
        match change {
            PulledChange::Keep => Ok(()),
            PulledChange::Forget => match txn.delete_table(PULLED) {
                Ok(_) => Ok(()),
                Err(e) => Err(self.err(e)),
            },
            PulledChange::Add(rows) => {
                let mut table = txn.open_table(PULLED).map_err(|e| self.err(e))?;
                for row in rows {
                    table
                        .insert(row.id.0.as_slice(), row.encode().as_slice())
                        .map_err(|e| self.err(e))?;
                }
                Ok(())
            }
        }
    }
}
