//! File content into objects (docs/FORMAT.md 3): one chunk up to [`CHUNK_THRESHOLD`], else
//! FastCDC chunks and a chunk list. Files up to [`STREAM_THRESHOLD`] are cut in memory;
//! larger ones are streamed through FastCDC's reader, so a file of any size is stored in the
//! memory of a few chunks. Both ways give the same ids for the same bytes.

use std::io::Read;
use std::path::Path;

use snap_store::{ChunkList, ChunkRef, ObjectId, ObjectKind, ObjectWriter};

use crate::error::TreeError;

/// Files up to this size are one chunk; larger ones are cut by FastCDC.
pub const CHUNK_THRESHOLD: usize = 1 << 20;
/// FastCDC minimum, average and maximum chunk sizes for large files.
pub const CDC_SIZES: (usize, usize, usize) = (256 << 10, 1 << 20, 4 << 20);
/// Files over this size are streamed, never held whole.
pub const STREAM_THRESHOLD: u64 = 16 << 20;
/// Files under this size are never stored as deltas: a delta's header and frame would save
/// a few dozen bytes at best, and reading the base costs more than compressing the file.
pub const DELTA_MIN_FILE: usize = 1024;

/// A file's stored content: its object and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Content {
    /// A chunk, or a chunk list.
    pub id: ObjectId,
    /// Bytes read.
    pub len: u64,
}

/// Stores file content: one chunk up to [`CHUNK_THRESHOLD`], else FastCDC chunks and a list.
pub fn store_content(writer: &ObjectWriter<'_>, data: &[u8]) -> Result<ObjectId, TreeError> {
    store_content_against(writer, data, None)
}

/// As [`store_content`], storing a one-chunk file as a delta against `base` (the content the
/// same path had before) when that is much smaller (see [`ObjectWriter::put_against`]).
/// Large files keep their content-defined chunks: an edit changes one or two of them.
pub(crate) fn store_content_against(
    writer: &ObjectWriter<'_>,
    data: &[u8],
    base: Option<ObjectId>,
) -> Result<ObjectId, TreeError> {
    if data.len() <= CHUNK_THRESHOLD {
        let base = base.filter(|_| data.len() >= DELTA_MIN_FILE);
        return Ok(writer.put_against(ObjectKind::Chunk, data, base)?);
    }
    let (min, avg, max) = CDC_SIZES;
    let mut list = ChunkList::default();
    for chunk in fastcdc::v2020::FastCDC::new(data, min, avg, max) {
        let bytes = &data[chunk.offset..chunk.offset + chunk.length];
        list.chunks.push(ChunkRef {
            id: writer.put(ObjectKind::Chunk, bytes)?,
            len: bytes.len() as u64,
        });
    }
    Ok(writer.put(ObjectKind::ChunkList, &list.encode())?)
}

/// Stores what `reader` gives, `len_hint` bytes expected: read whole (up to one byte past the
/// hint) when that is at most [`STREAM_THRESHOLD`], else streamed to its end. `path` names the file in errors.
pub(crate) fn store_reader(
    writer: &ObjectWriter<'_>,
    reader: impl Read,
    len_hint: u64,
    path: &Path,
) -> Result<Content, TreeError> {
    if len_hint > STREAM_THRESHOLD {
        return store_stream(writer, reader, path);
    }
    // At most one byte past the hint: a file grown meanwhile is a different file, which the
    // caller's stat check tells, and must not be read whole whatever its size now.
    let mut data = Vec::with_capacity(len_hint as usize + 1);
    (reader.take(len_hint + 1).read_to_end(&mut data)).map_err(|e| TreeError::io(path, e))?;
    let id = store_content(writer, &data)?;
    Ok(Content {
        id,
        len: data.len() as u64,
    })
}

/// Stores what `reader` gives chunk by chunk. Chunks are held back until they pass
/// [`CHUNK_THRESHOLD`]: a stream that ends below it is one chunk, as [`store_content`] makes.
pub(crate) fn store_stream(
    writer: &ObjectWriter<'_>,
    reader: impl Read,
    path: &Path,
) -> Result<Content, TreeError> {
    let (min, avg, max) = CDC_SIZES;
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut list = ChunkList::default();
    let mut len = 0u64;
    for chunk in fastcdc::v2020::StreamCDC::new(reader, min, avg, max) {
        let chunk = chunk.map_err(|e| TreeError::io(path, cdc_error(e)))?;
        len += chunk.length as u64;
        held.push(chunk.data);
        if len > CHUNK_THRESHOLD as u64 {
            for bytes in held.drain(..) {
                list.chunks.push(ChunkRef {
                    id: writer.put(ObjectKind::Chunk, &bytes)?,
                    len: bytes.len() as u64,
                });
            }
        }
    }
    let id = match list.chunks.is_empty() {
        true => store_content(writer, &held.concat())?,
        false => writer.put(ObjectKind::ChunkList, &list.encode())?,
    };
    Ok(Content { id, len })
}

fn cdc_error(e: fastcdc::v2020::Error) -> std::io::Error {
    match e {
        fastcdc::v2020::Error::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use snap_store::testing::noise;

    fn both_ways(data: &[u8]) -> (ObjectId, Content) {
        let dir = tempfile::tempdir().unwrap();
        let store = snap_store::Store::init(dir.path()).unwrap();
        let writer = store.dry_writer();
        let whole = store_content(&writer, data).unwrap();
        let streamed = store_stream(&writer, data, Path::new("f")).unwrap();
        (whole, streamed)
    }

    #[test]
    fn a_stream_gives_the_ids_a_whole_read_gives() {
        for len in [0, 1, CHUNK_THRESHOLD, CHUNK_THRESHOLD + 1, 3 << 20, 9 << 20] {
            let data = noise(len, len as u64 + 7);
            let (whole, streamed) = both_ways(&data);
            assert_eq!(
                streamed,
                Content {
                    id: whole,
                    len: len as u64
                },
                "len {len}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        #[test]
        fn any_content_streams_to_the_same_id(len in 0usize..(6 << 20), seed: u64, zeros: bool) {
            let data = if zeros { vec![0; len] } else { noise(len, seed) };
            let (whole, streamed) = both_ways(&data);
            prop_assert_eq!(streamed, Content { id: whole, len: len as u64 });
        }
    }
}
