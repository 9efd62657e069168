//! The client side of a workspace's watcher (`snap watch`): where its socket is, what goes
//! over it ([`wire`]), and asking it ([`WatchClient`]), so that every front end (the CLI,
//! `snap ui`, a library user) gets the watcher's answer as a [`crate::ChangeSource`]. The
//! watcher itself, the daemon, lives in the binary.

mod client;
pub mod wire;

use std::sync::Arc;

pub use client::WatchClient;

use crate::workspace::ReadOnlyWorkspace;

/// Makes the workspace's watcher, when one is listening, the change source of `ws`'s saves,
/// status, diffs and moves. A watcher that does not answer costs a save a walk, no more.
pub fn attach(ws: &mut ReadOnlyWorkspace) {
    let Some(dir) = wire::existing_socket_dir() else {
        return;
    };
    let socket = wire::socket_path(&dir, ws.root());
    if socket.exists() {
        ws.set_change_source(Arc::new(WatchClient { socket }));
    }
}
