//! The files the last save found on disk and could not keep: over `max_file_size`, or
//! named by `exclude_paths`. Kept in `meta["untracked"]` (docs/FORMAT.md 6.10) so that the
//! next save can say when one of them is gone: an undo could never bring it back.
//!
//! Layout, little-endian: `count: u32`, then per file `path_len: u32 | path | size: u64 |
//! why: u8` (`0` over the size limit, `1` excluded), in path order.

/// Why a file on disk is in no snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UntrackedWhy {
    /// Larger than `max_file_size`.
    TooLarge,
    /// Named by `exclude_paths`.
    Excluded,
}

/// One file on disk that no snapshot holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UntrackedFile {
    /// Workspace-relative path.
    pub path: Vec<u8>,
    /// Its size when last seen.
    pub size: u64,
    /// Why snap does not keep it.
    pub why: UntrackedWhy,
}

/// Encodes `files` (in path order) as `meta["untracked"]` holds them.
pub fn encode_untracked(files: &[UntrackedFile]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + files.len() * 48);
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for f in files {
        out.extend_from_slice(&(f.path.len() as u32).to_le_bytes());
        out.extend_from_slice(&f.path);
        out.extend_from_slice(&f.size.to_le_bytes());
        out.push(match f.why {
            UntrackedWhy::TooLarge => 0,
            UntrackedWhy::Excluded => 1,
        });
    }
    out
}

/// Decodes `meta["untracked"]`; `None` when malformed.
pub fn decode_untracked(bytes: &[u8]) -> Option<Vec<UntrackedFile>> {
    let (count, mut rest) = take_u32(bytes)?;
    let mut files = Vec::with_capacity((count as usize).min(rest.len() / 13));
    for _ in 0..count {
        let (len, after) = take_u32(rest)?;
        let (path, after) = after.split_at_checked(len as usize)?;
        let (size, after) = after.split_at_checked(8)?;
        let (&why, after) = after.split_first()?;
        files.push(UntrackedFile {
            path: path.to_vec(),
            size: u64::from_le_bytes(size.try_into().ok()?),
            why: match why {
                0 => UntrackedWhy::TooLarge,
                1 => UntrackedWhy::Excluded,
                _ => return None,
            },
        });
        rest = after;
    }
    rest.is_empty().then_some(files)
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (n, rest) = bytes.split_at_checked(4)?;
    Some((u32::from_le_bytes(n.try_into().ok()?), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_list_round_trips_byte_for_byte() {
        let files = vec![UntrackedFile {
            path: b"data/big.bin".to_vec(),
            size: 5 << 30,
            why: UntrackedWhy::TooLarge,
        }];
        let bytes = encode_untracked(&files);
        assert_eq!(&bytes[..8], &[1, 0, 0, 0, 12, 0, 0, 0]);
        assert_eq!(bytes.len(), 4 + 4 + 12 + 8 + 1);
        assert_eq!(decode_untracked(&bytes), Some(files));
        assert_eq!(decode_untracked(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_untracked(&[]), None);
    }

    proptest! {
        #[test]
        fn any_list_round_trips(raw in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..40), any::<u64>(), any::<bool>()), 0..20)) {
            let files: Vec<UntrackedFile> = raw.into_iter().map(|(path, size, ex)| UntrackedFile {
                path,
                size,
                why: if ex { UntrackedWhy::Excluded } else { UntrackedWhy::TooLarge },
            }).collect();
            prop_assert_eq!(decode_untracked(&encode_untracked(&files)), Some(files));
        }

        #[test]
        fn no_bytes_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_untracked(&bytes);
        }
    }
}
