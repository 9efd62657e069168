//! Delta frames: an object stored as a zstd frame whose history is the raw bytes of another
//! object, its base (a raw-content dictionary). A save after a small change rewrites the trees
//! on the changed path; each differs from the tree it replaces in an entry or two, and stored
//! against it takes a few dozen bytes instead of kilobytes of incompressible ids. A changed
//! file is stored against the content its path had before, so an edit costs about the
//! compressed size of the edit, not of the file.
//!
//! ```text
//! payload := base id [32] | depth u8 | zstd frame (the base's raw bytes as its history)
//! ```
//! `depth` is 1 for a delta against a plainly stored object and one more than the base's depth
//! otherwise; it is at most [`MAX_DELTA_DEPTH`], so reading an object takes at most that many
//! reads more. The object's id is still BLAKE3 of its kind and raw bytes: how an object is
//! stored never changes what it is.

use crate::ObjectId;

/// Base id (32) | depth (1).
pub const DELTA_HEADER_LEN: usize = 33;
/// Chains of deltas are cut here: a new version of an object whose base is this deep is
/// stored whole. 16 keeps an often edited file to one whole copy per 17 versions (at 8, the
/// whole copies were most of the growth of a file appended to line by line), while a read
/// still takes at most 17 frames.
pub const MAX_DELTA_DEPTH: u8 = 16;
/// Objects over this size are never stored as deltas, and a delta frame claiming more is
/// refused before anything is allocated for it.
pub const MAX_DELTA_RAW: u32 = 64 << 20;
/// zstd level of delta frames; as for plain frames.
const DELTA_ZSTD_LEVEL: i32 = 3;

/// A delta payload's header: its base and its depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaHeader {
    /// The object whose raw bytes the frame was compressed against.
    pub base: ObjectId,
    /// 1 + the base's depth (0 for a base stored whole).
    pub depth: u8,
}

impl DeltaHeader {
    /// Parses the header at the start of a delta payload; refuses a depth of 0 or over the cap.
    pub fn parse(payload: &[u8]) -> Result<DeltaHeader, String> {
        if payload.len() < DELTA_HEADER_LEN {
            return Err("delta payload is truncated".into());
        }
        let base = ObjectId::from_slice(&payload[..32]).ok_or("bad delta base id")?;
        let depth = payload[32];
        if depth == 0 || depth > MAX_DELTA_DEPTH {
            return Err(format!("delta depth {depth} is out of range"));
        }
        Ok(DeltaHeader { base, depth })
    }
}

/// The payload storing `raw` against `base_raw`; `None` when zstd fails or `raw` is over
/// [`MAX_DELTA_RAW`].
pub fn encode(raw: &[u8], header: DeltaHeader, base_raw: &[u8]) -> Option<Vec<u8>> {
    if raw.len() > MAX_DELTA_RAW as usize {
        return None;
    }
    let frame = compress_against(raw, base_raw)?;
    let mut payload = Vec::with_capacity(DELTA_HEADER_LEN + frame.len());
    payload.extend_from_slice(&header.base.0);
    payload.push(header.depth);
    payload.extend_from_slice(&frame);
    Some(payload)
}

/// One zstd frame of `raw` with `base_raw` as history: the thread's context with the base
/// loaded (copied) as a raw-content dictionary, so no context is created per object. A
/// prefix would tie the context's lifetime to the base's.
fn compress_against(raw: &[u8], base_raw: &[u8]) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CCtx, CParameter, ResetDirective};
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
    if base_raw.starts_with(&ZSTD_DICT_MAGIC) {
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(DELTA_ZSTD_LEVEL))
            .ok()?;
        cctx.ref_prefix(base_raw).ok()?;
        cctx.compress2(&mut frame, raw).ok()?;
        return Some(frame);
    }
    DELTA_COMPRESSOR.with(|cell| {
        let mut cctx = cell.borrow_mut();
        cctx.reset(ResetDirective::SessionOnly).ok()?;
        cctx.set_parameter(CParameter::CompressionLevel(DELTA_ZSTD_LEVEL))
            .ok()?;
        cctx.load_dictionary(base_raw).ok()?;
        cctx.compress2(&mut frame, raw).ok()?;
        Some(frame)
    })
}

/// The raw bytes of a delta payload, given its base's raw bytes: at most `max` bytes (a
/// damaged frame cannot make us allocate more).
pub fn decode(payload: &[u8], base_raw: &[u8], max: u32) -> Result<Vec<u8>, String> {
    let frame = payload
        .get(DELTA_HEADER_LEN..)
        .ok_or("delta payload is truncated")?;
    let declared = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten();
    if max > MAX_DELTA_RAW || declared != Some(u64::from(max)) {
        return Err(format!(
            "delta frame declares {declared:?} bytes, the frame header {max}"
        ));
    }
    let mut raw = Vec::with_capacity(max as usize);
    if base_raw.starts_with(&ZSTD_DICT_MAGIC) {
        // Loaded as a dictionary, this base would be parsed as one: reference it as raw bytes.
        let mut dctx = zstd::zstd_safe::DCtx::create();
        dctx.ref_prefix(base_raw).map_err(zstd_error)?;
        dctx.decompress(&mut raw, frame).map_err(zstd_error)?;
        return Ok(raw);
    }
    DELTA_DECOMPRESSOR.with(|cell| {
        let mut dctx = cell.borrow_mut();
        // A failed frame may leave the session mid-way; a dictionary loads only between frames.
        dctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
            .map_err(zstd_error)?;
        dctx.load_dictionary(base_raw).map_err(zstd_error)?;
        dctx.decompress(&mut raw, frame).map_err(zstd_error)?;
        Ok(raw)
    })
}

/// The first bytes of a zstd dictionary: a base starting with them must not be loaded as one.
const ZSTD_DICT_MAGIC: [u8; 4] = 0xEC30_A437_u32.to_le_bytes();

thread_local! {
    /// The compressing side of [`DELTA_DECOMPRESSOR`].
    static DELTA_COMPRESSOR: std::cell::RefCell<zstd::zstd_safe::CCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::CCtx::create());
    /// One decompression context per thread, with the base loaded (copied) as a raw-content
    /// dictionary before each frame. zstd's prefix is that same dictionary, referenced for one
    /// frame, so frames compressed against a prefix decode alike. Creating a context per frame
    /// allocates and frees one each time, and a small save reads a few dozen delta links.
    static DELTA_DECOMPRESSOR: std::cell::RefCell<zstd::zstd_safe::DCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::DCtx::create());
}

fn zstd_error(code: usize) -> String {
    format!("zstd: {}", zstd::zstd_safe::get_error_name(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> DeltaHeader {
        DeltaHeader {
            base: ObjectId([7; 32]),
            depth: 1,
        }
    }

    #[test]
    fn a_small_edit_takes_a_few_bytes_and_round_trips() {
        let base: Vec<u8> = (0..4000u32)
            .flat_map(|i| i.wrapping_mul(2654435761).to_le_bytes())
            .collect();
        let mut new = base.clone();
        new[1000..1032].copy_from_slice(&[9; 32]);
        let payload = encode(&new, header(), &base).unwrap();
        assert!(payload.len() < DELTA_HEADER_LEN + 100, "{}", payload.len());
        assert_eq!(DeltaHeader::parse(&payload).unwrap(), header());
        assert_eq!(decode(&payload, &base, new.len() as u32).unwrap(), new);
    }

    #[test]
    fn a_wrong_base_or_length_is_an_error_or_other_bytes() {
        let noise = |seed| ids(750, seed);
        let base = noise(1);
        let mut new = base.clone();
        new[100] ^= 0xff;
        let payload = encode(&new, header(), &base).unwrap();
        assert!(decode(&payload, &base, 2999).is_err());
        assert!(decode(&payload[..20], &base, 3000).is_err());
        // The frame copies from its base: against another base it cannot give these bytes
        // (and the reader's id check refuses whatever it gives).
        assert_ne!(decode(&payload, &noise(2), 3000).ok(), Some(new));
    }

    /// Pseudo-random bytes: incompressible alone, so only the base can make a delta small.
    fn ids(n: u32, seed: u32) -> Vec<u8> {
        (0..n)
            .flat_map(|i| i.wrapping_add(seed).wrapping_mul(2654435761).to_le_bytes())
            .collect()
    }

    #[test]
    fn frames_written_against_a_prefix_still_decode() {
        // Stores written before deltas used a dictionary hold frames made with refPrefix.
        let base = ids(1000, 3);
        let mut new = base.clone();
        new[2000..2032].copy_from_slice(&[5; 32]);
        let mut cctx = zstd::zstd_safe::CCtx::create();
        cctx.ref_prefix(&base).unwrap();
        let mut frame = Vec::with_capacity(8192);
        cctx.compress2(&mut frame, &new).unwrap();
        let mut payload = [&header().base.0[..], &[1], &frame].concat();
        assert_eq!(decode(&payload, &base, 4000).unwrap(), new);
        // And a context reused after a frame that failed still decodes the next one.
        payload.truncate(payload.len() - 3);
        assert!(decode(&payload, &base, 4000).is_err());
        let good = encode(&new, header(), &base).unwrap();
        assert_eq!(decode(&good, &base, 4000).unwrap(), new);
    }

    #[test]
    fn a_base_shaped_like_a_zstd_dictionary_is_used_as_plain_bytes() {
        let mut base = ZSTD_DICT_MAGIC.to_vec();
        base.extend(ids(500, 9));
        let mut new = base.clone();
        new[1500] ^= 1;
        let payload = encode(&new, header(), &base).unwrap();
        assert!(payload.len() < DELTA_HEADER_LEN + 100, "{}", payload.len());
        assert_eq!(decode(&payload, &base, new.len() as u32).unwrap(), new);
    }

    #[test]
    fn depth_out_of_range_is_refused() {
        let mut payload = vec![0u8; DELTA_HEADER_LEN];
        assert!(DeltaHeader::parse(&payload).is_err());
        payload[32] = MAX_DELTA_DEPTH + 1;
        assert!(DeltaHeader::parse(&payload).is_err());
        payload[32] = MAX_DELTA_DEPTH;
        assert!(DeltaHeader::parse(&payload).is_ok());
    }
}
