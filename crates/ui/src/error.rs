//! What can stop `snap ui`: the workspace's own errors, the terminal's, and no terminal at all.

use std::path::PathBuf;

/// An error of the UI, carrying what it was doing.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The workspace or its store refused (the same errors the CLI reports).
    #[error(transparent)]
    Tree(#[from] snap_tree::TreeError),
    /// Standard input or output is not a terminal.
    #[error("snap ui needs a terminal; `snap log --oneline` prints the history instead")]
    NoTerminal,
    /// The terminal could not be set up, drawn or read.
    #[error("the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    /// A file of the store could not be looked at.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
