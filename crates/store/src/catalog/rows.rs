//! The byte layouts of catalog rows: object locations, HEAD and the redo stack, snapshot
//! rows, and the check that seals every cache row (FORMAT.md 4.2, 4.5 and 6).

use crate::cache::stat::{take_varint, varint};
use crate::pack::{Compression, FrameInfo};
use crate::{ObjectId, ObjectKind, SnapshotRecord, StoreError};

/// Length of a fixed-width `objects` value (catalog version 5 on), and one more than the
/// longest compact value (version 6 on); the length alone tells the layouts apart:
/// ```text
/// compact, 5 to 21 bytes: pack number varint | offset varint | kind u8 << 4 | compression u8
///                         | raw_len varint | stored_len varint
/// ```
/// (LEB128 varints). A small file's slice takes about 8 bytes where it took 22. A frame whose compact value would not be shorter (a pack
/// number or offset too large for it) is written fixed-width:
/// ```text
/// pack number u32 | offset u64 | kind u8 | compression u8 | raw_len u32 | stored_len u32
/// 0                4            12        13               14           18             22
/// ```
/// all little-endian. The pack is named by its number in `pack_ids`, 4 bytes where its id
/// took 32.
const LOCATION_LEN: usize = 22;

/// The longest compact value before the fixed-width fallback: varints of a u32 (5 bytes), a
/// u64 (10), two u32s, and the kind byte.
const COMPACT_MAX: usize = 5 + 10 + 1 + 5 + 5;

/// Length of an `objects` value written before version 5: the pack's id [32] where the
/// number now stands, then the same 18 bytes of frame. Such rows are read as they are.
const LOCATION_LEN_V4: usize = 50;

/// The 18 bytes both layouts end with: offset u64 | kind u8 | compression u8 | raw_len u32 |
/// stored_len u32, little-endian.
const FRAME_PART_LEN: usize = 18;

/// Where one object lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The pack holding the object, named by its body hash.
    pub pack: ObjectId,
    /// The object's frame in that pack.
    pub frame: FrameInfo,
}

/// An encoded `objects` value: compact, or fixed-width when that is not longer.
#[derive(Clone, Copy, Debug)]
pub struct EncodedLocation {
    bytes: [u8; LOCATION_LEN],
    len: u8,
}

impl EncodedLocation {
    /// The value's bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The `objects` value of `frame`, in the pack of catalog number `pack_number`.
pub fn encode_location(pack_number: u32, frame: &FrameInfo) -> EncodedLocation {
    // Into a buffer on the stack: a first save's commit encodes a row per object.
    let mut compact = [0u8; COMPACT_MAX];
    let mut len = 0;
    let mut put = |b| {
        compact[len] = b;
        len += 1;
    };
    varint(u64::from(pack_number), &mut put);
    varint(frame.offset, &mut put);
    put(((frame.kind as u8) << 4) | frame.compression as u8);
    varint(u64::from(frame.raw_len), &mut put);
    varint(u64::from(frame.stored_len), &mut put);
    let mut bytes = [0u8; LOCATION_LEN];
    if len < LOCATION_LEN {
        bytes[..len].copy_from_slice(&compact[..len]);
        return EncodedLocation {
            bytes,
            len: len as u8,
        };
    }
    bytes[0..4].copy_from_slice(&pack_number.to_le_bytes());
    bytes[4..].copy_from_slice(&encode_frame_part(frame));
    EncodedLocation {
        bytes,
        len: LOCATION_LEN as u8,
    }
}

impl Location {
    /// Decodes an `objects` value for object `id`, of either layout; `pack_of` names the pack
    /// a number stands for. `None` when malformed or the number names no pack.
    pub fn decode(
        id: ObjectId,
        v: &[u8],
        pack_of: impl Fn(u32) -> Option<ObjectId>,
    ) -> Option<Location> {
        let (pack, frame) = match v.len() {
            len if len < LOCATION_LEN => return decode_compact(id, v, pack_of),
            LOCATION_LEN => {
                let (number, frame) = v.split_at(4);
                (pack_of(u32::from_le_bytes(number.try_into().ok()?))?, frame)
            }
            LOCATION_LEN_V4 => {
                let (pack, frame) = v.split_at(32);
                (ObjectId::from_slice(pack)?, frame)
            }
            _ => return None,
        };
        Some(Location {
            pack,
            frame: decode_frame_part(id, frame)?,
        })
    }
}

/// A compact `objects` value (see [`LOCATION_LEN`]); every byte must be used.
fn decode_compact(
    id: ObjectId,
    v: &[u8],
    pack_of: impl Fn(u32) -> Option<ObjectId>,
) -> Option<Location> {
    let u32_of = |n: u64| u32::try_from(n).ok();
    let (number, v) = take_varint(v)?;
    let (offset, v) = take_varint(v)?;
    let (&kinds, v) = v.split_first()?;
    let (raw_len, v) = take_varint(v)?;
    let (stored_len, v) = take_varint(v)?;
    if !v.is_empty() {
        return None;
    }
    Some(Location {
        pack: pack_of(u32_of(number)?)?,
        frame: FrameInfo {
            id,
            kind: ObjectKind::from_u8(kinds >> 4)?,
            compression: compression_of(kinds & 0x0f)?,
            offset,
            raw_len: u32_of(raw_len)?,
            stored_len: u32_of(stored_len)?,
        },
    })
}

fn compression_of(b: u8) -> Option<Compression> {
    Some(match b {
        0 => Compression::Raw,
        1 => Compression::Zstd,
        2 => Compression::Delta,
        3 => Compression::Slice,
        _ => return None,
    })
}

pub(super) fn encode_frame_part(frame: &FrameInfo) -> [u8; FRAME_PART_LEN] {
    let mut v = [0u8; FRAME_PART_LEN];
    v[0..8].copy_from_slice(&frame.offset.to_le_bytes());
    v[8] = frame.kind as u8;
    v[9] = frame.compression as u8;
    v[10..14].copy_from_slice(&frame.raw_len.to_le_bytes());
    v[14..18].copy_from_slice(&frame.stored_len.to_le_bytes());
    v
}

fn decode_frame_part(id: ObjectId, v: &[u8]) -> Option<FrameInfo> {
    if v.len() != FRAME_PART_LEN {
        return None;
    }
    Some(FrameInfo {
        id,
        kind: ObjectKind::from_u8(v[8])?,
        compression: compression_of(v[9])?,
        offset: u64::from_le_bytes(v[0..8].try_into().ok()?),
        raw_len: u32::from_le_bytes(v[10..14].try_into().ok()?),
        stored_len: u32::from_le_bytes(v[14..18].try_into().ok()?),
    })
}

/// HEAD and the redo stack (top last).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryState {
    /// The snapshot the working tree was last saved as or moved to; `None` when there is none yet.
    pub head: Option<ObjectId>,
    /// Snapshots undo stepped back over; the next redo target is last.
    pub redo: Vec<ObjectId>,
}

impl HistoryState {
    /// Decodes `meta["head"]` (one id) and `meta["redo"]` (ids, bottom first), either absent.
    pub fn decode(head: Option<&[u8]>, redo: Option<&[u8]>) -> Result<HistoryState, String> {
        let head = match head {
            Some(v) => Some(ObjectId::from_slice(v).ok_or("HEAD record is not 32 bytes")?),
            None => None,
        };
        let redo = redo.unwrap_or_default();
        if !redo.len().is_multiple_of(32) {
            return Err("redo record is not a whole number of ids".into());
        }
        let redo = redo
            .chunks_exact(32)
            .filter_map(ObjectId::from_slice)
            .collect();
        Ok(HistoryState { head, redo })
    }

    /// The `meta["redo"]` value: the ids, bottom of the stack first.
    pub fn encode_redo(&self) -> Vec<u8> {
        self.redo.iter().flat_map(|id| id.0).collect()
    }
}

/// Bytes of the check that ends every cache row and memo (FORMAT.md 6): XXH3-64 of the value
/// seeded with XXH3-64 of the key, little-endian. redb checks its commits, not each page's
/// bytes at rest, so without it one flipped bit in a cached id would be trusted and recorded.
/// It guards against damage, not an adversary (whoever can write the catalog can write
/// anything), so a fast checksum does: an undo at a million files checks a million rows, and
/// on a stat row (30-byte path, 77-byte value) BLAKE3 took 203 ns against XXH3's 36 ns
/// (2026-12-01, this project's 2-core machine).
pub const CACHE_CHECK_LEN: usize = 8;

fn cache_check(key: &[u8], value: &[u8]) -> [u8; CACHE_CHECK_LEN] {
    use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};
    xxh3_64_with_seed(value, xxh3_64(key)).to_le_bytes()
}

/// A table's row count, as a capacity to reserve: only a hint, since a damaged catalog can
/// claim any count, and reserving it would abort the process (an allocation failure is no
/// panic that `main` could turn into one error line).
pub(super) fn capacity_hint(rows: u64) -> usize {
    rows.min(1 << 20) as usize
}

/// `value ‖ check`: a cache row as stored.
pub(super) fn seal(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + CACHE_CHECK_LEN);
    out.extend_from_slice(value);
    out.extend_from_slice(&cache_check(key, value));
    out
}

/// The value of a stored cache row whose check holds; `None` for a damaged row, or one
/// written before rows were checked (either is ignored, as if absent).
pub(super) fn unseal<'a>(key: &[u8], stored: &'a [u8]) -> Option<&'a [u8]> {
    let (value, check) = stored.split_at_checked(stored.len().checked_sub(CACHE_CHECK_LEN)?)?;
    (cache_check(key, value) == check).then_some(value)
}

/// Decodes a `snapshots` value: the snapshot id, then its encoded record.
pub fn decode_snapshot_row(row: &[u8]) -> Result<(ObjectId, SnapshotRecord), StoreError> {
    let id = ObjectId::from_slice(row.get(..32).unwrap_or_default()).ok_or_else(|| {
        StoreError::CorruptObject {
            id: ObjectId([0; 32]),
            why: "short snapshot row".into(),
        }
    })?;
    Ok((id, SnapshotRecord::decode(id, &row[32..])?))
}

/// `n × 32` bytes of ids; a value of another length is read as far as it goes.
pub(super) fn decode_ids(bytes: &[u8]) -> Vec<ObjectId> {
    bytes
        .chunks_exact(32)
        .filter_map(ObjectId::from_slice)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A frame of object `[id; 32]` at `offset`, `(raw_len, stored_len)` long.
    fn frame_of(
        id: u8,
        kind: ObjectKind,
        compression: Compression,
        offset: u64,
        (raw_len, stored_len): (u32, u32),
    ) -> FrameInfo {
        FrameInfo {
            id: ObjectId([id; 32]),
            kind,
            compression,
            offset,
            raw_len,
            stored_len,
        }
    }

    proptest! {
        /// Whatever bytes decode encode again in no more bytes, to the same location.
        #[test]
        fn any_value_that_decodes_encodes_back_no_longer(
            v in prop::collection::vec(any::<u8>(), 0..60),
            // Bytes that often make a compact row, with non-minimal varints among them.
            small in prop::collection::vec(
                prop::sample::select(vec![0u8, 3, 0x11, 0x35, 0x80, 0x81]),
                5..12,
            ),
        ) {
            for v in [v, small] {
                let asked = std::cell::Cell::new(0u32);
                let pack_of = |n: u32| {
                    asked.set(n);
                    Some(ObjectId([n as u8; 32]))
                };
                let Some(loc) = Location::decode(ObjectId([1; 32]), &v, pack_of) else {
                    continue;
                };
                let again = encode_location(asked.get(), &loc.frame);
                prop_assert!(again.as_slice().len() <= v.len());
                let pack_again = |n: u32| (n == asked.get()).then_some(loc.pack);
                prop_assert_eq!(
                    Location::decode(ObjectId([1; 32]), again.as_slice(), pack_again),
                    Some(loc)
                );
            }
        }
    }

    #[test]
    fn locations_round_trip() {
        let frame = frame_of(3, ObjectKind::Tree, Compression::Delta, 1 << 40, (77, 55));
        let loc = Location {
            pack: ObjectId([9; 32]),
            frame,
        };
        let numbered = |n: u32| (n == 7).then_some(ObjectId([9; 32]));
        let row = encode_location(7, &frame);
        let row = row.as_slice();
        // pack 7 | offset 2^40 in six varint bytes | kind and compression | 77 | 55
        assert_eq!(row, [7, 128, 128, 128, 128, 128, 32, 0x32, 77, 55]);
        assert_eq!(Location::decode(frame.id, row, numbered), Some(loc));
        for cut in 0..row.len() {
            assert_eq!(Location::decode(frame.id, &row[..cut], numbered), None);
        }
        assert_eq!(
            Location::decode(frame.id, encode_location(8, &frame).as_slice(), numbered),
            None,
            "a number that names no pack"
        );
    }

    #[test]
    fn a_location_too_wide_for_the_compact_layout_is_written_fixed_width() {
        let frame = frame_of(
            3,
            ObjectKind::Block,
            Compression::Zstd,
            u64::MAX - 1,
            (u32::MAX, u32::MAX - 2),
        );
        let row = encode_location(u32::MAX, &frame);
        assert_eq!(row.as_slice().len(), LOCATION_LEN);
        let pack_of = |n: u32| (n == u32::MAX).then_some(ObjectId([1; 32]));
        let back = Location::decode(frame.id, row.as_slice(), pack_of);
        assert_eq!(back.map(|l| l.frame), Some(frame));
    }

    #[test]
    fn a_version_5_location_still_decodes() {
        let frame = frame_of(4, ObjectKind::Tree, Compression::Delta, 300, (1000, 90));
        let row = [2u32.to_le_bytes().as_slice(), &encode_frame_part(&frame)].concat();
        assert_eq!(row.len(), LOCATION_LEN);
        let pack_of = |n: u32| (n == 2).then_some(ObjectId([6; 32]));
        let want = Location {
            pack: ObjectId([6; 32]),
            frame,
        };
        assert_eq!(Location::decode(frame.id, &row, pack_of), Some(want));
    }

    #[test]
    fn a_compact_location_must_use_every_byte_and_fit_its_fields() {
        let pack_of = |_| Some(ObjectId([6; 32]));
        let id = ObjectId([1; 32]);
        // pack 1 | offset 16 | Chunk, Zstd | raw_len 10 | stored_len 8
        let good = [1u8, 16, 0x11, 10, 8];
        assert!(Location::decode(id, &good, pack_of).is_some());
        assert!(Location::decode(id, &[1, 16, 0x11, 10, 8, 0], pack_of).is_none());
        assert!(
            Location::decode(id, &[1, 16, 0x14, 10, 8], pack_of).is_none(),
            "compression 4"
        );
        assert!(
            Location::decode(id, &[1, 16, 0x71, 10, 8], pack_of).is_none(),
            "kind 7"
        );
        let raw_len_2_pow_32 = [1u8, 16, 0x11, 0x80, 0x80, 0x80, 0x80, 0x10, 8];
        assert!(Location::decode(id, &raw_len_2_pow_32, pack_of).is_none());
    }

    #[test]
    fn a_version_4_location_still_decodes() {
        let frame = frame_of(4, ObjectKind::Chunk, Compression::Slice, 16, (9, 37));
        // pack id [32] | offset u64 | kind | compression | raw_len u32 | stored_len u32
        let mut row = vec![5u8; 32];
        row.extend_from_slice(&16u64.to_le_bytes());
        row.extend_from_slice(&[ObjectKind::Chunk as u8, Compression::Slice as u8]);
        row.extend_from_slice(&9u32.to_le_bytes());
        row.extend_from_slice(&37u32.to_le_bytes());
        let want = Location {
            pack: ObjectId([5; 32]),
            frame,
        };
        assert_eq!(Location::decode(frame.id, &row, |_| None), Some(want));
    }
}
