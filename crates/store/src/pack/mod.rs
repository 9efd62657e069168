//! Pack files: sealed, immutable containers of self-framed objects, named by their BLAKE3;
//! [`layout`] gives the bytes.
//!
//! The body is every byte before the index; its BLAKE3 is the pack's name. Either a forward scan
//! of the frames or the trailer alone indexes a pack. Readers use `pread`, never a mapping: a
//! pack truncated by a damaged disk must give an error, not SIGBUS.
//!
//! The layer owns the bytes of a pack and nothing above them: [`frame`] encodes one object
//! (header, compression, delta or slice payload), [`write`] appends frames and seals a pack,
//! [`read`] checks and reads one back, [`frames`] keeps the frames a writer appended, and
//! [`delta`] and [`slice`] are the two payloads stored against another object. Which packs
//! are live, and where an object lies, is the catalog's business, not this layer's.

pub mod delta;
pub mod frame;
pub mod frames;
pub mod layout;
pub mod read;
#[cfg(feature = "testing")]
pub(crate) mod search;
pub mod slice;
pub mod write;

pub use frame::{Compression, EncodedObject, FrameInfo, decode_frame_header, decode_payload};
pub use frames::PackFrames;
pub use layout::{
    FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PACK_TARGET_SIZE, pack_file_name,
};
pub use read::PackReader;
pub use write::{PackWriter, heal_header};

#[cfg(test)]
mod tests;
