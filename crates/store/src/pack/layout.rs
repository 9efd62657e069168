//! A pack's byte layout, as constants beside the layout they measure (docs/FORMAT.md 5):
//!
//! ```text
//! pack   := header frame* trailer
//! header := magic "SNAPPACK" (8) | version u32 LE (4) | reserved u32 LE = 0 (4)      16 bytes
//! frame  := kind u8 | compression u8 | reserved u16 LE = 0 | raw_len u32 LE
//!           | stored_len u32 LE | id [32] | payload [stored_len]                       44 + n
//! trailer:= index entry* footer
//! entry  := id [32] | frame offset u64 LE                                              40 bytes
//! footer := entry count u64 LE | index offset u64 LE | body BLAKE3 [32] | "SNAPTRLR"   56 bytes
//! ```

use crate::model::ObjectId;

/// First bytes of every pack.
pub const PACK_MAGIC: &[u8; 8] = b"SNAPPACK";
/// Last bytes of every pack.
pub const TRAILER_MAGIC: &[u8; 8] = b"SNAPTRLR";
/// Pack format version written in the header.
pub const PACK_VERSION: u32 = 1;
/// Header: magic (8) | version u32 LE (4) | reserved u32 LE (4).
pub const HEADER_LEN: u64 = 16;
/// Frame header: kind (1) | compression (1) | reserved (2) | raw_len (4) | stored_len (4) | id (32).
pub const FRAME_HEADER_LEN: u64 = 44;
/// Index entry: id (32) | frame offset u64 LE (8).
pub const INDEX_ENTRY_LEN: u64 = 40;
/// Footer: count u64 LE (8) | index offset u64 LE (8) | body BLAKE3 (32) | magic (8).
pub const FOOTER_LEN: u64 = 56;
/// Packs are sealed once they pass this size, so no single pack grows huge.
pub const PACK_TARGET_SIZE: u64 = 128 << 20;

/// `<64 hex>.pack`.
pub fn pack_file_name(id: &ObjectId) -> String {
    format!("{}.pack", id.to_hex())
}
