//! Writing one pack: frames appended to a temporary file, hashed a megabyte at a time, then
//! sealed (index, footer, fsync) and renamed into `packs/` under its name. Also the one repair
//! a sealed pack's own bytes allow: a rotted header whose sound bytes are known.

use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::frame::{EncodedObject, FrameInfo, encode_frame_header};
use super::frames::PackFrames;
use super::layout::{
    FOOTER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PACK_MAGIC, PACK_VERSION, TRAILER_MAGIC,
    pack_file_name,
};
use crate::StoreError;
use crate::model::ObjectId;

/// Bytes of body a [`PackWriter`] gathers before it hashes and writes them.
const BODY_BUFFER: usize = 1 << 20;

/// Writes one pack in `tmp/`; [`PackWriter::finish`] seals it into `packs/`.
#[derive(Debug)]
pub struct PackWriter {
    file: tempfile::NamedTempFile,
    tmp_path: PathBuf,
    /// Body bytes not yet hashed nor written. The body is hashed a megabyte at a time, never
    /// frame by frame: BLAKE3 hashes eight 1 KiB chunks at once (AVX2) only within one
    /// `update`, and a small frame's bytes would go one 64-byte block at a time, far slower
    /// (a first save hashes every byte it writes).
    body: Vec<u8>,
    hasher: blake3::Hasher,
    offset: u64,
    frames: PackFrames,
}

impl PackWriter {
    /// Starts a pack in `tmp_dir`.
    pub fn create(tmp_dir: &Path) -> Result<PackWriter, StoreError> {
        let tmp = tempfile::Builder::new()
            .suffix(".pack")
            .tempfile_in(tmp_dir)
            .map_err(|e| StoreError::io(tmp_dir, e))?;
        let tmp_path = tmp.path().to_path_buf();
        let mut writer = PackWriter {
            file: tmp,
            tmp_path,
            body: Vec::with_capacity(BODY_BUFFER),
            hasher: blake3::Hasher::new(),
            offset: 0,
            frames: PackFrames::spilling_into(tmp_dir),
        };
        writer.write_body(&sound_header())?;
        Ok(writer)
    }

    fn write_body(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        crate::fault!("pack-write").map_err(|e| StoreError::io(&self.tmp_path, e))?;
        self.offset += bytes.len() as u64;
        if self.body.len() + bytes.len() > BODY_BUFFER {
            self.flush_body()?;
        }
        if bytes.len() >= BODY_BUFFER {
            self.hasher.update(bytes);
            return self.write_file(bytes);
        }
        self.body.extend_from_slice(bytes);
        Ok(())
    }

    /// Hashes and writes the gathered body bytes.
    fn flush_body(&mut self) -> Result<(), StoreError> {
        let body = std::mem::take(&mut self.body);
        self.hasher.update(&body);
        let written = self.write_file(&body);
        self.body = body;
        self.body.clear();
        written
    }

    fn write_file(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.file
            .write_all(bytes)
            .map_err(|e| StoreError::io(&self.tmp_path, e))
    }

    /// Appends one object's frame.
    pub fn add(&mut self, obj: &EncodedObject) -> Result<FrameInfo, StoreError> {
        let stored_len =
            u32::try_from(obj.payload.len()).map_err(|_| StoreError::ObjectTooLarge {
                id: obj.id,
                len: obj.payload.len() as u64,
            })?;
        let info = FrameInfo {
            id: obj.id,
            kind: obj.kind,
            compression: obj.compression,
            offset: self.offset,
            raw_len: obj.raw_len,
            stored_len,
        };
        self.write_body(&encode_frame_header(&info))?;
        self.write_body(&obj.payload)?;
        self.frames.push(&info);
        Ok(info)
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// True when no object has been added.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Writes the trailer, fsyncs, renames into `packs_dir` as `<body hash>.pack` and fsyncs the
    /// directory. Returns the pack id and its frames. Only after this may the catalog name it.
    pub fn finish(mut self, packs_dir: &Path) -> Result<(ObjectId, PackFrames), StoreError> {
        self.flush_body()?;
        let body_hash = ObjectId(*self.hasher.finalize().as_bytes());
        let tmp_path = self.tmp_path.clone();
        let io = |e| StoreError::io(&tmp_path, e);
        // Entry by entry through a buffer: the index of a pack of a million small files is
        // large, and a first save would hold it whole at its peak.
        let mut file = BufWriter::with_capacity(1 << 16, &mut self.file);
        self.frames.try_for_each(|f| {
            let mut entry = [0u8; INDEX_ENTRY_LEN as usize];
            entry[..32].copy_from_slice(&f.id.0);
            entry[32..].copy_from_slice(&f.offset.to_le_bytes());
            file.write_all(&entry).map_err(io)
        })?;
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&(self.frames.len() as u64).to_le_bytes());
        footer.extend_from_slice(&self.offset.to_le_bytes());
        footer.extend_from_slice(&body_hash.0);
        footer.extend_from_slice(TRAILER_MAGIC);
        file.write_all(&footer).map_err(io)?;
        file.flush().map_err(io)?;
        drop(file);
        let tmp = self.file;
        crate::failpoint!("pack-written");
        tmp.as_file().sync_all().map_err(io)?;
        crate::testing::journal::file_synced(tmp.as_file());
        crate::failpoint!("pack-synced");
        let final_path = packs_dir.join(pack_file_name(&body_hash));
        tmp.persist(&final_path)
            .map_err(|e| StoreError::io(&final_path, e.error))?;
        crate::failpoint!("pack-renamed");
        crate::fs::io::sync_dir(packs_dir)?;
        Ok((body_hash, self.frames))
    }
}

/// The header every pack of this version starts with: magic | version u32 LE | reserved u32.
fn sound_header() -> [u8; HEADER_LEN as usize] {
    let mut header = [0u8; HEADER_LEN as usize];
    header[..8].copy_from_slice(PACK_MAGIC);
    header[8..12].copy_from_slice(&PACK_VERSION.to_le_bytes());
    header
}

/// Rewrites the header of the pack at `path` when it is not the sound one and the sound one
/// makes the body (header and frames, up to the index offset its footer gives) hash to the
/// pack's name: then the header was all that rotted, and its bytes are known exactly.
/// Returns whether it rewrote it. Before, `repair` skipped such a pack whole, frames intact.
pub fn heal_header(path: &Path) -> Result<bool, StoreError> {
    let io = |e| StoreError::io(path, e);
    let named = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(ObjectId::from_hex);
    let Some(named) = named else {
        return Ok(false);
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut head = [0u8; HEADER_LEN as usize];
    let mut footer = [0u8; FOOTER_LEN as usize];
    if len < HEADER_LEN + FOOTER_LEN {
        return Ok(false);
    }
    file.read_exact_at(&mut head, 0).map_err(io)?;
    file.read_exact_at(&mut footer, len - FOOTER_LEN)
        .map_err(io)?;
    // The footer: count u64 | index offset u64 | body hash | magic.
    let Some(index_offset) = footer.as_chunks::<8>().0.get(1) else {
        return Ok(false);
    };
    let end = u64::from_le_bytes(*index_offset);
    let sound = sound_header();
    if head == sound || !(HEADER_LEN..=len - FOOTER_LEN).contains(&end) {
        return Ok(false);
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&sound);
    let mut piece = vec![0u8; 1 << 20];
    let mut at = HEADER_LEN;
    while at < end {
        let n = piece
            .len()
            .min(usize::try_from(end - at).unwrap_or(usize::MAX));
        file.read_exact_at(&mut piece[..n], at).map_err(io)?;
        hasher.update(&piece[..n]);
        at += n as u64;
    }
    if hasher.finalize().as_bytes() != &named.0 {
        return Ok(false);
    }
    file.write_all_at(&sound, 0).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(true)
}
