//! The filesystems mounted at, above or below the workspace root, as `/proc/self/mountinfo`
//! lists them (docs/SAFETY.md, "What the watcher cannot see"). A mount raises no inotify
//! event: a filesystem mounted below the root after the watches were taken hides the
//! directories they watch, and its own have none; a bind mount or a network filesystem shows
//! writes made through paths no watch covers. So the watcher reads the table at its start
//! and before every answer: any change among these mounts starts a new epoch (the next save
//! walks the whole tree, and the watches are taken again over what is mounted now), and each
//! mount point below the root is named whole in every answer.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Where the kernel lists this process's mounts.
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The mounts that bear on one workspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Mounts {
    /// Their lines of the table, as read: any change in one is a change.
    lines: Vec<String>,
    /// The mount points below the root, workspace-relative.
    pub(crate) below: Vec<Vec<u8>>,
}

/// The mounts at, above or below `root` now.
pub(crate) fn read(root: &Path) -> Result<Mounts, String> {
    let table =
        std::fs::read_to_string(MOUNTINFO).map_err(|e| format!("cannot read {MOUNTINFO}: {e}"))?;
    Ok(parse(&table, root.as_os_str().as_bytes()))
}

/// The mounts of `table` (mountinfo's format) that bear on the workspace at `root`.
fn parse(table: &str, root: &[u8]) -> Mounts {
    let mut mounts = Mounts::default();
    for line in table.lines() {
        // Fields: id, parent id, major:minor, root in its filesystem, mount point, ...
        let Some(point) = line.split(' ').nth(4).map(unescape) else {
            continue;
        };
        match place(&point, root) {
            Place::Elsewhere => continue,
            Place::Below(rel) => mounts.below.push(rel),
            Place::AtOrAbove => {}
        }
        mounts.lines.push(line.to_string());
    }
    mounts.lines.sort_unstable();
    mounts.below.sort_unstable();
    mounts
}

/// Where a mount point lies from the root.
enum Place {
    AtOrAbove,
    Below(Vec<u8>),
    Elsewhere,
}

fn place(point: &[u8], root: &[u8]) -> Place {
    let within = |outer: &[u8], inner: &[u8]| {
        outer == b"/"
            || inner == outer
            || (inner.starts_with(outer) && inner.get(outer.len()) == Some(&b'/'))
    };
    if within(point, root) {
        return Place::AtOrAbove;
    }
    if within(root, point) {
        let skip = if root == b"/" { 1 } else { root.len() + 1 };
        return Place::Below(point[skip..].to_vec());
    }
    Place::Elsewhere
}

/// A mountinfo field with its octal escapes (`\040` for a space, ...) undone.
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /home rw shared:2 - ext4 /dev/sda2 rw
41 30 0:40 / /home/me/ws/src/tmp rw - tmpfs none rw
42 30 8:1 /data /home/me/ws/with\\040space rw - ext4 /dev/sda1 rw
43 30 0:41 / /home/me/ws2 rw - tmpfs none rw
44 22 0:42 / /proc rw - proc proc rw
";

    #[test]
    fn the_mounts_at_above_and_below_the_root_are_kept() {
        let mounts = parse(TABLE, b"/home/me/ws");
        assert_eq!(mounts.below, [b"src/tmp".to_vec(), b"with space".to_vec()]);
        assert_eq!(mounts.lines.len(), 4, "/, /home and the two below");
        let other = parse(&TABLE.replace("41 30 0:40", "45 30 0:43"), b"/home/me/ws");
        assert_ne!(mounts, other, "a mount replaced is a change");
        let unrelated = parse(&TABLE.replace("43 30 0:41", "46 30 0:44"), b"/home/me/ws");
        assert_eq!(mounts, unrelated, "a mount elsewhere is not");
    }

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape("a\\040b\\134c\\0"), b"a b\\c\\0");
    }
}
