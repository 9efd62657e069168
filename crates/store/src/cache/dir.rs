//! The directory cache (docs/FORMAT.md 6): for each directory a scan read, its stat, the stats of
//! its ignore files, and the entries the ignore rules let through, so that the next scan of
//! an unchanged directory stats those entries without `getdents` or rule matching.
//!
//! ```text
//! dir_cache  &[u8] dir path ("" = root) ->
//!   dir stat key [36] | written_ns i64 | special u32 | flags u8
//!   | .gitignore stat key [36] (flags bit 0) | .snapignore stat key [36] (flags bit 1)
//!   | count u32 | count × (kind u8 | name_len u16 | name bytes)                 (all LE)
//! ```
//! A listing is trusted only when the directory stats exactly as recorded and its mtime is
//! strictly before `written_ns` (the racy rule of the stat cache), and every ignore file it
//! recorded stats as recorded under the same rule. Adding, removing or renaming an entry
//! changes the directory's mtime and ctime; changing a rule file changes that file's stat;
//! so a trusted listing is exactly what `getdents` and the rules would give. A listing says
//! nothing about file contents: every listed file is still stat-ed against the stat cache.

use crate::cache::stat::{STAT_KEY_LEN, StatKey};

/// Bit of `flags`: the directory has a `.gitignore`, whose stat key follows.
const HAS_GITIGNORE: u8 = 1;
/// Bit of `flags`: the directory has a `.snapignore`, whose stat key follows.
const HAS_SNAPIGNORE: u8 = 2;
/// Flag bit: the directory holds entries the walk leaves out ([`DirHeader::left_out`]).
const HAS_LEFT_OUT: u8 = 4;
/// Bytes before the optional ignore-file keys: stat key, written_ns, special, flags.
const HEAD_LEN: usize = STAT_KEY_LEN + 8 + 4 + 1;

/// What kind of entry a listing names. A listed regular file is stat-ed again and so may
/// come back executable or over the size limit; the listing only records that it is tracked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListedKind {
    /// A regular file (kind byte 0).
    File,
    /// A symlink (kind byte 1).
    Symlink,
    /// A directory to enter (kind byte 2).
    Dir,
}

impl ListedKind {
    fn byte(self) -> u8 {
        match self {
            ListedKind::File => 0,
            ListedKind::Symlink => 1,
            ListedKind::Dir => 2,
        }
    }

    fn from_byte(b: u8) -> Option<ListedKind> {
        match b {
            0 => Some(ListedKind::File),
            1 => Some(ListedKind::Symlink),
            2 => Some(ListedKind::Dir),
            _ => None,
        }
    }
}

/// The fixed part of a directory's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirHeader {
    /// The directory's own stat, taken before it was listed.
    pub stat: StatKey,
    /// The filesystem clock at the start of the scan that listed it.
    pub written_ns: i64,
    /// FIFOs, sockets and devices in it, which a scan counts but does not track.
    pub special: u32,
    /// The stat of its `.gitignore`, taken before the file was read; `None` when absent.
    pub gitignore: Option<StatKey>,
    /// The stat of its `.snapignore`, likewise.
    pub snapignore: Option<StatKey>,
    /// It holds entries the walk leaves out (ignored, excluded, oversize or special): a
    /// directory with nothing else in it is not tracked, unlike a truly empty one.
    pub left_out: bool,
}

/// A decoded record: the header and a view of its entries.
#[derive(Clone, Copy, Debug)]
pub struct DirRecord<'a> {
    /// Stats and counts.
    pub header: DirHeader,
    count: u32,
    entries: &'a [u8],
}

/// Encodes a record; names longer than `u16::MAX` bytes cannot occur (the kernel limit is
/// 255), but one would be cut short, so the record is refused with `None`.
pub fn encode_dir_record<'n>(
    header: &DirHeader,
    entries: impl ExactSizeIterator<Item = (&'n [u8], ListedKind)>,
) -> Option<Vec<u8>> {
    let mut v = Vec::with_capacity(HEAD_LEN + 4 + 16 * entries.len());
    v.extend_from_slice(&header.stat.encode());
    v.extend_from_slice(&header.written_ns.to_le_bytes());
    v.extend_from_slice(&header.special.to_le_bytes());
    let mut flags = 0;
    if header.gitignore.is_some() {
        flags |= HAS_GITIGNORE;
    }
    if header.snapignore.is_some() {
        flags |= HAS_SNAPIGNORE;
    }
    if header.left_out {
        flags |= HAS_LEFT_OUT;
    }
    v.push(flags);
    for key in [header.gitignore, header.snapignore].iter().flatten() {
        v.extend_from_slice(&key.encode());
    }
    v.extend_from_slice(&u32::try_from(entries.len()).ok()?.to_le_bytes());
    for (name, kind) in entries {
        v.push(kind.byte());
        v.extend_from_slice(&u16::try_from(name.len()).ok()?.to_le_bytes());
        v.extend_from_slice(name);
    }
    Some(v)
}

impl<'a> DirRecord<'a> {
    /// Decodes and checks a whole record; `None` when malformed (the directory is then read).
    pub fn decode(v: &'a [u8]) -> Option<DirRecord<'a>> {
        let stat = StatKey::decode(v.get(..STAT_KEY_LEN)?)?;
        let written_ns = i64::from_le_bytes(v.get(36..44)?.try_into().ok()?);
        let special = u32::from_le_bytes(v.get(44..48)?.try_into().ok()?);
        let flags = *v.get(48)?;
        if flags & !(HAS_GITIGNORE | HAS_SNAPIGNORE | HAS_LEFT_OUT) != 0 {
            return None;
        }
        let mut at = HEAD_LEN;
        let mut key_if = |bit: u8| -> Option<Option<StatKey>> {
            if flags & bit == 0 {
                return Some(None);
            }
            let key = StatKey::decode(v.get(at..at + STAT_KEY_LEN)?)?;
            at += STAT_KEY_LEN;
            Some(Some(key))
        };
        let (gitignore, snapignore) = (key_if(HAS_GITIGNORE)?, key_if(HAS_SNAPIGNORE)?);
        let count = u32::from_le_bytes(v.get(at..at + 4)?.try_into().ok()?);
        let record = DirRecord {
            header: DirHeader {
                stat,
                written_ns,
                special,
                gitignore,
                snapignore,
                left_out: flags & HAS_LEFT_OUT != 0,
            },
            count,
            entries: v.get(at + 4..)?,
        };
        let mut walked = 0u32;
        let mut rest = record.entries;
        while !rest.is_empty() {
            rest = next_entry(rest)?.2;
            walked += 1;
        }
        (walked == count).then_some(record)
    }

    /// The listed entries, in the order they were recorded.
    pub fn entries(&self) -> impl Iterator<Item = (&'a [u8], ListedKind)> + 'a {
        let mut rest = self.entries;
        std::iter::from_fn(move || {
            let (name, kind, after) = next_entry(rest)?;
            rest = after;
            Some((name, kind))
        })
    }

    /// Number of listed entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// One entry off the front of `v`: its name, kind, and what follows.
fn next_entry(v: &[u8]) -> Option<(&[u8], ListedKind, &[u8])> {
    let kind = ListedKind::from_byte(*v.first()?)?;
    let len = u16::from_le_bytes(v.get(1..3)?.try_into().ok()?) as usize;
    let name = v.get(3..3 + len)?;
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        return None;
    }
    Some((name, kind, &v[3 + len..]))
}

/// The directory cache as loaded: records stay encoded until a scan asks for one.
#[derive(Clone, Debug, Default)]
pub struct DirCache {
    /// `meta["dirs"]`: the fingerprint of the config the records were built under.
    pub fingerprint: Option<[u8; 32]>,
    /// Encoded records by directory path.
    pub records: crate::PathMap<Vec<u8>, Vec<u8>>,
}

/// Changes to the directory cache, committed with the stat cache's.
#[derive(Clone, Debug, Default)]
pub struct DirCacheUpdate {
    /// Drop every record first: the rules outside the tree (the config) changed.
    pub clear: bool,
    /// The fingerprint of those rules to store in `meta["dirs"]`, when it changed.
    pub fingerprint: Option<[u8; 32]>,
    /// Records to write, by directory path.
    pub put: Vec<(Vec<u8>, Vec<u8>)>,
    /// Directories no longer in the tree.
    pub remove: Vec<Vec<u8>>,
}

impl DirCacheUpdate {
    /// True when committing it would change nothing.
    pub fn is_empty(&self) -> bool {
        !self.clear && self.fingerprint.is_none() && self.put.is_empty() && self.remove.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: i64) -> StatKey {
        StatKey {
            size: 4096,
            mtime_ns: n,
            ctime_ns: n + 1,
            ino: 9,
            mode: 0o40755,
        }
    }

    #[test]
    fn a_record_round_trips() {
        let header = DirHeader {
            stat: key(10),
            written_ns: 20,
            special: 2,
            gitignore: None,
            snapignore: Some(key(5)),
            left_out: true,
        };
        let names: [(&[u8], ListedKind); 3] = [
            (b"a.rs", ListedKind::File),
            (b"link", ListedKind::Symlink),
            (b"src", ListedKind::Dir),
        ];
        let v = encode_dir_record(&header, names.iter().copied()).expect("encodes");
        let record = DirRecord::decode(&v).expect("decodes");
        assert_eq!(record.header, header);
        assert_eq!(record.len(), 3);
        assert_eq!(record.entries().collect::<Vec<_>>(), names.to_vec());
    }

    #[test]
    fn a_malformed_record_is_refused() {
        let header = DirHeader {
            stat: key(1),
            written_ns: 2,
            special: 0,
            gitignore: Some(key(0)),
            snapignore: None,
            left_out: false,
        };
        let names: [(&[u8], ListedKind); 1] = [(b"x", ListedKind::File)];
        let v = encode_dir_record(&header, names.iter().copied()).expect("encodes");
        for cut in 0..v.len() {
            assert!(DirRecord::decode(&v[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = v.clone();
        longer.push(0);
        assert!(DirRecord::decode(&longer).is_none());
        let mut bad_kind = v.clone();
        let kind_at = v.len() - 4;
        bad_kind[kind_at] = 7;
        assert!(DirRecord::decode(&bad_kind).is_none());
        let mut slash = v;
        let last = slash.len() - 1;
        slash[last] = b'/';
        assert!(DirRecord::decode(&slash).is_none());
    }
}
