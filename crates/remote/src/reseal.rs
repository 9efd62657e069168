//! `snap remote encrypt`: a plain remote (layout 1) moved to the encrypted layout in place.
//!
//! Every object of layout 1 is read and written again, sealed, under its keyed name below
//! `sealed/` (packs, then indexes, records, expunged ids and refs last, so no reader meets a
//! ref before what it names); then the marker is replaced (`snap-remote 2`); then every
//! object of layout 1 is deleted. Layout 2 lives under `sealed/` and `keys/` only, so each
//! step can be run again after a kill: objects already copied are skipped, and a marker
//! found absent (killed between its delete and its put) is written again. An older snap
//! refuses the remote from the marker's replacement on. A gc's marks are not copied: the
//! next collection marks anew.

use std::collections::HashSet;

use snap_store::ObjectId;

use crate::backend::{Put, Remote};
use crate::layout::{self, Marker};
use crate::names::{Folder, Names, SEALED_ROOT, token_in};
use crate::sealed::KEYS;
use crate::{RemoteError, retry};

/// What a move did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResealReport {
    /// Objects sealed and written under their new names.
    pub copied: usize,
    /// Bytes read from them.
    pub bytes: u64,
    /// Objects of layout 1 deleted.
    pub deleted: usize,
}

/// The folders copied, in the order they are written.
const COPIED: [Folder; 5] = [
    Folder::Packs,
    Folder::Index,
    Folder::Snapshots,
    Folder::Expunged,
    Folder::Refs,
];

/// Moves the remote `plain` reaches to layout 2, writing through `sealed` (the same
/// backend behind [`crate::sealed::Sealed`], whose key object is there already).
pub fn reseal(plain: &dyn Remote, sealed: &dyn Remote) -> Result<ResealReport, RemoteError> {
    let names = sealed.names();
    if !names.sealed() {
        return Err(RemoteError::Encryption {
            url: plain.describe(),
            why: "no key to seal its objects with".into(),
        });
    }
    let mut report = ResealReport::default();
    if layout::read_marker(plain)? != Marker::Sealed {
        for folder in COPIED {
            copy_folder(plain, sealed, &names, folder, &mut report)?;
        }
        retry(|| plain.delete(layout::VERSION_KEY))?;
        retry(|| plain.put_if_absent(layout::VERSION_KEY, layout::SEALED_VERSION_BODY))?;
    }
    report.deleted = delete_plain(plain)?;
    Ok(report)
}

/// Copies one folder's objects that are not there under their sealed names yet.
fn copy_folder(
    plain: &dyn Remote,
    sealed: &dyn Remote,
    names: &Names,
    folder: Folder,
    report: &mut ResealReport,
) -> Result<(), RemoteError> {
    let there: HashSet<String> = (retry(|| plain.list(&names.folder(folder)))?.into_iter())
        .map(|l| l.key)
        .collect();
    let from = Names::Plain.folder(folder);
    for listed in retry(|| plain.list(&from))? {
        let Some(to) = sealed_key(names, folder, &from, &listed.key) else {
            continue;
        };
        if there.contains(&to) {
            continue;
        }
        let Some(body) = retry(|| plain.get(&listed.key, None))? else {
            continue;
        };
        report.bytes += body.len() as u64;
        if retry(|| sealed.put_if_absent(&to, &body))? == Put::Created {
            report.copied += 1;
        }
    }
    Ok(())
}

/// The layout-2 key of the layout-1 object `key` of `folder`; `None` for a key that is not
/// one of that folder's shape (left, and deleted with the rest).
fn sealed_key(names: &Names, folder: Folder, from: &str, key: &str) -> Option<String> {
    let id = |ext: &str| token_in(key, from, ext).and_then(ObjectId::from_hex);
    match folder {
        Folder::Packs => id(".pack").map(|i| names.pack(&i)),
        Folder::Index => id(".idx").map(|i| names.index(&i)),
        Folder::Snapshots => id("").map(|i| names.record(&i)),
        Folder::Expunged => id("").map(|i| names.expunged(&i)),
        Folder::Refs => {
            let (workspace, n) = key.strip_prefix(from)?.split_once('/')?;
            Some(names.ref_key(workspace, n.parse().ok()?))
        }
        Folder::Trash => None,
    }
}

/// Deletes every object of layout 1 (refs first, packs last); returns how many.
fn delete_plain(plain: &dyn Remote) -> Result<usize, RemoteError> {
    let order = [
        Folder::Refs,
        Folder::Expunged,
        Folder::Snapshots,
        Folder::Index,
        Folder::Packs,
        Folder::Trash,
    ];
    let mut deleted = 0;
    for folder in order {
        for listed in retry(|| plain.list(&Names::Plain.folder(folder)))? {
            retry(|| plain.delete(&listed.key))?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Whether `key` belongs to layout 2 (or is the marker): what [`reseal`] never deletes.
pub fn of_layout_two(key: &str) -> bool {
    key == layout::VERSION_KEY || key.starts_with(SEALED_ROOT) || key.starts_with(KEYS)
}
