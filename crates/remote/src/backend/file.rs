//! The `file://` remote: a directory, one file per key (`packs/<id>.pack` is that path under
//! it). A create-only put writes a temporary file, syncs it, and hard-links it to its name,
//! which fails if the name exists: of racing creates exactly one links, on a local
//! filesystem as on NFS. The directory is synced after, so a put that returned is durable.

use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{Listed, Put, Reach, Remote};
use crate::RemoteError;

/// Temporary files of puts in progress, under the remote's directory.
const TMP_DIR: &str = ".tmp";

/// A remote in a directory.
#[derive(Debug)]
pub struct FileRemote {
    root: PathBuf,
}

impl FileRemote {
    /// The remote in `root`, an absolute path. With [`Reach::Existing`] the directory must
    /// be there: a mistyped path is an error, never a new empty remote.
    pub fn open(root: &Path, reach: Reach) -> Result<FileRemote, RemoteError> {
        let url = || format!("file://{}", root.display());
        if !root.is_absolute() {
            return Err(RemoteError::BadUrl {
                url: url(),
                why: "a file:// URL needs an absolute path (file:///dir)".into(),
            });
        }
        match (reach, root.is_dir()) {
            (_, true) => {}
            (Reach::Create, false) => {
                std::fs::create_dir_all(root).map_err(|e| RemoteError::io(root, e))?;
            }
            (Reach::Existing, false) => return Err(RemoteError::NoRemote { url: url() }),
        }
        Ok(FileRemote {
            root: root.to_path_buf(),
        })
    }

    fn path(&self, key: &str) -> Result<PathBuf, RemoteError> {
        let sound = !key.is_empty()
            && !key.starts_with('/')
            && key
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        if !sound {
            return Err(RemoteError::BadKey(key.to_string()));
        }
        Ok(self.root.join(key))
    }

    fn write_tmp(&self, body: &[u8]) -> Result<tempfile::NamedTempFile, RemoteError> {
        let dir = self.root.join(TMP_DIR);
        let io = |e| RemoteError::io(&dir, e);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir).map_err(io)?;
        }
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
        tmp.write_all(body).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        Ok(tmp)
    }
}

impl Remote for FileRemote {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        let path = self.path(key)?;
        let parent = path.parent().unwrap_or(&self.root);
        if !parent.is_dir() {
            std::fs::create_dir_all(parent).map_err(|e| RemoteError::io(parent, e))?;
            // The new directory's own entry, so a put that returned survives a power cut.
            sync_dir(parent.parent().unwrap_or(&self.root))?;
        }
        let tmp = self.write_tmp(body)?;
        let linked = std::fs::hard_link(tmp.path(), &path);
        drop(tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(Put::Exists),
            Err(e) => return Err(RemoteError::io(&path, e)),
        }
        sync_dir(parent)?;
        Ok(Put::Created)
    }

    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        let path = self.path(key)?;
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RemoteError::io(&path, e)),
        };
        let io = |e| RemoteError::io(&path, e);
        let len = file.metadata().map_err(io)?.len();
        let r = range.unwrap_or(0..len);
        let (start, end) = (r.start.min(len), r.end.min(len));
        if end.saturating_sub(start) > super::MAX_GET {
            return Err(RemoteError::Corrupt {
                key: key.to_string(),
                why: format!("{len} bytes, more than any object snap writes"),
            });
        }
        let mut buf = vec![0u8; usize::try_from(end.saturating_sub(start)).unwrap_or(0)];
        file.read_exact_at(&mut buf, start).map_err(io)?;
        Ok(Some(buf))
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        // Read from the deepest directory the prefix names whole, then filter by key.
        let dir_part = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        let start = if dir_part.is_empty() {
            self.root.clone()
        } else {
            self.path(dir_part)?
        };
        let mut out = Vec::new();
        list_under(&self.root, &start, &mut out)?;
        out.retain(|l| l.key.starts_with(prefix));
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        let path = self.path(key)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(RemoteError::io(&path, e)),
        }
    }

    /// The temporary files (`.tmp/.tmp*`) of puts killed before their link, older than
    /// `age`: nothing lists them, so nothing else would ever remove them.
    fn sweep_stale(&self, age: std::time::Duration) -> Result<usize, RemoteError> {
        let dir = self.root.join(TMP_DIR);
        let io = |e| RemoteError::io(&dir, e);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io(e)),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry.map_err(io)?;
            let ours = entry.file_name().to_string_lossy().starts_with(".tmp");
            let meta = entry.metadata().map_err(io)?;
            let old = (meta.modified().ok())
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|elapsed| elapsed > age);
            if ours && meta.is_file() && old {
                match std::fs::remove_file(entry.path()) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(e)),
                }
            }
        }
        Ok(removed)
    }

    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }
}

/// Every file under `dir` (not the temporary directory), keyed relative to `root`.
fn list_under(root: &Path, dir: &Path, out: &mut Vec<Listed>) -> Result<(), RemoteError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(RemoteError::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| RemoteError::io(dir, e))?;
        let path = entry.path();
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            // Deleted since the directory was read (a remote gc): not there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(RemoteError::io(&path, e)),
        };
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let Some(key) = rel.to_str() else { continue };
        if key == TMP_DIR {
            continue;
        }
        if meta.is_dir() {
            list_under(root, &path, out)?;
        } else if meta.is_file() {
            out.push(Listed {
                key: key.to_string(),
                size: meta.len(),
            });
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), RemoteError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| RemoteError::io(dir, e))
}

/// `range` of `bytes`, clamped to them.
pub(crate) fn cut(bytes: &[u8], range: Range<u64>) -> Vec<u8> {
    let len = bytes.len() as u64;
    let (start, end) = (range.start.min(len), range.end.min(len));
    bytes[start as usize..end.max(start) as usize].to_vec()
}
