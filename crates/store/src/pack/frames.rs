//! `PackFrames`: the frames a pack writer appended, kept for the index it writes when it
//! seals the pack and for the commit that locates them. Spilled past a few MiB to an unnamed
//! file (see [`crate::fs::spill`]): a pack of a million small files has a million frames, held
//! from the first file stored to the commit (docs/PERFORMANCE.md, "Figures behind the code").
//!
//! ```text
//! record  frame header [44] (pack.rs: kind, compression, lengths, id) | offset u64 LE
//! ```

use std::path::Path;

use super::frame::{FrameInfo, decode_frame_header, encode_frame_header};
use super::layout::FRAME_HEADER_LEN;
use crate::StoreError;
use crate::fs::spill::{SPILL_AT, SpillBuf};

/// Bytes of one frame's record.
const RECORD_LEN: usize = FRAME_HEADER_LEN as usize + 8;

/// The frames of one pack, in the order they were appended.
#[derive(Debug, Default)]
pub struct PackFrames {
    records: SpillBuf,
    count: usize,
}

impl PackFrames {
    /// Frames that go to an unnamed file made in `dir` past a few MiB in memory.
    pub(crate) fn spilling_into(dir: &Path) -> PackFrames {
        PackFrames {
            records: SpillBuf::spilling_at(dir, SPILL_AT),
            count: 0,
        }
    }

    /// Adds a frame after the others.
    pub(crate) fn push(&mut self, frame: &FrameInfo) {
        let offset = frame.offset.to_le_bytes();
        self.records.push(&[&encode_frame_header(frame), &offset]);
        self.count += 1;
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there is no frame.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Calls `f` with each frame, in the order they were pushed.
    pub(crate) fn try_for_each(
        &self,
        mut f: impl FnMut(FrameInfo) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.records.try_for_each_piece(|piece| {
            let whole = piece.len() / RECORD_LEN * RECORD_LEN;
            for record in piece[..whole].chunks_exact(RECORD_LEN) {
                f(decode(record)?)?;
            }
            Ok(whole)
        })
    }

    /// Every frame, in the order they were pushed.
    pub fn to_vec(&self) -> Result<Vec<FrameInfo>, StoreError> {
        let mut frames = Vec::with_capacity(self.count);
        self.try_for_each(|f| {
            frames.push(f);
            Ok(())
        })?;
        Ok(frames)
    }
}

fn decode(record: &[u8]) -> Result<FrameInfo, StoreError> {
    let (header, offset) = record.split_at(FRAME_HEADER_LEN as usize);
    let offset = offset.try_into().map(u64::from_le_bytes);
    let bad = |msg: String| {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
        StoreError::io(Path::new("(spilled frames)"), e)
    };
    let offset = offset.map_err(|_| bad("a frame record without its offset".into()))?;
    decode_frame_header(offset, header).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Compression;
    use crate::{ObjectId, ObjectKind};

    /// Frames come back as pushed, spilled or not.
    #[test]
    fn frames_come_back_as_pushed() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let want: Vec<FrameInfo> = (0..300u32)
            .map(|n| FrameInfo {
                id: ObjectId([n as u8; 32]),
                kind: ObjectKind::from_u8(1 + (n % 5) as u8).expect("a kind"),
                compression: [Compression::Raw, Compression::Slice][n as usize % 2],
                offset: u64::from(n) << 33,
                raw_len: n * 3,
                stored_len: u32::MAX - n,
            })
            .collect();
        for at in [1, 100, 1 << 20] {
            let mut frames = PackFrames {
                records: SpillBuf::spilling_at(dir.path(), at),
                count: 0,
            };
            for f in &want {
                frames.push(f);
            }
            assert_eq!(frames.len(), 300);
            assert_eq!(frames.to_vec().expect("frames"), want, "spilling at {at}");
        }
    }
}
