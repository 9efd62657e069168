//! The catalog's redb tables, by name and key and value types (docs/FORMAT.md 6), and the
//! format version the catalog records of itself.

use redb::TableDefinition;

/// Catalog format version stored under `meta["format"]`. Version 2 stores may hold delta
/// frames (compression 2), version 3 stores blocks (kind 5) and slices (compression 3),
/// version 4 stores delta chains up to 16 deep (file deltas), all of which older readers
/// would call corrupt; version 5 names an object's pack by number (22-byte `objects` rows),
/// which older readers would take for damage, and keeps the stat cache by directory
/// (`stat_dirs`), which an older gc would not clean; version 6 writes most `objects` rows in
/// a compact varint layout, which version 5 readers would take for damage. An older catalog
/// is marked current by the first commit that adds packs or writes the stat cache; its rows
/// are read as they are.
pub const CATALOG_VERSION: u32 = 6;

pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(super) const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
pub(super) const PACKS: TableDefinition<&[u8], u64> = TableDefinition::new("packs");
pub(super) const PACK_IDS: TableDefinition<u32, &[u8]> = TableDefinition::new("pack_ids");
pub(super) const PACK_NUMBERS: TableDefinition<&[u8], u32> = TableDefinition::new("pack_numbers");
pub(super) const SNAPSHOTS: TableDefinition<u64, &[u8]> = TableDefinition::new("snapshots");
pub(super) const SNAP_IDS: TableDefinition<&[u8], u64> = TableDefinition::new("snap_ids");
pub(super) const STAT_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("stat_cache");
pub(super) const DIR_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("dir_cache");
pub(super) const TREE_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tree_cache");
