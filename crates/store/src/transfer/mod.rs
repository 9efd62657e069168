//! Transfer: objects leaving the store for another one, and sealed packs arriving from one.
//!
//! The layer owns what a remote (another crate) needs of a store and nothing of the remote
//! itself: [`outgoing`] finds the objects a set of snapshots reaches that the other side
//! lacks, with the bases their frames are stored against, opens the packs holding them so
//! the frames can be copied verbatim after the store (and its lock) is closed, and writes
//! them into new packs; [`incoming`] checks packs that arrived, moves them into `packs/`
//! and names them, with snapshot records and a history, in one commit. Snapshot records
//! never travel inside packs: a store that takes packs from a remote holding several
//! workspaces' history takes only the records it asks for (docs/FORMAT.md 9).

pub mod incoming;
pub mod outgoing;

pub use incoming::{Incoming, IncomingReport};
pub use outgoing::{Outgoing, SealedPack};
