//! The catalog's value decoders (`objects` locations, stat cache entries, HEAD and the redo
//! stack, `snapshots` rows) must never panic on bytes a damaged catalog hands them, and what
//! they accept must encode back: exactly, for the fixed-width values; to the same value in no
//! more bytes, for locations and stat entries (varints may come non-minimal; older
//! fixed-width layouts re-encode in the newer, shorter ones).
#![no_main]

use libfuzzer_sys::fuzz_target;
use snap_store::{
    HistoryState, Location, ObjectId, StatEntry, decode_snapshot_row, encode_location,
};

fn location(data: &[u8]) {
    let Some((id, value)) = data.split_first_chunk::<32>() else {
        return;
    };
    // Pack number n stands for the pack id of 32 bytes n (low byte), when n is even; the
    // number asked for is kept to encode the row again (a version 4 row names none: 0).
    let asked = std::cell::Cell::new(0u32);
    let pack_of = |n: u32| {
        asked.set(n);
        (n % 2 == 0).then_some(ObjectId([n as u8; 32]))
    };
    let Some(loc) = Location::decode(ObjectId(*id), value, pack_of) else {
        return;
    };
    assert_eq!(loc.frame.id, ObjectId(*id));
    let number = asked.get();
    let again = encode_location(number, &loc.frame);
    assert!(
        again.as_slice().len() <= value.len(),
        "re-encoded location is longer"
    );
    let pack_again = |n: u32| (n == number).then_some(loc.pack);
    assert_eq!(
        Location::decode(ObjectId(*id), again.as_slice(), pack_again),
        Some(loc),
        "location does not round-trip"
    );
}

fn stat_entry(data: &[u8]) {
    if let Some(entry) = StatEntry::decode(data) {
        let again = entry.encode();
        assert!(
            again.as_slice().len() <= data.len(),
            "re-encoded entry is longer"
        );
        assert_eq!(
            StatEntry::decode(again.as_slice()),
            Some(entry),
            "stat entry does not round-trip"
        );
    }
}

/// The first byte says whether HEAD is present and how long its value is; the rest is redo.
fn history(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let head_len = usize::from(split & 0x7f).min(rest.len());
    let (head, redo) = rest.split_at(head_len);
    let head = (split & 0x80 != 0).then_some(head);
    let Ok(state) = HistoryState::decode(head, Some(redo)) else {
        return;
    };
    assert_eq!(state.head.map(|h| h.0.to_vec()), head.map(<[u8]>::to_vec));
    assert_eq!(state.encode_redo(), redo, "redo stack does not round-trip");
}

fn snapshot_row(data: &[u8]) {
    let Ok((id, record)) = decode_snapshot_row(data) else {
        return;
    };
    let mut again = id.0.to_vec();
    again.extend_from_slice(&record.encode());
    assert!(again.len() <= data.len(), "re-encoded row is longer");
    match decode_snapshot_row(&again) {
        Ok(back) => assert_eq!(back, (id, record), "row round trip changed the value"),
        Err(e) => panic!("re-encoded row does not decode: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    location(data);
    stat_entry(data);
    history(data);
    snapshot_row(data);
});
