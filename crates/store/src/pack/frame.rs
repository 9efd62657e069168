//! One frame: how an object's bytes are encoded into a pack (raw, zstd, a delta, a slice),
//! the 44-byte frame header both the writer and the frame list use, and decoding back.

use super::layout::FRAME_HEADER_LEN;
use crate::StoreError;
use crate::model::{ObjectId, ObjectKind};

/// How a frame's payload is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Compression {
    /// The payload is the object's bytes as they are.
    Raw = 0,
    /// The payload is one zstd frame of the object's bytes.
    Zstd = 1,
    /// The payload is a delta against another object (see [`crate::pack::delta`]).
    Delta = 2,
    /// The payload names a block and an offset in it: the object's bytes are `raw_len` bytes
    /// of the block's from there (see [`crate::pack::slice`]).
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
        header: crate::pack::delta::DeltaHeader,
        (base_raw, plain_len): (&[u8], usize),
    ) -> Option<EncodedObject> {
        let payload = crate::pack::delta::encode(raw, header, base_raw)?;
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

    /// A chunk stored as `raw_len` bytes of `block` from `offset` (see [`crate::pack::slice`]).
    pub fn encode_slice(id: ObjectId, raw_len: u32, block: ObjectId, offset: u32) -> EncodedObject {
        EncodedObject {
            id,
            kind: ObjectKind::Chunk,
            raw_len,
            compression: Compression::Slice,
            payload: crate::pack::slice::SliceRef { block, offset }.encode(),
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

/// Gives the raw bytes of the object a delta or slice frame is stored against (its header
/// names it), shared because a block is the base of many slices.
pub type BaseBytes<'a> =
    dyn FnMut(&crate::pack::delta::DeltaHeader) -> Result<std::sync::Arc<[u8]>, String> + 'a;

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
            let header = crate::pack::delta::DeltaHeader::parse(&payload)?;
            crate::pack::delta::decode(&payload, &base_raw(&header)?, info.raw_len)?
        }
        Compression::Slice => {
            let slice = crate::pack::slice::SliceRef::parse(&payload)?;
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
