//! Encrypted remotes in the binary: where a passphrase comes from (`SNAP_REMOTE_PASSWORD`,
//! `--password-file FILE`, or a prompt on the terminal; never an argument, which `ps`
//! shows), the store's key files, and a remote opened as its marker says (docs/FORMAT.md
//! 9.1, docs/SAFETY.md "Remotes").
//!
//! The unwrapped master key of each encrypted remote a store uses is kept in
//! `.snap/remote-keys/<BLAKE3 of the URL, 32 hex>`, 0600 in a 0700 directory, so pushes
//! and pulls ask for nothing; the passphrase is needed to make a remote, to clone, and by
//! a store that has not met the remote yet.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use snap_remote::crypt::{KdfParams, MasterKey};
use snap_remote::layout::{self, Marker};
use snap_remote::sealed::Sealed;
use snap_remote::{Reach, Remote, keys};
use zeroize::Zeroizing;

/// The environment variable a passphrase may come in.
pub(crate) const PASSWORD_ENV: &str = "SNAP_REMOTE_PASSWORD";
/// The one a new passphrase (`snap remote key add`) may come in.
pub(crate) const NEW_PASSWORD_ENV: &str = "SNAP_REMOTE_NEW_PASSWORD";
/// The store's folder of remote keys.
const KEYS_DIR: &str = "remote-keys";
/// First line of a key file.
const KEY_FILE_MAGIC: &str = "snap remote key 1";

/// Which passphrase is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    /// One that opens a key object there.
    Existing,
    /// A new one (a new remote or key object): asked twice on a terminal.
    New,
}

/// Where a command was told to read the passphrase.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Passphrase<'a> {
    /// `--password-file FILE`.
    pub file: Option<&'a Path>,
}

impl Passphrase<'_> {
    /// The passphrase: the file, else the environment, else a prompt on the terminal.
    pub(crate) fn read(self, asked: Asked, url: &str) -> Result<Zeroizing<Vec<u8>>> {
        if let Some(file) = self.file {
            let bytes = Zeroizing::new(
                std::fs::read(file)
                    .with_context(|| format!("--password-file {}", file.display()))?,
            );
            return nonempty(first_line(&bytes), &file.display().to_string());
        }
        let env = match asked {
            Asked::Existing => PASSWORD_ENV,
            Asked::New => NEW_PASSWORD_ENV,
        };
        let from_env = std::env::var_os(env).or_else(|| std::env::var_os(PASSWORD_ENV));
        if let Some(value) = from_env {
            use std::os::unix::ffi::OsStrExt;
            return nonempty(Zeroizing::new(value.as_bytes().to_vec()), env);
        }
        if !std::io::stdin().is_terminal() {
            bail!(
                "{url} is encrypted: give its passphrase in {PASSWORD_ENV} or with \
                 --password-file FILE (no terminal to ask on)"
            );
        }
        let first = prompt(&format!("passphrase for {url}: "))?;
        if asked == Asked::New && *prompt("again: ")? != *first {
            bail!("the two passphrases differ");
        }
        nonempty(first, "the passphrase")
    }
}

fn first_line(bytes: &[u8]) -> Zeroizing<Vec<u8>> {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = &bytes[..end];
    Zeroizing::new(line.strip_suffix(b"\r").unwrap_or(line).to_vec())
}

fn nonempty(bytes: Zeroizing<Vec<u8>>, from: &str) -> Result<Zeroizing<Vec<u8>>> {
    match bytes.is_empty() {
        true => bail!("{from}: the passphrase is empty"),
        false => Ok(bytes),
    }
}

/// Asks on the terminal with echo off; the echo comes back whatever happens.
fn prompt(question: &str) -> Result<Zeroizing<Vec<u8>>> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .context("/dev/tty")?;
    let before = tcgetattr(&tty).context("the terminal's modes")?;
    let mut quiet = before.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    tcsetattr(&tty, OptionalActions::Flush, &quiet).context("turning echo off")?;
    let mut line = Zeroizing::new(String::new());
    let read = (|| {
        (&tty).write_all(question.as_bytes())?;
        std::io::BufReader::new(&tty).read_line(&mut line)
    })();
    let _ = tcsetattr(&tty, OptionalActions::Flush, &before);
    let _ = (&tty).write_all(b"\n");
    read.context("reading the passphrase")?;
    Ok(first_line(line.as_bytes()))
}

/// The key file of `url` in the store at `store_dir`.
fn key_path(store_dir: &Path, url: &str) -> PathBuf {
    let hash = blake3::hash(url.as_bytes()).to_hex();
    store_dir.join(KEYS_DIR).join(&hash[..32])
}

/// The master key the store keeps for `url`, if it has met that remote.
pub(crate) fn saved_key(store_dir: &Path, url: &str) -> Result<Option<MasterKey>> {
    let path = key_path(store_dir, url);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => Zeroizing::new(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| path.display().to_string()),
    };
    let mut lines = text.lines();
    let sound = lines.next() == Some(KEY_FILE_MAGIC) && lines.next() == Some(url);
    let bytes = lines.next().and_then(unhex).filter(|_| sound);
    match bytes.as_ref().and_then(|b| MasterKey::from_bytes(b)) {
        Some(key) => Ok(Some(key)),
        None => bail!("{}: not a remote key file of {url}", path.display()),
    }
}

/// Whether the store keeps a key for `url` (so it is an encrypted remote).
pub(crate) fn has_key(store_dir: &Path, url: &str) -> bool {
    key_path(store_dir, url).exists()
}

/// Keeps `key` for `url`: written atomically, 0600, in a 0700 folder.
pub(crate) fn save_key(store_dir: &Path, url: &str, key: &MasterKey) -> Result<()> {
    let path = key_path(store_dir, url);
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
        made.with_context(|| dir.display().to_string())?;
    }
    let hex: Zeroizing<String> =
        Zeroizing::new(key.to_bytes().iter().map(|b| format!("{b:02x}")).collect());
    let body = Zeroizing::new(format!("{KEY_FILE_MAGIC}\n{url}\n{}\n", hex.as_str()));
    snap_tree::write_atomic(&path, body.as_bytes())?;
    Ok(())
}

fn unhex(text: &str) -> Option<Zeroizing<Vec<u8>>> {
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    bytes.map(Zeroizing::new)
}

/// A remote opened for a command: plain, or sealed under its key.
pub(crate) struct Opened {
    /// The remote, objects named and sealed as its layout says.
    pub remote: Box<dyn Remote>,
    /// Its marker when opened.
    pub marker: Marker,
    /// The key when a passphrase opened it now and no store kept it (a clone keeps it).
    pub unlocked: Option<MasterKey>,
}

/// Opens `url` as its marker says: a plain remote as it is; an encrypted one with the key
/// the store keeps (`store_dir`), else with a passphrase (the key then kept, when there
/// is a store); a remote with no marker yet with the key the store keeps, if any.
pub(crate) fn open_remote(
    store_dir: Option<&Path>,
    url: &str,
    reach: Reach,
    pass: Passphrase,
) -> Result<Opened> {
    let raw = snap_remote::open(url, reach)?;
    let marker = layout::read_marker(raw.as_ref())?;
    let saved = match store_dir {
        Some(dir) => saved_key(dir, url)?,
        None => None,
    };
    let mut unlocked = None;
    let key = match (marker, saved) {
        (Marker::Plain, _) | (Marker::Absent, None) => None,
        (_, Some(key)) => Some(key),
        (Marker::Sealed, None) => {
            let key = keys::unlock(raw.as_ref(), &pass.read(Asked::Existing, url)?)?;
            match store_dir {
                Some(dir) => save_key(dir, url, &key)?,
                None => unlocked = MasterKey::from_bytes(key.to_bytes().as_ref()),
            }
            Some(key)
        }
    };
    let remote: Box<dyn Remote> = match key {
        Some(key) => Box::new(Sealed::new(raw, key)),
        None => raw,
    };
    Ok(Opened {
        remote,
        marker,
        unlocked,
    })
}

/// Makes the new remote at `url` an encrypted one (asking for a new passphrase) and keeps
/// its key in the store; returns it opened.
pub(crate) fn create_encrypted(
    store_dir: &Path,
    url: &str,
    raw: Box<dyn Remote>,
    pass: Passphrase,
) -> Result<Box<dyn Remote>> {
    let passphrase = pass.read(Asked::New, url)?;
    let key = keys::create(raw.as_ref(), &passphrase, KdfParams::DEFAULT, now_ns())?;
    save_key(store_dir, url, &key)?;
    Ok(Box::new(Sealed::new(raw, key)))
}

/// Nanoseconds since the epoch, the time remote marks are given.
pub(crate) fn now_ns() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
