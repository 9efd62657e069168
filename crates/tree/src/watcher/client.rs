//! Asking a workspace's watcher (`snap watch`, a daemon of the CLI), as the change source of a save, status or diff. A watcher
//! that cannot be reached, answers late or answers nonsense is an answer too: *everything*,
//! and the capture walks the whole tree as it would without one.

use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use super::wire::{self, Request};
use crate::source::{ChangeSource, Changes, WatchToken};

/// How long a client waits for an answer: the watcher's cookie wait (2 s) and a margin, so
/// that a stopped or stuck watcher costs a save at most this before it walks as usual.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// The watcher listening on `socket`.
#[derive(Debug)]
pub struct WatchClient {
    /// The socket (see [`super::wire::socket_path`]).
    pub socket: PathBuf,
}

impl WatchClient {
    /// Sends `request` and returns the answer's frame.
    pub fn ask(&self, request: &Request) -> std::io::Result<Vec<u8>> {
        let mut stream = UnixStream::connect(&self.socket)?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        wire::send(&mut stream, &request.encode())?;
        wire::receive(&mut stream)
    }
}

impl ChangeSource for WatchClient {
    fn changes_since(&self, since: Option<&WatchToken>) -> Changes {
        let why = match self.ask(&Request::Query(since.copied())) {
            Ok(frame) => match wire::decode_changes(&frame) {
                Some(changes) => return changes,
                None => "the watcher's answer is malformed".to_string(),
            },
            Err(e) => format!("cannot ask the watcher: {e}"),
        };
        Changes::Everything {
            now: None,
            reason: why,
        }
    }
}
