//! snap-remote: a store's history on S3-compatible object storage (or a directory), so it
//! outlives the machine it was made on.
//!
//! The crate works over snap-store only, never over a working tree: a clone's checkout is
//! the tree crate's, orchestrated by the CLI. ARCHITECTURE.md places it; docs/FORMAT.md 9
//! gives the layout.
//!
//! - [`url`]: remote URLs parsed and checked;
//! - [`backend`]: the [`Remote`] trait (create-only put, ranged get, list, delete) and its
//!   in-memory, `file://` and `s3://` backends;
//! - [`layout`]: the marker, the pack index and the ref;
//! - [`names`]: which key holds what, in the plain and the encrypted layout;
//! - [`state`]: what a remote holds, read without locks;
//! - [`push`]: the snapshots and objects the remote lacks, packed anew and uploaded;
//! - [`repair`]: `push --repair`, damaged packs deleted and their objects sent again;
//! - [`fetch`]: a workspace's history taken into a store (clone);
//! - [`gc`]: `gc --remote`, what no newest ref reaches, marked, then deleted after a grace;
//! - [`repack`]: the remote half of `snap expunge`, packs holding dead objects rewritten;
//! - [`sync`]: the push and pull protocols whole, over a store opened step by step;
//! - [`check`]: `verify --remote`, and the conditional-put check `remote add` runs;
//! - [`crypt`]: the cryptography of the encrypted layout (keys, sealing, keyed names);
//! - [`sealed`]: an encrypted remote behind the [`Remote`] trait, every object sealed;
//! - [`keys`]: its key objects, made, added, removed and opened with a passphrase;
//! - [`reseal`]: a plain remote moved to the encrypted layout in place.

pub mod backend;
pub mod check;
pub mod crypt;
mod error;
pub mod fetch;
pub mod gc;
pub mod keys;
pub mod layout;
pub mod names;
pub mod push;
pub mod repack;
pub mod repair;
pub mod reseal;
pub mod sealed;
pub mod state;
pub mod sync;
pub mod url;

pub use backend::{Put, Reach, Remote, open};
pub use error::RemoteError;

/// Attempts of one request that failed in a way a retry may cure.
const ATTEMPTS: u32 = 4;

/// Runs `op`, again after 0.2, 0.4 and 0.8 s while it fails transiently (the network, a
/// server's 5xx or 429). Every remote call is safe to repeat: puts are create-only.
pub(crate) fn retry<T>(mut op: impl FnMut() -> Result<T, RemoteError>) -> Result<T, RemoteError> {
    let mut wait = std::time::Duration::from_millis(200);
    for _ in 1..ATTEMPTS {
        match op() {
            Err(e) if e.is_transient() => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            done => return done,
        }
    }
    op()
}
