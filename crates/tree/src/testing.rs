//! Hooks for snap-tree's own test suites (feature `testing`, never in a release build of the
//! CLI): the race suite learns the instant each path is exchanged, and can force the
//! hard-link fallback that filesystems without `renameat2` flags take.

pub use crate::testing_hooks::{Edge, ExchangeHook};

/// Installs `hook` (replacing any other) for every move in this process.
pub fn on_exchange(hook: ExchangeHook) {
    *crate::testing_hooks::EXCHANGE_HOOK
        .write()
        .unwrap_or_else(|p| p.into_inner()) = Some(hook);
}

/// Removes the exchange hook.
pub fn clear_exchange_hook() {
    *crate::testing_hooks::EXCHANGE_HOOK
        .write()
        .unwrap_or_else(|p| p.into_inner()) = None;
}

/// Makes every later move take the hard-link fallback (`true`), as on a filesystem without
/// `RENAME_EXCHANGE`, or the exchange again (`false`).
pub fn force_link_fallback(on: bool) {
    crate::restore::force_link_fallback(on);
}

/// Makes every later fallback find hard links unsupported (`true`), as on exFAT or many FUSE
/// filesystems, or supported again (`false`).
pub fn force_no_links(on: bool) {
    crate::restore::force_no_links(on);
}

/// The scanner's walk, for the suites that check what it lists and what its caches trust.
pub mod scan {
    pub use crate::scan::files::{gone_dirs, walk, walk_excluding};
    pub use crate::scan::read::stat_key;
    pub use crate::scan::walk::Walk;
    pub use crate::scan::walker::DirCacheView;
}

/// The restore engine, for the suites that drive one plan against a hostile tree.
pub mod restore {
    pub use crate::restore::{OpId, Plan, Sides, WorkTree, apply};
}

/// Searches a store's files, packs decompressed frame by frame, for bytes (the expunge suites).
pub use snap_store::testing::store_holds;
