//! `snap remote add|remove|list`: the remotes a store names (`[remote.NAME]` in
//! `.snap/config.toml`), a new one made encrypted unless told not to (docs/FORMAT.md 9.1).

use std::path::Path;
use std::path::PathBuf;

use anyhow::{Result, bail};
use snap_remote::layout::Marker;
use snap_remote::{Reach, Remote, check};

use super::remote_crypt::{Passphrase, create_encrypted, has_key, open_remote};
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::{open, open_reading};

/// Whether a new remote is encrypted (`snap remote add --no-encryption` says not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encryption {
    /// Sealed under a master key a passphrase wraps (the default).
    On,
    /// In the clear.
    Off,
}

/// `snap remote add NAME URL`: checks that the server honours create-only puts first, then
/// makes a new remote an encrypted one (asking for its passphrase) unless told not to, or
/// opens an encrypted one there with its passphrase.
pub(crate) fn add(
    ctx: &Ctx,
    name: &str,
    url: &str,
    reach: Reach,
    encryption: Encryption,
    pass: Passphrase,
) -> Result<()> {
    let sound = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !sound || name.contains("://") {
        bail!("remote names are letters, digits, - and _ (got {name:?})");
    }
    let ws = open(ctx)?;
    let remote = snap_remote::open(url, reach)?;
    check::conditional_puts(remote.as_ref())?;
    let encrypted = prepare_layout(ws.store_dir(), name, url, remote, encryption, pass)?;
    snap_tree::add_remote(ws.store_dir(), name, url)?;
    let doc = json::RemoteAddedDoc {
        name: name.to_string(),
        url: url.to_string(),
        encrypted,
    };
    let how = if encrypted {
        "encrypted"
    } else {
        "NOT encrypted"
    };
    emit(ctx, json::value(&doc), || {
        println!("remote {name}: {url} ({how}; conditional puts checked)")
    });
    Ok(())
}

/// Fixes a new remote's layout, or opens the one there; returns whether it is encrypted.
fn prepare_layout(
    store_dir: &Path,
    name: &str,
    url: &str,
    remote: Box<dyn Remote>,
    encryption: Encryption,
    pass: Passphrase,
) -> Result<bool> {
    match (
        snap_remote::layout::read_marker(remote.as_ref())?,
        encryption,
    ) {
        (Marker::Sealed, Encryption::Off) => {
            bail!("{url} is encrypted; --no-encryption applies only to a new remote")
        }
        (Marker::Sealed, Encryption::On) => {
            open_remote(Some(store_dir), url, Reach::Existing, pass)?;
            Ok(true)
        }
        (Marker::Plain, encryption) => {
            if encryption == Encryption::On {
                eprintln!(
                    "warning: {url} holds an unencrypted history; snap remote encrypt {name} \
                     moves it to the encrypted layout"
                );
            }
            Ok(false)
        }
        (Marker::Absent, Encryption::On) => {
            create_encrypted(store_dir, url, remote, pass)?;
            Ok(true)
        }
        (Marker::Absent, Encryption::Off) => {
            snap_remote::push::claim_layout(remote.as_ref())?;
            Ok(false)
        }
    }
}

/// `snap remote remove NAME`: forgets the name; the remote's objects stay.
pub(crate) fn remove(ctx: &Ctx, name: &str) -> Result<()> {
    let ws = open(ctx)?;
    snap_tree::remove_remote(ws.store_dir(), name)?;
    let doc = json::RemoteRemovedDoc {
        removed: name.to_string(),
    };
    emit(ctx, json::value(&doc), || {
        println!("removed remote {name} (its objects stay on the server)")
    });
    Ok(())
}

/// `snap remote list`.
pub(crate) fn list(ctx: &Ctx) -> Result<()> {
    let ws = open_reading(ctx)?;
    let remotes = &ws.config().remote;
    let doc = json::RemoteListDoc {
        remotes: (remotes.iter())
            .map(|(name, r)| json::RemoteEntryDoc {
                name: name.clone(),
                url: r.url.clone(),
                default: r.default,
                encrypted: has_key(ws.store_dir(), &r.url),
            })
            .collect(),
    };
    emit(ctx, json::value(&doc), || {
        for entry in &doc.remotes {
            let mark = if entry.default { " (default)" } else { "" };
            let how = if entry.encrypted {
                "encrypted"
            } else {
                "NOT encrypted"
            };
            println!("{}\t{}{mark}\t{how}", entry.name, entry.url);
        }
    });
    Ok(())
}

/// `snap remote`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RemoteArgs {
    /// With no action, list the remotes, each with its URL and whether it is encrypted
    /// (`snap remote -v`, git's spelling; `snap remote list` says the same).
    #[arg(short, long)]
    pub(crate) verbose: bool,
    #[command(subcommand)]
    pub(crate) action: Option<RemoteAction>,
}

/// `snap remote`'s actions.
#[cfg(feature = "remote")]
#[derive(Debug, clap::Subcommand)]
pub enum RemoteAction {
    /// Name a remote, after checking that it honours create-only puts (the first is the default).
    Add {
        /// Letters, digits, - and _.
        name: String,
        /// `s3://bucket/prefix` or `file:///path`.
        url: String,
        /// Make a `file://` remote's directory if it is not there (a mistyped path is
        /// otherwise an error).
        #[arg(long)]
        create: bool,
        /// Keep a new remote's objects in the clear (by default they are encrypted under a
        /// passphrase, asked once).
        #[arg(long)]
        no_encryption: bool,
        /// Read the passphrase from the first line of FILE (else SNAP_REMOTE_PASSWORD, else
        /// a prompt).
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// The passphrases of an encrypted remote: each key object is one.
    Key {
        #[command(subcommand)]
        action: crate::commands::remote_keys::RemoteKeyAction,
    },
    /// Move a plain remote to the encrypted layout in place (run it again if it stops).
    Encrypt {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
        /// Read the new passphrase from the first line of FILE.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Forget a remote's name; its objects stay.
    Remove {
        /// The remote's name.
        name: String,
    },
    /// The remotes, the default marked.
    List,
}

/// Runs `snap remote`: with no action, the list.
pub(crate) fn run(ctx: &Ctx, args: RemoteArgs) -> Result<()> {
    match args.action.unwrap_or(RemoteAction::List) {
        RemoteAction::Add {
            name,
            url,
            create,
            no_encryption,
            password_file,
        } => {
            let reach = match create {
                true => snap_remote::Reach::Create,
                false => snap_remote::Reach::Existing,
            };
            let encryption = match no_encryption {
                true => Encryption::Off,
                false => Encryption::On,
            };
            let pass = Passphrase {
                file: password_file.as_deref(),
            };
            add(ctx, &name, &url, reach, encryption, pass)
        }
        RemoteAction::Remove { name } => remove(ctx, &name),
        RemoteAction::List => list(ctx),
        RemoteAction::Key { action } => crate::commands::remote_keys::run(ctx, action),
        RemoteAction::Encrypt {
            remote,
            password_file,
        } => {
            let pass = Passphrase {
                file: password_file.as_deref(),
            };
            crate::commands::remote_keys::encrypt(ctx, remote.as_deref(), pass)
        }
    }
}
