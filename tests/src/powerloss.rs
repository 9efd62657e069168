//! A power cut, simulated from snap's durability journal (`SNAP_DURABLE_LOG`, see
//! `snap_store::testing::journal`): copy the tree before a command, let the command run (or die at a
//! failpoint), then rebuild the tree as a power cut at that instant would leave it. Every
//! directory gets its last fsynced listing (or its listing before the command), every file its
//! last fsynced bytes (or its bytes before the command, or nothing if it was never synced).

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

/// Directory listings by absolute path, and file modes and bytes by inode.
#[derive(Debug, Default)]
pub struct Durable {
    dirs: HashMap<PathBuf, Vec<Entry>>,
    files: HashMap<u64, (u32, Vec<u8>)>,
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
                let bytes = std::fs::read(e.path()).unwrap();
                self.files.insert(entry.ino, (entry.mode, bytes));
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
                let mode = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                d.files
                    .insert(ino.parse().unwrap(), (mode, bytes[4..].to_vec()));
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
    image(root, listings, before, &synced, &mut rebuilt);
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

/// The surviving entries under `dir`, parents before children.
fn image(
    dir: &Path,
    listings: &Durable,
    before: &Durable,
    synced: &Durable,
    out: &mut Vec<(PathBuf, Node)>,
) {
    let Some(entries) = listings.dirs.get(dir).or_else(|| before.dirs.get(dir)) else {
        return;
    };
    for e in entries {
        let path = dir.join(std::ffi::OsStr::from_bytes(&e.name));
        match e.kind {
            'd' => {
                out.push((path.clone(), Node::Dir(e.mode)));
                image(&path, listings, before, synced, out);
            }
            'l' => out.push((path, Node::Link(e.target.clone()))),
            'f' => {
                let (mode, bytes) = synced
                    .files
                    .get(&e.ino)
                    .or_else(|| before.files.get(&e.ino))
                    .cloned()
                    .unwrap_or((e.mode, Vec::new()));
                out.push((path, Node::File(mode, bytes)));
            }
            _ => {}
        }
    }
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
        Node::File(_, bytes) => now.files.get(&was.ino).is_none_or(|(_, b)| b != bytes),
    }
}
