//! `ChunkList::decode` and `SnapshotRecord::decode` must never panic, and whatever they accept
//! must survive a round trip (see tree_decode.rs for why the bytes need not come back exactly).
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use snap_store::{ChunkList, ObjectId, SnapshotRecord, StoreError};

fn round_trip<T: PartialEq + Debug>(
    what: &str,
    data: &[u8],
    decode: fn(ObjectId, &[u8]) -> Result<T, StoreError>,
    encode: fn(&T) -> Vec<u8>,
) {
    let id = ObjectId([0; 32]);
    let Ok(value) = decode(id, data) else {
        return;
    };
    let encoded = encode(&value);
    assert!(
        encoded.len() <= data.len(),
        "{what}: re-encoding is longer than the input"
    );
    if encoded.len() == data.len() {
        assert_eq!(encoded, data, "{what}: same-length re-encoding differs");
    }
    match decode(id, &encoded) {
        Ok(again) => assert_eq!(again, value, "{what}: round trip changed the value"),
        Err(e) => panic!("{what}: re-encoding does not decode: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip("chunk list", data, ChunkList::decode, ChunkList::encode);
    round_trip(
        "snapshot",
        data,
        SnapshotRecord::decode,
        SnapshotRecord::encode,
    );
});
