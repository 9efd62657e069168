//! Searching a whole store for bytes, as the expunge suites do: every file under the store
//! directory, pack files frame by frame with each frame's payload decompressed (zstd frames,
//! and the zstd body of delta frames), so a compressed copy is found too.

use std::path::{Path, PathBuf};

use super::frame::decode_frame_header;
use super::layout::{FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN};

/// Every file under `store_dir` that holds `needle`, as stored or decompressed; for a pack,
/// `path#offset` of each frame that does.
pub fn store_holds(store_dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for path in files_under(store_dir) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if contains(&bytes, needle) {
            found.push(path.display().to_string());
        }
        if path.extension().is_some_and(|e| e == "pack") {
            for offset in frames_holding(&bytes, needle) {
                found.push(format!("{}#{offset}", path.display()));
            }
        }
    }
    found
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => out.push(entry.path()),
                _ => {}
            }
        }
    }
    out
}

/// Offsets of the frames of pack `bytes` whose decompressed payload holds `needle`.
fn frames_holding(bytes: &[u8], needle: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let Some(end) = index_offset(bytes) else {
        return out;
    };
    let mut at = HEADER_LEN;
    while at + FRAME_HEADER_LEN <= end {
        let Ok(frame) = decode_frame_header(at, &bytes[at as usize..]) else {
            break;
        };
        let start = (at + FRAME_HEADER_LEN) as usize;
        let Some(payload) = bytes.get(start..start + frame.stored_len as usize) else {
            break;
        };
        // A delta's body follows its 33-byte header; try both ways, whatever the kind says.
        let decoded = [payload, payload.get(33..).unwrap_or_default()]
            .into_iter()
            .filter_map(|p| zstd::decode_all(p).ok());
        if decoded.into_iter().any(|d| contains(&d, needle)) {
            out.push(at);
        }
        at += FRAME_HEADER_LEN + u64::from(frame.stored_len);
    }
    out
}

/// Where the pack's index begins, from its footer.
fn index_offset(bytes: &[u8]) -> Option<u64> {
    let footer = bytes.len().checked_sub(FOOTER_LEN as usize)?;
    let offset = bytes.get(footer + 8..footer + 16)?;
    Some(u64::from_le_bytes(offset.try_into().ok()?))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}
