//! A file's content read back from the store: one chunk, or a chunk list's chunks in file
//! order, one chunk at a time, so a file of any size is restored, copied or checked in the
//! memory of its largest chunk (FastCDC's maximum, docs/FORMAT.md 3).

use crate::{ChunkList, ChunkRef, ObjectId, ObjectKind, Store, StoreError};

/// The chunks of one file, read one at a time: see [`Store::file_chunks`].
#[derive(Debug)]
pub struct FileChunks<'s> {
    store: &'s Store,
    /// A one-chunk file's bytes, until taken.
    whole: Option<Vec<u8>>,
    /// A chunk list's chunks still to read, last first.
    rest: Vec<ChunkRef>,
}

impl FileChunks<'_> {
    /// The file's length as its chunk list declares it: a hint only (FORMAT.md 4.5).
    pub fn len_hint(&self) -> u64 {
        let whole = self.whole.as_ref().map_or(0, |w| w.len() as u64);
        (self.rest.iter()).fold(whole, |n, c| n.saturating_add(c.len))
    }
}

impl Iterator for FileChunks<'_> {
    type Item = Result<Vec<u8>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(whole) = self.whole.take() {
            return Some(Ok(whole));
        }
        let chunk = self.rest.pop()?;
        Some(self.store.read_kind(&chunk.id, ObjectKind::Chunk))
    }
}

impl Store {
    /// A file's content (a chunk, or a chunk list) as its chunks in file order, each read
    /// and checked when the iterator reaches it.
    pub fn file_chunks(&self, id: &ObjectId) -> Result<FileChunks<'_>, StoreError> {
        let (kind, bytes) = self.read(id)?;
        let (whole, mut rest) = match kind {
            ObjectKind::Chunk => (Some(bytes), Vec::new()),
            ObjectKind::ChunkList => (None, ChunkList::decode(*id, &bytes)?.chunks),
            found => {
                return Err(StoreError::WrongKind {
                    id: *id,
                    expected: ObjectKind::Chunk,
                    found,
                });
            }
        };
        rest.reverse();
        Ok(FileChunks {
            store: self,
            whole,
            rest,
        })
    }

    /// A file's whole content in memory. For content a caller has bounded (by its entry's
    /// size); anything else goes through [`Store::file_chunks`].
    pub fn read_file(&self, id: &ObjectId) -> Result<Vec<u8>, StoreError> {
        let chunks = self.file_chunks(id)?;
        // The lengths are only a hint: a damaged list must not make us reserve unbounded memory.
        let mut out = Vec::with_capacity(chunks.len_hint().min(64 << 20) as usize);
        for chunk in chunks {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    /// Checks that every byte of a file's content (a chunk, or a chunk list and each of its
    /// chunks) reads back whole and matches its id, holding one chunk at a time. The catalog
    /// naming an object does not say its frame is sound: a pack can rot after it was written.
    pub fn check_file(&self, id: &ObjectId) -> Result<(), StoreError> {
        self.file_chunks(id)?.try_for_each(|chunk| chunk.map(drop))
    }
}
