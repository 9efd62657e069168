//! Delta frames: an object stored as a zstd frame compressed against the raw bytes of another
//! object, its base (zstd's "prefix" mode). A save after a small change rewrites the trees on
//! the changed path; each differs from the tree it replaces in an entry or two, and stored
//! against it takes a few dozen bytes instead of kilobytes of incompressible ids.
//!
//! ```text
//! payload := base id [32] | depth u8 | zstd frame (compressed with the base's raw bytes as prefix)
//! ```
//! `depth` is 1 for a delta against a plainly stored object and one more than the base's depth
//! otherwise; it is at most [`MAX_DELTA_DEPTH`], so reading an object takes at most that many
//! reads more. The object's id is still BLAKE3 of its kind and raw bytes: how an object is
//! stored never changes what it is.

use crate::ObjectId;

/// Base id (32) | depth (1).
pub const DELTA_HEADER_LEN: usize = 33;
/// Chains of deltas are cut here: a new version of an object whose base is this deep is
/// stored whole.
pub const MAX_DELTA_DEPTH: u8 = 8;
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
    let mut cctx = zstd::zstd_safe::CCtx::create();
    cctx.set_parameter(zstd::zstd_safe::CParameter::CompressionLevel(
        DELTA_ZSTD_LEVEL,
    ))
    .ok()?;
    cctx.ref_prefix(base_raw).ok()?;
    let mut payload =
        Vec::with_capacity(DELTA_HEADER_LEN + zstd::zstd_safe::compress_bound(raw.len()));
    payload.extend_from_slice(&header.base.0);
    payload.push(header.depth);
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
    cctx.compress2(&mut frame, raw).ok()?;
    payload.extend_from_slice(&frame);
    Some(payload)
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
    let mut dctx = zstd::zstd_safe::DCtx::create();
    dctx.ref_prefix(base_raw).map_err(zstd_error)?;
    let mut raw = Vec::with_capacity(max as usize);
    dctx.decompress(&mut raw, frame).map_err(zstd_error)?;
    Ok(raw)
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
        let noise = |seed: u32| -> Vec<u8> {
            (0..750u32)
                .flat_map(|i| {
                    (i.wrapping_add(seed))
                        .wrapping_mul(2654435761)
                        .to_le_bytes()
                })
                .collect()
        };
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
