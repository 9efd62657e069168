//! Every `PackReader` entry point on an arbitrary file: errors are fine, panics, aborts and
//! allocations sized by lengths in the file rather than by the file are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snap_store::pack::PackReader;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("fuzz.pack");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(reader) = PackReader::open(&path) else { return };
    let len = data.len() as u64;

    // With the trailer lost, a reader scans the whole file.
    if let Ok(frames) = reader.scan_frames(len) {
        for f in frames {
            let _ = reader.read_object(f.offset, f.id);
        }
    }
    let _ = reader.hash_body(len);

    if let Ok((index, _body_hash, index_offset)) = reader.read_trailer() {
        assert!(index_offset <= len, "index offset past the end");
        if let Ok(frames) = reader.scan_frames(index_offset) {
            // Frames found by the scan can be read at their own offsets too.
            for f in frames {
                let _ = reader.read_object(f.offset, f.id);
            }
        }
        let _ = reader.hash_body(index_offset);
        for (id, offset) in index {
            let _ = reader.read_object(offset, id);
        }
    }
});
