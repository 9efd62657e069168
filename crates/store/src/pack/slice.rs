//! Blocks and slices: small chunks compressed together. zstd compresses a small source file
//! alone slower and less well than many such files end to end (docs/PERFORMANCE.md), because
//! the per-frame cost is paid once and each file finds matches in the others. So a writer gathers chunks of at most [`SLICE_MAX`] bytes into
//! a block object (kind `Block`), stores the block as any object, and stores each chunk as a
//! slice frame naming the block and where its bytes start.
//!
//! ```text
//! payload := block id [32] | depth u8 = 1 | offset u32 LE
//! ```
//! The first 33 bytes are a delta header (base = the block, depth 1), so whatever follows a
//! delta to its base (reads, gc keeping bases alive, repair) follows a slice to its block. A
//! chunk's id is still BLAKE3 of its kind and bytes: how it is stored never changes what it is.

use crate::ObjectId;
use crate::pack::delta::{DELTA_HEADER_LEN, DeltaHeader};

/// Chunks up to this size are gathered into blocks.
pub const SLICE_MAX: usize = 16 << 10;
/// A block is stored once it holds this many bytes (so at most this plus [`SLICE_MAX`]).
pub const BLOCK_TARGET: usize = 64 << 10;
/// Delta header (33) | offset (4).
pub const SLICE_PAYLOAD_LEN: usize = DELTA_HEADER_LEN + 4;

/// Where a slice's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceRef {
    /// The block holding them.
    pub block: ObjectId,
    /// Their first byte's offset in the block's raw bytes.
    pub offset: u32,
}

impl SliceRef {
    /// The payload of a slice frame.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SLICE_PAYLOAD_LEN);
        out.extend_from_slice(&self.block.0);
        out.push(1);
        out.extend_from_slice(&self.offset.to_le_bytes());
        out
    }

    /// Parses a slice payload; anything but exactly the layout above is refused.
    pub fn parse(payload: &[u8]) -> Result<SliceRef, String> {
        let header = DeltaHeader::parse(payload)?;
        let offset: [u8; 4] = (payload.get(DELTA_HEADER_LEN..))
            .and_then(|rest| rest.try_into().ok())
            .ok_or("slice payload is not 37 bytes")?;
        if header.depth != 1 {
            return Err(format!("slice depth {} is not 1", header.depth));
        }
        Ok(SliceRef {
            block: header.base,
            offset: u32::from_le_bytes(offset),
        })
    }

    /// The delta header a slice payload starts with: its block, at depth 1.
    pub fn header(&self) -> DeltaHeader {
        DeltaHeader {
            base: self.block,
            depth: 1,
        }
    }

    /// The `len` bytes of `block_raw` this slice names.
    pub fn cut(&self, block_raw: &[u8], len: u32) -> Result<Vec<u8>, String> {
        let start = self.offset as usize;
        (start.checked_add(len as usize))
            .and_then(|end| block_raw.get(start..end))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                format!(
                    "slice {start}+{len} is outside its block of {}",
                    block_raw.len()
                )
            })
    }
}

/// Chunks a writer gathered and has not stored yet.
#[derive(Debug, Default)]
pub struct PendingBlock {
    /// The chunks' bytes, end to end.
    pub raw: Vec<u8>,
    /// Each chunk's id, offset in `raw` and length.
    pub members: Vec<(ObjectId, u32, u32)>,
}

impl PendingBlock {
    /// Adds a chunk of at most [`SLICE_MAX`] bytes; true once the block should be stored.
    pub fn push(&mut self, id: ObjectId, raw: &[u8]) -> bool {
        // Both fit in u32: a block stays under BLOCK_TARGET + SLICE_MAX bytes.
        self.members
            .push((id, self.raw.len() as u32, raw.len() as u32));
        self.raw.extend_from_slice(raw);
        self.raw.len() >= BLOCK_TARGET
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_round_trips_and_stays_inside_its_block() {
        let s = SliceRef {
            block: ObjectId([4; 32]),
            offset: 10,
        };
        let payload = s.encode();
        assert_eq!(payload.len(), SLICE_PAYLOAD_LEN);
        assert_eq!(SliceRef::parse(&payload), Ok(s));
        assert_eq!(DeltaHeader::parse(&payload), Ok(s.header()));
        let block: Vec<u8> = (0..20).collect();
        assert_eq!(s.cut(&block, 5).unwrap(), vec![10, 11, 12, 13, 14]);
        assert_eq!(s.cut(&block, 10).unwrap().len(), 10);
        assert!(s.cut(&block, 11).is_err());
        let far = SliceRef {
            offset: u32::MAX,
            ..s
        };
        assert!(far.cut(&block, u32::MAX).is_err());
    }

    #[test]
    fn a_malformed_slice_payload_is_refused() {
        let mut payload = SliceRef {
            block: ObjectId([4; 32]),
            offset: 0,
        }
        .encode();
        assert!(SliceRef::parse(&payload[..36]).is_err());
        payload.push(0);
        assert!(SliceRef::parse(&payload).is_err());
        payload.pop();
        payload[32] = 2;
        assert!(SliceRef::parse(&payload).is_err());
    }

    #[test]
    fn a_block_is_due_once_it_reaches_the_target() {
        let mut block = PendingBlock::default();
        let chunk = vec![7u8; SLICE_MAX];
        let due: Vec<bool> = (0..4)
            .map(|i| block.push(ObjectId([i; 32]), &chunk))
            .collect();
        assert_eq!(due, vec![false, false, false, true]);
        assert_eq!(
            block.members[2],
            (ObjectId([2; 32]), 2 * SLICE_MAX as u32, SLICE_MAX as u32)
        );
    }
}
