//! `snap remote key add|list|remove` (the key objects of an encrypted remote, each a
//! passphrase that opens it) and `snap remote encrypt` (a plain remote moved to the
//! encrypted layout in place; docs/FORMAT.md 9.1).

use anyhow::{Result, bail};
use snap_remote::crypt::{KdfParams, MasterKey};
use snap_remote::layout::{self, Marker};
use snap_remote::sealed::Sealed;
use snap_remote::{Reach, Remote, keys};
use std::path::PathBuf;

use super::remote::remote_url;
use super::remote_crypt::{Asked, Passphrase, now_ns, save_key, saved_key};
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;

/// Runs one `snap remote key` action.
pub(crate) fn run(ctx: &Ctx, action: crate::commands::remote_keys::RemoteKeyAction) -> Result<()> {
    use crate::commands::remote_keys::RemoteKeyAction;
    match action {
        RemoteKeyAction::Add {
            remote,
            password_file,
        } => {
            let pass = Passphrase {
                file: password_file.as_deref(),
            };
            add(ctx, remote.as_deref(), pass)
        }
        RemoteKeyAction::List { remote } => list(ctx, remote.as_deref()),
        RemoteKeyAction::Remove { name, remote } => remove(ctx, &name, remote.as_deref()),
    }
}

/// The remote `given` names (the default one when `None`), its URL, and the store's dir.
fn target(ctx: &Ctx, given: Option<&str>) -> Result<(Box<dyn Remote>, String, std::path::PathBuf)> {
    let ws = open_reading(ctx)?;
    let url = remote_url(&ws, given)?;
    let remote = snap_remote::open(&url, Reach::Existing)?;
    Ok((remote, url, ws.store_dir().to_path_buf()))
}

/// Refuses a remote that is not encrypted: it has no keys.
fn require_encrypted(raw: &dyn Remote, url: &str) -> Result<()> {
    if layout::read_marker(raw)? != Marker::Sealed {
        bail!(
            "{url} is not encrypted: it has no keys (snap remote encrypt moves it to the \
             encrypted layout)"
        );
    }
    Ok(())
}

/// The master key of the encrypted remote at `url`: the store's, else from a passphrase.
fn master_of(raw: &dyn Remote, store_dir: &std::path::Path, url: &str) -> Result<MasterKey> {
    require_encrypted(raw, url)?;
    if let Some(key) = saved_key(store_dir, url)? {
        return Ok(key);
    }
    let passphrase = Passphrase::default().read(Asked::Existing, url)?;
    let key = keys::unlock(raw, &passphrase)?;
    save_key(store_dir, url, &key)?;
    Ok(key)
}

/// `snap remote key add [REMOTE]`: a new passphrase for the remote (`--password-file`,
/// `SNAP_REMOTE_NEW_PASSWORD`, or asked twice).
pub(crate) fn add(ctx: &Ctx, given: Option<&str>, pass: Passphrase) -> Result<()> {
    let (raw, url, store_dir) = target(ctx, given)?;
    let master = master_of(raw.as_ref(), &store_dir, &url)?;
    let passphrase = pass.read(Asked::New, &url)?;
    let added = keys::add(
        raw.as_ref(),
        &master,
        &passphrase,
        KdfParams::DEFAULT,
        now_ns(),
    )?;
    let doc = json::RemoteKeyAddedDoc {
        remote: url.clone(),
        added: added.clone(),
    };
    emit(ctx, json::value(&doc), || {
        println!("{url}: added {added}; its passphrase opens the remote too")
    });
    Ok(())
}

/// `snap remote key list [REMOTE]`.
pub(crate) fn list(ctx: &Ctx, given: Option<&str>) -> Result<()> {
    let (raw, url, _) = target(ctx, given)?;
    require_encrypted(raw.as_ref(), &url)?;
    let entries = keys::list(raw.as_ref())?;
    let doc = json::RemoteKeysDoc {
        remote: url.clone(),
        keys: (entries.iter())
            .map(|e| json::RemoteKeyDoc {
                name: e.key.clone(),
                created_ns: e.object.created_ns,
                kdf: e.object.kdf.clone(),
                m_kib: e.object.params.m_kib,
                t: e.object.params.t,
                p: e.object.params.p,
            })
            .collect(),
    };
    emit(ctx, json::value(&doc), || {
        for key in &doc.keys {
            let made = crate::render::time_str(key.created_ns);
            let kdf = format!(
                "{} m={} MiB t={} p={}",
                key.kdf,
                key.m_kib / 1024,
                key.t,
                key.p
            );
            println!("{}\t{made}\t{kdf}", key.name);
        }
    });
    Ok(())
}

/// `snap remote key remove NAME [REMOTE]`: that passphrase no longer opens the remote; the
/// last key object is refused.
pub(crate) fn remove(ctx: &Ctx, name: &str, given: Option<&str>) -> Result<()> {
    let (raw, url, _) = target(ctx, given)?;
    require_encrypted(raw.as_ref(), &url)?;
    let removed = keys::remove(raw.as_ref(), name)?;
    let doc = json::RemoteKeyRemovedDoc {
        remote: url.clone(),
        removed: removed.clone(),
    };
    emit(ctx, json::value(&doc), || {
        println!("{url}: removed {removed}; its passphrase no longer opens the remote")
    });
    Ok(())
}

/// `snap remote encrypt [REMOTE]`: every object sealed again under keyed names, the marker
/// replaced, the plain objects deleted; run again after a kill, it finishes.
pub(crate) fn encrypt(ctx: &Ctx, given: Option<&str>, pass: Passphrase) -> Result<()> {
    let (raw, url, store_dir) = target(ctx, given)?;
    let master = match layout::read_marker(raw.as_ref())? {
        Marker::Sealed => master_of(raw.as_ref(), &store_dir, &url)?,
        marker => {
            let started = !keys::list(raw.as_ref())?.is_empty();
            if marker == Marker::Absent && !started {
                bail!("{url} is not a snap remote (no snap-remote marker)");
            }
            let asked = if started { Asked::Existing } else { Asked::New };
            let passphrase = pass.read(asked, &url)?;
            keys::initial(raw.as_ref(), &passphrase, KdfParams::DEFAULT, now_ns())?
        }
    };
    save_key(&store_dir, &url, &master)?;
    let sealed = Sealed::new(snap_remote::open(&url, Reach::Existing)?, master);
    let moved = snap_remote::reseal::reseal(raw.as_ref(), &sealed)?;
    let doc = json::RemoteEncryptedDoc {
        remote: url.clone(),
        copied: moved.copied,
        bytes: moved.bytes,
        deleted: moved.deleted,
    };
    emit(ctx, json::value(&doc), || {
        println!(
            "{url}: encrypted ({} object(s) sealed, {} plain one(s) deleted)",
            moved.copied, moved.deleted
        )
    });
    Ok(())
}

/// `snap remote key`'s actions.
#[cfg(feature = "remote")]
#[derive(Debug, clap::Subcommand)]
pub enum RemoteKeyAction {
    /// Add a passphrase (SNAP_REMOTE_NEW_PASSWORD, --password-file, or asked twice).
    Add {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
        /// Read the new passphrase from the first line of FILE.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// The key objects, with when each was made and its KDF parameters.
    List {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
    },
    /// Remove a key object: its passphrase no longer opens the remote (not the last one).
    Remove {
        /// The key object (`keys/NAME` or NAME, as `snap remote key list` shows).
        name: String,
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
    },
}
