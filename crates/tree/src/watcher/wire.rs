//! Where a workspace's watcher listens, and what goes over its socket.
//!
//! The socket lives in `$XDG_RUNTIME_DIR/snap/` or, where that is unset, `/tmp/snap-<uid>/`;
//! either directory is made 0700 and must be owned by this user with no access for others,
//! and the socket is made 0600, so only its owner can ask. Its name is a hash of the
//! workspace root, which keeps the path under `sun_path`'s 108 bytes however deep the root.
//!
//! Every message is a frame: length u32 LE, then that many bytes, starting with the magic
//! `SNW1` and an op byte. Requests: `1` query (then a token: a byte 0 or 1, instance [16],
//! seq u64 LE), `2` status, `3` stop. A query's answer: `0` directories (token, count u32
//! LE, then each: scope byte 0 dir / 1 subtree, length u32 LE, path bytes) or `1` everything
//! (token or none, reason length u32 LE and UTF-8 bytes). Status answers JSON; stop, `ok`.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::TreeError;
use crate::source::{Changes, DirtyDir, Scope, WatchToken};

const MAGIC: &[u8; 4] = b"SNW1";
/// The longest frame either side accepts (a watcher naming every directory of a large tree).
const MAX_FRAME: u32 = 256 << 20;

/// What a client asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// What changed since the token (none: the client has no token yet).
    Query(Option<WatchToken>),
    /// How the watcher is doing, as JSON.
    Status,
    /// Exit.
    Stop,
}

/// Where this user's sockets live: `$XDG_RUNTIME_DIR/snap`, else `/tmp/snap-<uid>`.
fn socket_dir_path(uid: u32) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => Path::new(&runtime).join("snap"),
        None => PathBuf::from(format!("/tmp/snap-{uid}")),
    }
}

/// The directory the sockets of this user live in, made if missing and checked: owned by
/// this user, no access for anyone else.
pub fn socket_dir() -> Result<PathBuf, TreeError> {
    let uid = rustix::process::geteuid().as_raw();
    let dir = socket_dir_path(uid);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(TreeError::io(&dir, e)),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| TreeError::io(&dir, e))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(TreeError::SharedSocketDir(dir));
    }
    Ok(dir)
}

/// The socket directory if it exists and passes [`socket_dir`]'s checks; never made.
pub fn existing_socket_dir() -> Option<PathBuf> {
    let uid = rustix::process::geteuid().as_raw();
    let dir = socket_dir_path(uid);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0).then_some(dir)
}

/// The socket path of the watcher of the workspace at `root` (canonical).
pub fn socket_path(dir: &Path, root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let hash = blake3::hash(root.as_os_str().as_bytes());
    dir.join(format!("{}.sock", &hash.to_hex()[..24]))
}

/// Writes one frame.
pub fn send(to: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    to.write_all(&len.to_le_bytes())?;
    to.write_all(body)?;
    to.flush()
}

/// Reads one frame.
pub fn receive(from: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut body = vec![0u8; len as usize];
    from.read_exact(&mut body)?;
    Ok(body)
}

impl Request {
    /// The request as a frame's body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        match self {
            Request::Query(token) => {
                out.push(1);
                put_token(&mut out, token.as_ref());
            }
            Request::Status => out.push(2),
            Request::Stop => out.push(3),
        }
        out
    }

    /// The request a frame's body holds, if it is one.
    pub fn decode(bytes: &[u8]) -> Option<Request> {
        let mut r = Cursor(bytes.strip_prefix(MAGIC)?);
        let request = match r.byte()? {
            1 => Request::Query(r.token()?),
            2 => Request::Status,
            3 => Request::Stop,
            _ => return None,
        };
        r.0.is_empty().then_some(request)
    }
}

/// A query's answer as sent.
pub fn encode_changes(changes: &Changes) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    match changes {
        Changes::Dirs { now, dirs } => {
            out.push(0);
            put_token(&mut out, Some(now));
            out.extend_from_slice(&(dirs.len() as u32).to_le_bytes());
            for dir in dirs {
                out.push(match dir.scope {
                    Scope::Dir => 0,
                    Scope::Subtree => 1,
                });
                put_bytes(&mut out, &dir.path);
            }
        }
        Changes::Everything { now, reason } => {
            out.push(1);
            put_token(&mut out, now.as_ref());
            put_bytes(&mut out, reason.as_bytes());
        }
    }
    out
}

/// A query's answer as received; `None` when malformed.
pub fn decode_changes(bytes: &[u8]) -> Option<Changes> {
    let mut r = Cursor(bytes.strip_prefix(MAGIC)?);
    let changes = match r.byte()? {
        0 => {
            let now = r.token()??;
            let count = r.u32()?;
            let mut dirs = Vec::with_capacity(count.min(1 << 16) as usize);
            for _ in 0..count {
                let scope = match r.byte()? {
                    0 => Scope::Dir,
                    1 => Scope::Subtree,
                    _ => return None,
                };
                dirs.push(DirtyDir {
                    path: r.bytes()?.to_vec(),
                    scope,
                });
            }
            Changes::Dirs { now, dirs }
        }
        1 => {
            let now = r.token()?;
            let reason = String::from_utf8(r.bytes()?.to_vec()).ok()?;
            Changes::Everything { now, reason }
        }
        _ => return None,
    };
    r.0.is_empty().then_some(changes)
}

fn put_token(out: &mut Vec<u8>, token: Option<&WatchToken>) {
    match token {
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&t.instance);
            out.extend_from_slice(&t.seq.to_le_bytes());
        }
        None => out.push(0),
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads a frame's fields in order.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    /// A token, or none: `Some(None)` is a well-formed "no token".
    fn token(&mut self) -> Option<Option<WatchToken>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(WatchToken {
                instance: self.take(16)?.try_into().ok()?,
                seq: u64::from_le_bytes(self.take(8)?.try_into().ok()?),
            })),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn requests_and_answers_round_trip_and_refuse_trailing_bytes() {
        let token = WatchToken {
            instance: [3; 16],
            seq: 9,
        };
        for request in [
            Request::Query(Some(token)),
            Request::Query(None),
            Request::Status,
            Request::Stop,
        ] {
            let bytes = request.encode();
            assert_eq!(Request::decode(&bytes), Some(request));
            assert_eq!(Request::decode(&[bytes.as_slice(), &[0]].concat()), None);
        }
        let dirs = Changes::Dirs {
            now: token,
            dirs: vec![
                DirtyDir {
                    path: b"a/b".to_vec(),
                    scope: Scope::Dir,
                },
                DirtyDir {
                    path: Vec::new(),
                    scope: Scope::Subtree,
                },
            ],
        };
        let all = Changes::Everything {
            now: None,
            reason: "overflow".into(),
        };
        for changes in [dirs, all] {
            let bytes = encode_changes(&changes);
            assert_eq!(decode_changes(&bytes), Some(changes));
            assert_eq!(decode_changes(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn socket_names_fit_sun_path_however_deep_the_root() {
        let deep = PathBuf::from(format!("/{}", "d/".repeat(400)));
        let path = socket_path(Path::new("/tmp/snap-1000"), &deep);
        assert!(path.as_os_str().len() < 108, "{}", path.display());
    }
}
