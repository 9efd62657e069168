//! `snap remote add|remove|list`: the remotes a store names (`[remote.NAME]` in
//! `.snap/config.toml`), a new one made encrypted unless told not to (docs/FORMAT.md 9.1).

use std::path::Path;

use anyhow::{Result, bail};
use snap_remote::layout::Marker;
use snap_remote::{Reach, Remote, check};

use super::remote_crypt::{Passphrase, create_encrypted, has_key, open_remote};
use crate::{Ctx, emit, json, open, open_reading};

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
