//! `ChunkList::decode` and `SnapshotRecord::decode` must never panic, and whatever they accept
//! must survive a round trip (see tree_decode.rs for why the bytes need not come back exactly).
#![no_main]

use libfuzzer_sys::fuzz_target;
use snap_store::{ChunkList, ObjectId, SnapshotRecord};

fuzz_target!(|data: &[u8]| {
    let id = ObjectId([0; 32]);
    if let Ok(list) = ChunkList::decode(id, data) {
        let encoded = list.encode();
        assert!(encoded.len() <= data.len(), "chunk list re-encoding is longer than the input");
        if encoded.len() == data.len() {
            assert_eq!(encoded, data, "same-length chunk list re-encoding differs");
        }
        match ChunkList::decode(id, &encoded) {
            Ok(again) => assert_eq!(again, list, "round trip changed the chunk list"),
            Err(e) => panic!("re-encoded chunk list does not decode: {e}"),
        }
    }
    if let Ok(record) = SnapshotRecord::decode(id, data) {
        let encoded = record.encode();
        assert!(encoded.len() <= data.len(), "snapshot re-encoding is longer than the input");
        if encoded.len() == data.len() {
            assert_eq!(encoded, data, "same-length snapshot re-encoding differs");
        }
        match SnapshotRecord::decode(id, &encoded) {
            Ok(again) => assert_eq!(again, record, "round trip changed the snapshot record"),
            Err(e) => panic!("re-encoded snapshot record does not decode: {e}"),
        }
    }
});
