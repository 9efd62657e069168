//! Tests of the pack layer: write, read, heal, reject.

use std::path::Path;

use super::*;
use crate::{ObjectId, ObjectKind};

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
