//! The scanner: a parallel walk of the working tree under all four ignore layers, then a
//! parallel read-hash-store of every tracked file.
//!
//! Ignore layers (ARCHITECTURE.md): the store and VCS directories, the configured default excludes,
//! `.gitignore` files at every level with git's semantics (whether or not this is a git repo),
//! then `.snapignore` files, which take precedence and so can re-include. `.git` is never
//! read: not its `info/exclude`, not the global excludes file.
//!
//! [`rules`] owns the ignore layers, [`walker`] the parallel directory walk (and the directory
//! cache it trusts), [`walk`] what one walk hands over, and [`files`] the reading of tracked
//! files into the store ([`read`] one entry, stably), [`content`] how file bytes become objects. The scanner reads the working tree and never writes it.

pub(crate) mod content;
pub(crate) mod files;
pub(crate) mod read;
pub(crate) mod rules;
pub(crate) mod walk;
pub(crate) mod walker;

pub(crate) use crate::paths::{SNAPIGNORE, STORE_DIR, abs};
#[cfg(test)]
pub(crate) use content::store_content;
pub(crate) use content::store_reader;
pub use files::ScanReport;
pub(crate) use files::{
    CacheView, Stored, cannot_read, file_paths, gone_dirs, prune_under, store_path, store_walk,
    take_file_stats, walk_excluding,
};
pub(crate) use read::stat_key;
pub use walk::Unreadable;
pub(crate) use walk::{Walk, WalkSum, subtree_sums};
pub(crate) use walker::DirCacheView;
