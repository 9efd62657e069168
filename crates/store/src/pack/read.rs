//! Reading one sealed pack with `pread`: its trailer, its frames in order, one object by
//! offset, and the check that its body hashes to its name.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::frame::{FrameInfo, decode_frame_header};
use super::layout::{
    FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PACK_MAGIC, PACK_VERSION,
    TRAILER_MAGIC,
};
use crate::StoreError;
use crate::model::ObjectId;

/// A pack's trailer: the index (id, frame offset), the claimed body hash, the index offset.
pub type Trailer = (Vec<(ObjectId, u64)>, ObjectId, u64);

/// Reads objects out of one sealed pack.
#[derive(Debug)]
pub struct PackReader {
    path: PathBuf,
    file: File,
    len: u64,
}

impl PackReader {
    /// Opens a pack and checks its header.
    pub fn open(path: &Path) -> Result<PackReader, StoreError> {
        let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
        let reader = PackReader {
            path: path.to_path_buf(),
            file,
            len,
        };
        let header = reader.read_at(0, HEADER_LEN)?;
        if &header[..8] != PACK_MAGIC {
            return Err(reader.corrupt("bad header magic".into()));
        }
        let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if version != PACK_VERSION {
            return Err(reader.corrupt(format!("unsupported pack version {version}")));
        }
        Ok(reader)
    }

    /// The pack file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    pub(crate) fn corrupt(&self, why: String) -> StoreError {
        StoreError::CorruptPack {
            path: self.path.clone(),
            why,
        }
    }

    pub(crate) fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(self.corrupt(format!(
                "read of {len} bytes at {offset} runs past the end ({})",
                self.len
            )));
        }
        let mut buf = vec![0u8; len as usize];
        crate::fault!("pack-read")
            .and_then(|()| self.file.read_exact_at(&mut buf, offset))
            .map_err(|e| StoreError::io(&self.path, e))?;
        Ok(buf)
    }

    /// Reads, decompresses and hash-checks the object whose frame starts at `offset` (the
    /// store reads through its own delta-aware path; tests and fuzz read one frame alone).
    #[cfg(any(test, feature = "testing"))]
    pub fn read_object(
        &self,
        offset: u64,
        expect: ObjectId,
    ) -> Result<(crate::ObjectKind, Vec<u8>), StoreError> {
        let (info, payload) = self.read_frame(offset, expect)?;
        let raw = super::decode_payload(&info, payload, &mut |_| {
            Err(
                "a delta or slice frame is read through the store, which finds its base or block"
                    .into(),
            )
        })
        .map_err(|why| StoreError::CorruptObject { id: expect, why })?;
        Ok((info.kind, raw))
    }

    /// Reads the frame at `offset` as stored (still compressed), checking only its header.
    pub fn read_frame(
        &self,
        offset: u64,
        expect: ObjectId,
    ) -> Result<(FrameInfo, Vec<u8>), StoreError> {
        let header = self.read_at(offset, FRAME_HEADER_LEN)?;
        let info = decode_frame_header(offset, &header).map_err(|why| self.corrupt(why))?;
        if info.id != expect {
            return Err(self.corrupt(format!(
                "frame at {offset} holds {} not {}",
                info.id.short(),
                expect.short()
            )));
        }
        Ok((
            info,
            self.read_at(offset + FRAME_HEADER_LEN, u64::from(info.stored_len))?,
        ))
    }

    /// Reads the trailer: the index of frames and the body hash it claims.
    pub fn read_trailer(&self) -> Result<Trailer, StoreError> {
        if self.len < HEADER_LEN + FOOTER_LEN {
            return Err(self.corrupt("too short for a trailer".into()));
        }
        let footer = self.read_at(self.len - FOOTER_LEN, FOOTER_LEN)?;
        if &footer[48..56] != TRAILER_MAGIC {
            return Err(self.corrupt("bad trailer magic".into()));
        }
        let count = u64::from_le_bytes(
            footer[0..8]
                .try_into()
                .map_err(|_| self.corrupt("footer".into()))?,
        );
        let index_offset = u64::from_le_bytes(
            footer[8..16]
                .try_into()
                .map_err(|_| self.corrupt("footer".into()))?,
        );
        let body_hash =
            ObjectId::from_slice(&footer[16..48]).ok_or_else(|| self.corrupt("footer".into()))?;
        let index_len = count
            .checked_mul(INDEX_ENTRY_LEN)
            .ok_or_else(|| self.corrupt("index count overflows".into()))?;
        if index_offset
            .checked_add(index_len)
            .and_then(|n| n.checked_add(FOOTER_LEN))
            != Some(self.len)
        {
            return Err(self.corrupt(format!(
                "trailer claims {count} entries at {index_offset}, file is {} bytes",
                self.len
            )));
        }
        let index = self.read_at(index_offset, index_len)?;
        let entries = index
            .chunks_exact(INDEX_ENTRY_LEN as usize)
            .map(parse_index_entry)
            .collect();
        Ok((entries, body_hash, index_offset))
    }

    /// Scans the frames forward from the header to `end` (the index offset, or the file length
    /// when the trailer is lost), without reading payloads.
    pub fn scan_frames(&self, end: u64) -> Result<Vec<FrameInfo>, StoreError> {
        let mut frames = Vec::new();
        let mut offset = HEADER_LEN;
        while offset < end {
            let header = self.read_at(offset, FRAME_HEADER_LEN)?;
            let info = decode_frame_header(offset, &header).map_err(|why| self.corrupt(why))?;
            offset += FRAME_HEADER_LEN + u64::from(info.stored_len);
            frames.push(info);
        }
        if offset != end {
            return Err(self.corrupt(format!("last frame runs past {end}")));
        }
        Ok(frames)
    }

    /// Recomputes the BLAKE3 of the body `[0, end)`.
    pub fn hash_body(&self, end: u64) -> Result<ObjectId, StoreError> {
        let mut hasher = blake3::Hasher::new();
        let mut offset = 0;
        while offset < end {
            let n = (end - offset).min(1 << 20);
            hasher.update(&self.read_at(offset, n)?);
            offset += n;
        }
        Ok(ObjectId(*hasher.finalize().as_bytes()))
    }
}

fn parse_index_entry(e: &[u8]) -> (ObjectId, u64) {
    let mut id = [0u8; 32];
    id.copy_from_slice(&e[..32]);
    let mut off = [0u8; 8];
    off.copy_from_slice(&e[32..40]);
    (ObjectId(id), u64::from_le_bytes(off))
}
