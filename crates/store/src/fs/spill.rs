//! `SpillBuf`: records appended one after another for a later commit, held in memory up to a
//! bound and past it moved to an unnamed file in the store's `tmp/`. What a first save of a
//! million files gathers for its commit (stat cache rows, the frames of its packs) would
//! otherwise be in memory from the moment each file is stored until the commit.
//!
//! The file has no name (`O_TMPFILE` where the filesystem has it), so nothing is left behind
//! by a crash, and only the process that wrote it reads it: it is not part of the on-disk
//! format. Spilling saves memory and is never a reason to fail: a file that cannot be made or
//! written leaves the records after it in memory.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// Bytes of records held in memory before they are written to the file.
pub(crate) const SPILL_AT: usize = 4 << 20;

/// Bytes read back from the file at a time.
const READ_AT_ONCE: usize = 1 << 20;

/// Records in the file, then those still in memory.
#[derive(Debug, Default)]
pub(crate) struct SpillBuf {
    bytes: Vec<u8>,
    spill: Option<Spill>,
}

/// Where records go past `at` bytes in memory.
#[derive(Debug)]
struct Spill {
    /// The directory the file is made in, when the first records are spilled.
    dir: PathBuf,
    at: usize,
    file: Option<File>,
    /// Bytes of records in the file; the first `len` bytes are whole records.
    len: u64,
    /// Set when the file could not be made or written.
    stopped: bool,
}

impl SpillBuf {
    /// Records that go to an unnamed file made in `dir` past `at` bytes in memory.
    pub(crate) fn spilling_at(dir: &Path, at: usize) -> SpillBuf {
        SpillBuf {
            bytes: Vec::new(),
            spill: Some(Spill {
                dir: dir.to_path_buf(),
                at,
                file: None,
                len: 0,
                stopped: false,
            }),
        }
    }

    /// Appends the bytes of one whole record, given in parts.
    pub(crate) fn push(&mut self, parts: &[&[u8]]) {
        for part in parts {
            self.bytes.extend_from_slice(part);
        }
        if self
            .spill
            .as_ref()
            .is_some_and(|s| self.bytes.len() >= s.at)
        {
            self.spill_bytes();
        }
    }

    /// Moves the records in memory to the end of the file.
    fn spill_bytes(&mut self) {
        let Some(spill) = self.spill.as_mut().filter(|s| !s.stopped) else {
            return;
        };
        if spill.file.is_none() {
            spill.file = tempfile::tempfile_in(&spill.dir).ok();
        }
        let written = (spill.file.as_ref()).map(|f| f.write_all_at(&self.bytes, spill.len));
        match written {
            Some(Ok(())) => {
                spill.len += self.bytes.len() as u64;
                self.bytes.clear();
            }
            // A short write leaves bytes past `len`, which are never read.
            _ => spill.stopped = true,
        }
    }

    /// Hands `f` every record's bytes in order, a piece at a time; `f` returns how many bytes
    /// at the start of its piece were whole records, and the rest comes again at the start
    /// of the next piece. Bytes left over at the end are an error.
    pub(crate) fn try_for_each_piece<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(&[u8]) -> Result<usize, E>,
    ) -> Result<(), E> {
        let mut carry = Vec::new();
        if let Some(Spill {
            dir,
            file: Some(file),
            len,
            ..
        }) = &self.spill
        {
            carry = read_back(dir, file, *len, &mut f)?;
        }
        let whole = match carry.is_empty() {
            true => f(&self.bytes)? == self.bytes.len(),
            false => {
                carry.extend_from_slice(&self.bytes);
                f(&carry)? == carry.len()
            }
        };
        match (whole, &self.spill) {
            (true, _) => Ok(()),
            (false, Some(spill)) => Err(cut(&spill.dir).into()),
            (false, None) => Err(cut(Path::new("(memory)")).into()),
        }
    }
}

/// Hands `f` the first `len` bytes of `file` a piece at a time; returns what `f` left of the
/// last piece.
fn read_back<E: From<StoreError>>(
    dir: &Path,
    file: &File,
    len: u64,
    f: &mut impl FnMut(&[u8]) -> Result<usize, E>,
) -> Result<Vec<u8>, E> {
    let mut buf = Vec::with_capacity(READ_AT_ONCE);
    let mut at = 0;
    while at < len {
        let start = buf.len();
        let piece = READ_AT_ONCE.min(usize::try_from(len - at).unwrap_or(usize::MAX));
        buf.resize(start + piece, 0);
        (file.read_exact_at(&mut buf[start..], at)).map_err(|e| StoreError::io(dir, e))?;
        at += piece as u64;
        let used = f(&buf)?;
        buf.drain(..used);
    }
    Ok(buf)
}

fn cut(dir: &Path) -> StoreError {
    let e = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "spilled records end inside a record",
    );
    StoreError::io(dir, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of 3 bytes come back whole and in order wherever the spills and the pieces
    /// cut them.
    #[test]
    fn records_come_back_in_order_across_spills() {
        let dir = tempfile::tempdir().expect("a temp dir");
        for at in [1, 2, 5, 1000] {
            let mut buf = SpillBuf::spilling_at(dir.path(), at);
            for n in 0..700u16 {
                buf.push(&[&n.to_le_bytes(), &[7]]);
            }
            let mut back = Vec::new();
            buf.try_for_each_piece(|piece| {
                let whole = piece.len() / 3 * 3;
                for r in piece[..whole].chunks_exact(3) {
                    back.push((u16::from_le_bytes([r[0], r[1]]), r[2]));
                }
                Ok::<_, StoreError>(whole)
            })
            .expect("read back");
            let want: Vec<_> = (0..700u16).map(|n| (n, 7)).collect();
            assert_eq!(back, want, "spilling at {at}");
        }
    }

    /// A directory the file cannot be made in keeps every record in memory.
    #[test]
    fn records_stay_in_memory_when_the_file_cannot_be_made() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut buf = SpillBuf::spilling_at(&dir.path().join("missing"), 2);
        for n in 0..10u8 {
            buf.push(&[&[n]]);
        }
        assert!(buf.spill.as_ref().is_some_and(|s| s.stopped && s.len == 0));
        let mut back = Vec::new();
        buf.try_for_each_piece(|piece| {
            back.extend_from_slice(piece);
            Ok::<_, StoreError>(piece.len())
        })
        .expect("read back");
        assert_eq!(back, (0..10).collect::<Vec<u8>>());
    }

    /// A reader that leaves bytes over at the end gets an error, not silence.
    #[test]
    fn bytes_left_over_are_an_error() {
        let mut buf = SpillBuf::default();
        buf.push(&[b"abc"]);
        let r = buf.try_for_each_piece(|piece| Ok::<_, StoreError>(piece.len() - 1));
        assert!(r.is_err());
    }
}
