//! Every `PackReader` entry point on an arbitrary file: errors are fine; panics, aborts and
//! allocations sized by lengths claimed in the file (rather than by the file) are not.
//!
//! The input is written to one memfd per process and opened through `/proc/self/fd/N`:
//! `PackReader::open` gets a real path and a real `pread`able file, without creating and
//! removing a temp dir on disk per input (which held the target to ~450 execs/s).
#![no_main]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use snap_store::testing::pack::{DeltaHeader, PackReader, SliceRef, decode_delta};

fn pack_file() -> &'static (File, PathBuf) {
    static FILE: OnceLock<(File, PathBuf)> = OnceLock::new();
    FILE.get_or_init(|| {
        let fd = rustix::fs::memfd_create("snap-fuzz.pack", rustix::fs::MemfdFlags::CLOEXEC)
            .expect("memfd_create");
        let file = File::from(fd);
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        (file, path)
    })
}

fuzz_target!(|data: &[u8]| {
    let (file, path) = pack_file();
    file.set_len(0).expect("truncate memfd");
    file.write_all_at(data, 0).expect("write memfd");
    let Ok(reader) = PackReader::open(path) else {
        return;
    };
    let len = data.len() as u64;

    // With the trailer lost, a reader scans the whole file.
    if let Ok(frames) = reader.scan_frames(len) {
        for f in frames {
            let _ = reader.read_object(f.offset, f.id);
            // A delta or slice frame, decoded against whatever bytes are at hand.
            if let Ok((info, payload)) = reader.read_frame(f.offset, f.id) {
                let _ = DeltaHeader::parse(&payload);
                let _ = decode_delta(&payload, data, info.raw_len);
                if let Ok(slice) = SliceRef::parse(&payload) {
                    let _ = slice.cut(data, info.raw_len);
                }
            }
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
            let _ = reader.read_frame(offset, id);
            let _ = reader.read_object(offset, id);
        }
    }
});
