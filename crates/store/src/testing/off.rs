//! The test hooks of a build without the `testing` feature: each an inline no-op, so that
//! what they would record costs nothing and names nothing.

/// The durability journal's calls, recording nothing.
pub mod journal {
    use std::os::fd::AsFd;

    /// A file's fsync, not recorded.
    #[inline(always)]
    pub fn file_synced(_fd: impl AsFd) {}

    /// A directory's fsync, not recorded.
    #[inline(always)]
    pub fn dir_synced(_fd: impl AsFd) {}

    /// A whole filesystem's sync, not recorded.
    #[inline(always)]
    pub fn fs_synced(_fd: impl AsFd) {}
}
