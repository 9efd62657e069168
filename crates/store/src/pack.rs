//! Pack files: sealed, immutable containers of self-framed objects, named by their BLAKE3.
//!
//! ```text
//! pack   := header frame* trailer
//! header := magic "SNAPPACK" (8) | version u32 LE (4) | reserved u32 LE = 0 (4)      16 bytes
//! frame  := kind u8 | compression u8 | reserved u16 LE = 0 | raw_len u32 LE
//!           | stored_len u32 LE | id [32] | payload [stored_len]                       44 + n
//! trailer:= index entry* footer
//! entry  := id [32] | frame offset u64 LE                                              40 bytes
//! footer := entry count u64 LE | index offset u64 LE | body BLAKE3 [32] | "SNAPTRLR"   56 bytes
//! ```
//! The body is every byte before the index; its BLAKE3 is the pack's name. Either a forward scan
//! of the frames or the trailer alone indexes a pack. Readers use `pread`, never a mapping: a
//! pack truncated by a damaged disk must give an error, not SIGBUS.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::packframes::PackFrames;
use crate::{ObjectId, ObjectKind, StoreError};

/// First bytes of every pack.
pub const PACK_MAGIC: &[u8; 8] = b"SNAPPACK";
/// Last bytes of every pack.
pub const TRAILER_MAGIC: &[u8; 8] = b"SNAPTRLR";
/// Pack format version written in the header.
pub const PACK_VERSION: u32 = 1;
/// Header: magic (8) | version u32 LE (4) | reserved u32 LE (4).
pub const HEADER_LEN: u64 = 16;
/// Frame header: kind (1) | compression (1) | reserved (2) | raw_len (4) | stored_len (4) | id (32).
pub const FRAME_HEADER_LEN: u64 = 44;
/// Index entry: id (32) | frame offset u64 LE (8).
pub const INDEX_ENTRY_LEN: u64 = 40;
/// Footer: count u64 LE (8) | index offset u64 LE (8) | body BLAKE3 (32) | magic (8).
pub const FOOTER_LEN: u64 = 56;
/// Packs are sealed once they pass this size, so no single pack grows huge.
pub const PACK_TARGET_SIZE: u64 = 128 << 20;

/// How a frame's payload is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Compression {
    /// The payload is the object's bytes as they are.
    Raw = 0,
    /// The payload is one zstd frame of the object's bytes.
    Zstd = 1,
    /// The payload is a delta against another object (see [`crate::delta`]).
    Delta = 2,
    /// The payload names a block and an offset in it: the object's bytes are `raw_len` bytes
    /// of the block's from there (see [`crate::slice`]).
    Slice = 3,
}

impl Compression {
    /// True when reading the payload needs another object's bytes (a delta's base, a slice's
    /// block): that object must stay while this one lives, and may lie in another pack.
    pub fn has_base(self) -> bool {
        matches!(self, Compression::Delta | Compression::Slice)
    }
}

/// zstd level used for payloads.
const ZSTD_LEVEL: i32 = 3;
/// Below this size compression never pays for its frame overhead.
const MIN_COMPRESS_LEN: usize = 64;

/// One object's place in a pack, as the catalog records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// The object's id, also written in the frame header.
    pub id: ObjectId,
    /// Object kind from the frame header.
    pub kind: ObjectKind,
    /// How the payload is stored.
    pub compression: Compression,
    /// Byte offset of the frame header from the start of the pack file.
    pub offset: u64,
    /// Length of the object's uncompressed bytes.
    pub raw_len: u32,
    /// Length of the payload as stored, after compression if any.
    pub stored_len: u32,
}

/// An object compressed (or not) and ready to be appended to a pack.
#[derive(Debug)]
pub struct EncodedObject {
    /// BLAKE3 of the kind byte and the uncompressed bytes.
    pub id: ObjectId,
    /// Hashed into the id and written into the frame header.
    pub kind: ObjectKind,
    /// Length of the uncompressed bytes.
    pub raw_len: u32,
    /// Zstd only when it saves more than 1/16 of the bytes.
    pub compression: Compression,
    /// The bytes written after the frame header, as `compression` says.
    pub payload: Vec<u8>,
}

impl EncodedObject {
    /// Hashes and compresses `raw`; stores it raw when zstd saves less than 1/16. Pure and
    /// thread-safe, so callers run it in parallel and append under a lock.
    pub fn encode(kind: ObjectKind, raw: &[u8]) -> Result<EncodedObject, StoreError> {
        Self::encode_with_id(kind, ObjectId::of(kind, raw), raw)
    }

    /// `raw` as a delta against `base_raw` (the raw bytes of `header.base`), when that is
    /// less than half the size of [`EncodedObject::encode_with_id`]'s payload `plain_len`.
    pub fn encode_delta(
        kind: ObjectKind,
        id: ObjectId,
        raw: &[u8],
        header: crate::delta::DeltaHeader,
        (base_raw, plain_len): (&[u8], usize),
    ) -> Option<EncodedObject> {
        let payload = crate::delta::encode(raw, header, base_raw)?;
        (payload.len() < plain_len / 2).then_some(EncodedObject {
            id,
            kind,
            raw_len: u32::try_from(raw.len()).ok()?,
            compression: Compression::Delta,
            payload,
        })
    }

    /// A frame as it was read from a pack (`info` its header, `payload` as stored), to copy
    /// into another pack without decoding it.
    pub fn stored(info: FrameInfo, payload: Vec<u8>) -> EncodedObject {
        EncodedObject {
            id: info.id,
            kind: info.kind,
            raw_len: info.raw_len,
            compression: info.compression,
            payload,
        }
    }

    /// A chunk stored as `raw_len` bytes of `block` from `offset` (see [`crate::slice`]).
    pub fn encode_slice(id: ObjectId, raw_len: u32, block: ObjectId, offset: u32) -> EncodedObject {
        EncodedObject {
            id,
            kind: ObjectKind::Chunk,
            raw_len,
            compression: Compression::Slice,
            payload: crate::slice::SliceRef { block, offset }.encode(),
        }
    }

    /// As [`EncodedObject::encode`], for a caller that already hashed `raw` into `id`.
    pub fn encode_with_id(
        kind: ObjectKind,
        id: ObjectId,
        raw: &[u8],
    ) -> Result<EncodedObject, StoreError> {
        let raw_len = u32::try_from(raw.len()).map_err(|_| StoreError::ObjectTooLarge {
            id,
            len: raw.len() as u64,
        })?;
        let compressed = if raw.len() >= MIN_COMPRESS_LEN {
            zstd_compress(raw)
        } else {
            None
        };
        let (compression, payload) = match compressed {
            Some(c) if c.len() < raw.len() - raw.len() / 16 => (Compression::Zstd, c),
            _ => (Compression::Raw, raw.to_vec()),
        };
        Ok(EncodedObject {
            id,
            kind,
            raw_len,
            compression,
            payload,
        })
    }
}

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
        crate::fsio::sync_dir(packs_dir)?;
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

/// `<64 hex>.pack`.
pub fn pack_file_name(id: &ObjectId) -> String {
    format!("{}.pack", id.to_hex())
}

pub(crate) fn encode_frame_header(f: &FrameInfo) -> [u8; FRAME_HEADER_LEN as usize] {
    let mut h = [0u8; FRAME_HEADER_LEN as usize];
    h[0] = f.kind as u8;
    h[1] = f.compression as u8;
    // h[2..4]: reserved, zero.
    h[4..8].copy_from_slice(&f.raw_len.to_le_bytes());
    h[8..12].copy_from_slice(&f.stored_len.to_le_bytes());
    h[12..44].copy_from_slice(&f.id.0);
    h
}

/// Decodes a frame header found at `offset`.
pub fn decode_frame_header(offset: u64, h: &[u8]) -> Result<FrameInfo, String> {
    if h.len() < FRAME_HEADER_LEN as usize {
        return Err(format!("frame header at {offset} is truncated"));
    }
    let kind = ObjectKind::from_u8(h[0])
        .ok_or_else(|| format!("unknown object kind {} at {offset}", h[0]))?;
    let compression = match h[1] {
        0 => Compression::Raw,
        1 => Compression::Zstd,
        2 => Compression::Delta,
        3 => Compression::Slice,
        c => return Err(format!("unknown compression {c} at {offset}")),
    };
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let id = ObjectId::from_slice(&h[12..44]).ok_or_else(|| format!("bad id at {offset}"))?;
    Ok(FrameInfo {
        id,
        kind,
        compression,
        offset,
        raw_len: u32_at(4),
        stored_len: u32_at(8),
    })
}

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

    /// Reads, decompresses and hash-checks the object whose frame starts at `offset`.
    pub fn read_object(
        &self,
        offset: u64,
        expect: ObjectId,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let (info, payload) = self.read_frame(offset, expect)?;
        let raw = decode_payload(&info, payload, &mut |_| {
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

/// Gives the raw bytes of the object a delta or slice frame is stored against (its header
/// names it), shared because a block is the base of many slices.
pub type BaseBytes<'a> =
    dyn FnMut(&crate::delta::DeltaHeader) -> Result<std::sync::Arc<[u8]>, String> + 'a;

/// Turns a frame's payload back into the object's raw bytes and checks them against its id.
/// A delta frame needs its base's raw bytes, a slice its block's: `base_raw` gives them.
pub fn decode_payload(
    info: &FrameInfo,
    payload: Vec<u8>,
    base_raw: &mut BaseBytes<'_>,
) -> Result<Vec<u8>, String> {
    let raw = match info.compression {
        Compression::Raw => payload,
        Compression::Zstd => zstd_decompress_at_most(&payload, info.raw_len)?,
        Compression::Delta => {
            let header = crate::delta::DeltaHeader::parse(&payload)?;
            crate::delta::decode(&payload, &base_raw(&header)?, info.raw_len)?
        }
        Compression::Slice => {
            let slice = crate::slice::SliceRef::parse(&payload)?;
            slice.cut(&base_raw(&slice.header())?, info.raw_len)?
        }
    };
    if raw.len() != info.raw_len as usize {
        return Err(format!(
            "length {} differs from the frame's {}",
            raw.len(),
            info.raw_len
        ));
    }
    if ObjectId::of(info.kind, &raw) != info.id {
        return Err("content does not match its id".into());
    }
    Ok(raw)
}

thread_local! {
    /// One zstd compression context per thread: creating one (and zeroing its tables) cost
    /// more than compressing a typical small file, a sixth of a first save's CPU.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// One zstd frame of `raw` at [`ZSTD_LEVEL`], with its content size in the frame header;
/// `None` when zstd fails, which the caller treats as incompressible.
fn zstd_compress(raw: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
        }
        slot.as_mut()?.compress(raw).ok()
    })
}

/// Objects up to this size are decompressed in one call into a buffer of their size.
const BULK_DECOMPRESS_MAX: u32 = 64 << 20;

thread_local! {
    /// One zstd decompression context per thread: creating one costs more than decompressing
    /// a small object, and a restore or a flatten decompresses tens of thousands.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Decompresses `payload` into at most `max` bytes (more is an error or comes back as more
/// than `max` bytes, which the caller's length check refuses). `max` is `raw_len` from the
/// file: it is allocated up front only when the frame's own content size agrees with it and
/// it is at most [`BULK_DECOMPRESS_MAX`]; otherwise the buffer grows with what zstd actually
/// produces, so a damaged frame claiming 4 GiB cannot make us allocate 4 GiB.
fn zstd_decompress_at_most(payload: &[u8], max: u32) -> Result<Vec<u8>, String> {
    let declared = zstd::zstd_safe::get_frame_content_size(payload)
        .ok()
        .flatten();
    if declared == Some(u64::from(max)) && max <= BULK_DECOMPRESS_MAX {
        return DECOMPRESSOR.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?);
            }
            let decompressor = slot.as_mut().ok_or("zstd: no decompressor")?;
            decompressor
                .decompress(payload, max as usize)
                .map_err(|e| format!("zstd: {e}"))
        });
    }
    zstd_stream_at_most(payload, max)
}

fn zstd_stream_at_most(payload: &[u8], max: u32) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let zstd_err = |e: std::io::Error| format!("zstd: {e}");
    let decoder = zstd::stream::read::Decoder::with_buffer(payload).map_err(zstd_err)?;
    let mut raw = Vec::with_capacity((max as usize).min(payload.len().saturating_mul(4)));
    decoder
        .take(u64::from(max) + 1)
        .read_to_end(&mut raw)
        .map_err(zstd_err)?;
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pack(dir: &Path, objects: &[(ObjectKind, Vec<u8>)]) -> (ObjectId, Vec<FrameInfo>) {
        let tmp = dir.join("tmp");
        let packs = dir.join("packs");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::create_dir_all(&packs).unwrap();
        let mut w = PackWriter::create(&tmp).unwrap();
        for (kind, raw) in objects {
            w.add(&EncodedObject::encode(*kind, raw).unwrap()).unwrap();
        }
        let (id, frames) = w.finish(&packs).unwrap();
        (id, frames.to_vec().unwrap())
    }

    /// A rotted header is rewritten when the sound one makes the body hash to the pack's
    /// name, and only then: never over other damage, never on a sound pack.
    #[test]
    fn only_a_header_proven_by_the_packs_name_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let objects = [(ObjectKind::Chunk, b"hello".to_vec())];
        let (pack, _) = write_pack(dir.path(), &objects);
        let path = dir.path().join("packs").join(pack_file_name(&pack));
        let sound = std::fs::read(&path).unwrap();
        assert!(!heal_header(&path).unwrap(), "a sound pack");
        let mut rotted = sound.clone();
        rotted[..8].copy_from_slice(&[0; 8]);
        std::fs::write(&path, &rotted).unwrap();
        assert!(PackReader::open(&path).is_err());
        assert!(heal_header(&path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), sound);
        rotted[HEADER_LEN as usize + 20] ^= 1;
        std::fs::write(&path, &rotted).unwrap();
        assert!(!heal_header(&path).unwrap(), "the body rotted too");
        assert_eq!(std::fs::read(&path).unwrap(), rotted, "left as it was");
    }

    #[test]
    fn round_trip_trailer_and_scan_agree() {
        let dir = tempfile::tempdir().unwrap();
        let objects = vec![
            (ObjectKind::Chunk, vec![7u8; 10_000]),
            (ObjectKind::Chunk, b"tiny".to_vec()),
            (ObjectKind::Tree, (0..=255u8).collect()),
        ];
        let (pack_id, frames) = write_pack(dir.path(), &objects);
        let reader =
            PackReader::open(&dir.path().join("packs").join(pack_file_name(&pack_id))).unwrap();
        let (index, body_hash, index_offset) = reader.read_trailer().unwrap();
        assert_eq!(body_hash, pack_id);
        assert_eq!(reader.hash_body(index_offset).unwrap(), pack_id);
        let scanned = reader.scan_frames(index_offset).unwrap();
        assert_eq!(scanned, frames);
        assert_eq!(frames[0].compression, Compression::Zstd);
        assert_eq!(frames[1].compression, Compression::Raw);
        for ((kind, raw), (id, offset)) in objects.iter().zip(index) {
            assert_eq!(
                reader.read_object(offset, id).unwrap(),
                (*kind, raw.clone())
            );
        }
    }

    #[test]
    fn zstd_frame_with_a_wrong_raw_len_is_corrupt() {
        // raw_len comes from the file: too small, too large or absurd, the read is an error, and
        // 4 GiB is never allocated up front (fuzz/regressions/pack_read checks the allocation).
        let dir = tempfile::tempdir().unwrap();
        let (pack_id, frames) = write_pack(dir.path(), &[(ObjectKind::Chunk, vec![5u8; 5000])]);
        assert_eq!(frames[0].compression, Compression::Zstd);
        let path = dir.path().join("packs").join(pack_file_name(&pack_id));
        let good = std::fs::read(&path).unwrap();
        let at = frames[0].offset as usize + 4;
        for raw_len in [4999u32, 5001, u32::MAX] {
            let mut bytes = good.clone();
            bytes[at..at + 4].copy_from_slice(&raw_len.to_le_bytes());
            std::fs::write(&path, &bytes).unwrap();
            let reader = PackReader::open(&path).unwrap();
            let read = reader.read_object(frames[0].offset, frames[0].id);
            assert!(read.is_err(), "raw_len {raw_len} accepted");
        }
    }

    #[test]
    fn flipped_and_truncated_packs_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (pack_id, frames) = write_pack(dir.path(), &[(ObjectKind::Chunk, vec![1u8; 5000])]);
        let path = dir.path().join("packs").join(pack_file_name(&pack_id));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_LEN as usize + FRAME_HEADER_LEN as usize + 3] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let reader = PackReader::open(&path).unwrap();
        assert!(reader.read_object(frames[0].offset, frames[0].id).is_err());
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let reader = PackReader::open(&path).unwrap();
        assert!(reader.read_trailer().is_err());
        assert!(reader.read_object(frames[0].offset, frames[0].id).is_err());
    }
}
