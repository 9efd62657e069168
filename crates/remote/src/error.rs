//! The remote's errors, each naming the key, URL or path it is about.

use std::path::{Path, PathBuf};

use snap_store::StoreError;

/// What can go wrong talking to a remote or taking its history.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A URL snap cannot use.
    #[error("remote URL {url}: {why}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A key that would leave the remote's prefix.
    #[error("remote key {0:?} is not a sound key")]
    BadKey(String),
    /// A local file of a `file://` remote, or a staging file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The server answered with an error.
    #[error("{what}: the server answered {status}: {body}")]
    Http {
        /// The request (method and key).
        what: String,
        /// The HTTP status.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// The server could not be reached, or the connection broke.
    #[error("{what}: {why}")]
    Network {
        /// The request (method and key).
        what: String,
        /// The transport's error.
        why: String,
    },
    /// An object on the remote is not what its key or format says.
    #[error("remote object {key}: {why}")]
    Corrupt {
        /// The object's key.
        key: String,
        /// Which check failed.
        why: String,
    },
    /// Another push of this workspace landed first, again and again.
    #[error("another push to workspace {workspace} landed while this one ran; run the push again")]
    Raced {
        /// The workspace id.
        workspace: String,
    },
    /// The server does not honour create-only puts, on which refs rely.
    #[error("{url} does not honour conditional puts (If-None-Match: *): {why}")]
    NoConditionalPuts {
        /// The remote.
        url: String,
        /// What the check saw.
        why: String,
    },
    /// The remote holds no snap history at all.
    #[error("{url} holds no snap history")]
    Empty {
        /// The remote.
        url: String,
    },
    /// The remote holds several workspaces and none was named.
    #[error("{url} holds {n} workspaces; name one with --workspace: {list}", n = ids.len(), list = ids.join(", "))]
    WhichWorkspace {
        /// The remote.
        url: String,
        /// Their ids.
        ids: Vec<String>,
    },
    /// A workspace named that the remote lacks.
    #[error("{url} holds no workspace {id}")]
    NoWorkspace {
        /// The remote.
        url: String,
        /// The id given.
        id: String,
    },
    /// A `file://` remote whose directory is not there (only a push or `remote add
    /// --create` makes one).
    #[error("{url} does not exist")]
    NoRemote {
        /// The remote.
        url: String,
    },
    /// The remote lacks the `snap-remote` marker: no push ever wrote to it.
    #[error("{url} is not a remote (no snap-remote marker)")]
    NotARemote {
        /// The remote.
        url: String,
    },
    /// The remote's marker names a layout this snap does not know.
    #[error("{url} was made by a newer snap (layout {found:?}); upgrade snap to use it")]
    NewerLayout {
        /// The remote.
        url: String,
        /// The marker's first line.
        found: String,
    },
    /// A key, a passphrase or a key object of an encrypted remote.
    #[error(transparent)]
    Crypt(#[from] crate::crypt::CryptError),
    /// An encrypted remote opened without its key, or a key used on a plain remote.
    #[error("{url}: {why}")]
    Encryption {
        /// The remote.
        url: String,
        /// What does not fit.
        why: String,
    },
    /// Credentials or region could not be read.
    #[error("S3 credentials: {0}")]
    Credentials(String),
    /// The local store.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl RemoteError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> RemoteError {
        RemoteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// True for errors a retry may cure (the network, a server's 5xx, throttling, a
    /// conditional put that raced one still in flight).
    pub fn is_transient(&self) -> bool {
        match self {
            RemoteError::Network { .. } => true,
            RemoteError::Http { status, .. } => *status >= 500 || *status == 429 || *status == 409,
            _ => false,
        }
    }
}
