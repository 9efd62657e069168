//! `Tree::decode` must never panic, and whatever it accepts must survive a round trip.
//!
//! postcard accepts non-minimal varints (`[0x80, 0x00]` decodes as 0), so several byte strings
//! decode to the same tree and re-encoding need not give the input back. What does hold: the
//! re-encoding is never longer than the input, is byte-identical when it is as long (every
//! non-minimal varint is strictly longer than the minimal one), and decodes to the same tree.
//! A version 1 tree (no modes) re-encodes as version 2, with every mode absent: only the round
//! trip is checked for it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snap_store::{ObjectId, TREE_VERSION, Tree};

fuzz_target!(|data: &[u8]| {
    let id = ObjectId([0; 32]);
    if let Ok(tree) = Tree::decode(id, data) {
        let encoded = tree.encode();
        let current = data.first() == Some(&TREE_VERSION);
        assert!(
            !current || encoded.len() <= data.len(),
            "re-encoding is longer than the input"
        );
        if current && encoded.len() == data.len() {
            assert_eq!(
                encoded, data,
                "same-length re-encoding differs from the input"
            );
        }
        match Tree::decode(id, &encoded) {
            Ok(again) => assert_eq!(again, tree, "round trip changed the tree"),
            Err(e) => panic!("re-encoded tree does not decode: {e}"),
        }
    }
});
