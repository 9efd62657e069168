//! A power cut, simulated from snap's durability journal (`SNAP_DURABLE_LOG`, see
//! `snap_store::testing::journal`): copy the tree before a command, let the command run (or die at a
//! failpoint), then rebuild the tree as a power cut at that instant would leave it. Every
//! directory gets its last fsynced listing (or its listing before the command), every file its
//! last fsynced bytes (or its bytes before the command, or nothing if it was never synced).
//!
//! Inode numbers are reused: a file the command removes or renames over can give its number
//! to a file the command creates and fsyncs. Each file is therefore known by its number and
//! birth time, and an entry never takes the bytes synced for another life of its number. No
//! filesystem makes a file durable under a reused number and forgets how the number was freed,
//! so an entry of the old listing whose number went to a new file that reached the disk is
//! taken as freed durably: its name holds what it holds now (the file renamed over it), or
//! nothing if it is gone now.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One directory entry as the journal and the baseline record it.
#[derive(Clone, Debug)]
struct Entry {
    kind: char,
    ino: u64,
    mode: u32,
    name: Vec<u8>,
    target: Vec<u8>,
}

/// A file's mode, birth time (0: unknown) and bytes.
#[derive(Clone, Debug)]
struct FileBytes {
    mode: u32,
    birth: u64,
    bytes: Vec<u8>,
}

/// Directory listings by absolute path, and files by inode.
#[derive(Debug, Default)]
pub struct Durable {
    dirs: HashMap<PathBuf, Vec<Entry>>,
    files: HashMap<u64, FileBytes>,
}

impl Durable {
    /// The whole tree under `root` as it is now, taken as durable (as after `sync`).
    pub fn take(root: &Path) -> Durable {
        let mut d = Durable::default();
        d.take_dir(root);
        d
    }

    fn take_dir(&mut self, dir: &Path) {
        let mut entries = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let t = meta.file_type();
            let mut entry = Entry {
                kind: 'f',
                ino: e.ino(),
                mode: meta.permissions().mode() & 0o7777,
                name: e.file_name().as_bytes().to_vec(),
                target: Vec::new(),
            };
            if t.is_symlink() {
                entry.kind = 'l';
                entry.target = std::fs::read_link(e.path())
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec();
            } else if t.is_dir() {
                entry.kind = 'd';
                self.take_dir(&e.path());
            } else if t.is_file() {
                let file = FileBytes {
                    mode: entry.mode,
                    birth: birth_ns(&meta),
                    bytes: std::fs::read(e.path()).unwrap(),
                };
                self.files.insert(entry.ino, file);
            } else {
                entry.kind = 'o';
            }
            entries.push(entry);
        }
        self.dirs.insert(dir.to_path_buf(), entries);
    }

    /// What the journal in `log` says each fsync made durable.
    fn read_journal(log: &Path) -> Durable {
        let mut d = Durable::default();
        for e in std::fs::read_dir(log).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                // A record the process died writing: taken as a power cut just before that fsync.
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap();
            if let Some(ino) = name.strip_prefix("inode-") {
                let file = FileBytes {
                    mode: u32::from_le_bytes(bytes[..4].try_into().unwrap()),
                    birth: u64::from_le_bytes(bytes[4..12].try_into().unwrap()),
                    bytes: bytes[12..].to_vec(),
                };
                d.files.insert(ino.parse().unwrap(), file);
            } else if let Some(path) = name.strip_prefix("dir-") {
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(&unhex(path)));
                let text = String::from_utf8(bytes).unwrap();
                d.dirs.insert(path, text.lines().map(parse_entry).collect());
            }
        }
        d
    }
}

fn parse_entry(line: &str) -> Entry {
    let f: Vec<&str> = line.split(' ').collect();
    Entry {
        kind: f[0].chars().next().unwrap(),
        ino: f[1].parse().unwrap(),
        mode: u32::from_str_radix(f[2], 8).unwrap(),
        name: unhex(f[3]),
        target: f.get(4).map(|t| unhex(t)).unwrap_or_default(),
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Replaces the tree under `root` with what survives a power cut now, given the tree
/// `before` the command and the journal the command wrote to `log`. Returns how many entries
/// the cut changed from what was on disk, so a test can tell the cut was not a no-op.
pub fn power_cut(root: &Path, before: &Durable, log: &Path, cut: Cut) -> usize {
    let synced = Durable::read_journal(log);
    let now = Durable::take(root);
    let listings = match cut {
        Cut::DropUnsynced => &synced,
        Cut::KeepNames => &now,
    };
    let mut rebuilt = Vec::new();
    let sides = Sides {
        listings,
        before,
        synced: &synced,
        now: &now,
    };
    image(root, &sides, &mut rebuilt);
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let mut changed = 0;
    for (path, node) in &rebuilt {
        write_node(path, node);
        changed += usize::from(differs(path, node, &now));
    }
    changed
        + now
            .dirs
            .values()
            .flatten()
            .count()
            .saturating_sub(rebuilt.len())
}

/// What a power cut keeps.
#[derive(Clone, Copy, Debug)]
pub enum Cut {
    /// Only what an fsync covered: unsynced creations, renames and writes are all lost.
    DropUnsynced,
    /// Every directory change (as a journaling filesystem may commit its metadata first), but
    /// file bytes only where an fsync covered them: a file renamed into place unsynced is
    /// left empty.
    KeepNames,
}

enum Node {
    Dir(u32),
    File(u32, Vec<u8>),
    Link(Vec<u8>),
}

/// What [`image`] rebuilds from.
struct Sides<'a> {
    /// The listings taken as durable (the journal's, or now's for [`Cut::KeepNames`]).
    listings: &'a Durable,
    /// The tree before the command, for directories never synced.
    before: &'a Durable,
    /// What the journal says each fsync made durable.
    synced: &'a Durable,
    /// The tree just before the cut.
    now: &'a Durable,
}

/// The surviving entries under `dir`, parents before children.
fn image(dir: &Path, sides: &Sides<'_>, out: &mut Vec<(PathBuf, Node)>) {
    // The listing, and what knows the lives of the files it names (a journal listing names
    // the files as they were when it was synced, which the journal's records are).
    let Some((entries, lives)) = (sides.listings.dirs.get(dir).map(|es| (es, sides.listings)))
        .or_else(|| sides.before.dirs.get(dir).map(|es| (es, sides.before)))
    else {
        return;
    };
    let from_before = std::ptr::eq(lives, sides.before);
    for e in entries {
        let path = dir.join(std::ffi::OsStr::from_bytes(&e.name));
        match e.kind {
            'd' => {
                out.push((path.clone(), Node::Dir(e.mode)));
                image(&path, sides, out);
            }
            'l' => out.push((path, Node::Link(e.target.clone()))),
            'f' if from_before && sides.reused(e) => {
                // How its number was freed is durable: the name holds what it holds now.
                let now = sides.now.dirs.get(dir).into_iter().flatten();
                if let Some(e) = now.filter(|n| n.kind == 'f').find(|n| n.name == e.name) {
                    out.push((path, sides.file(e, sides.now)));
                }
            }
            'f' => out.push((path, sides.file(e, lives))),
            _ => {}
        }
    }
}

impl Sides<'_> {
    /// Whether the number of `e` (an entry of the old listing) went to a new file that was
    /// synced.
    fn reused(&self, e: &Entry) -> bool {
        let birth = self.before.files.get(&e.ino).map_or(0, |f| f.birth);
        self.synced
            .files
            .get(&e.ino)
            .is_some_and(|f| !same_life(birth, f))
    }

    /// The bytes of file entry `e`, whose life `lives` knows: the last synced, else those
    /// before the command, each only for the same life; else nothing.
    fn file(&self, e: &Entry, lives: &Durable) -> Node {
        let birth = lives.files.get(&e.ino).map_or(0, |f| f.birth);
        let file = (self.synced.files.get(&e.ino))
            .filter(|f| same_life(birth, f))
            .or_else(|| {
                self.before
                    .files
                    .get(&e.ino)
                    .filter(|f| same_life(birth, f))
            });
        match file {
            Some(f) => Node::File(f.mode, f.bytes.clone()),
            None => Node::File(e.mode, Vec::new()),
        }
    }
}

/// Whether `f` is the life of its inode number born at `birth` (0: unknown, taken as yes).
fn same_life(birth: u64, f: &FileBytes) -> bool {
    birth == 0 || f.birth == 0 || f.birth == birth
}

fn write_node(path: &Path, node: &Node) {
    match node {
        Node::Dir(mode) => {
            std::fs::create_dir(path).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        Node::File(mode, bytes) => {
            std::fs::write(path, bytes).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        Node::Link(target) => {
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), path).unwrap()
        }
    }
}

/// Whether the rebuilt `path` differs from what was on disk just before the cut.
fn differs(path: &Path, node: &Node, now: &Durable) -> bool {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return true;
    };
    let Some(was) = now
        .dirs
        .get(parent)
        .and_then(|es| es.iter().find(|e| e.name == name.as_bytes()))
    else {
        return true;
    };
    match node {
        Node::Dir(_) => was.kind != 'd',
        Node::Link(t) => was.kind != 'l' || &was.target != t,
        Node::File(_, bytes) => now.files.get(&was.ino).is_none_or(|f| &f.bytes != bytes),
    }
}

/// A file's birth time in nanoseconds, as the journal records it (0 where unknown).
fn birth_ns(meta: &std::fs::Metadata) -> u64 {
    meta.created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
