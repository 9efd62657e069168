//! Capturing the working tree: reading it and storing what changed, for a save, a status or
//! diff, and before a move. [`cascade`] is the walk through the caches (each named there);
//! [`partial`] reads only the directories a change source names; [`memo`] keeps what a walk
//! or a move vouches for; [`large`] follows large and untracked files; [`save`] is the save
//! verb (and status and diff against the working tree) over a capture.

pub(crate) mod cascade;
pub(crate) mod large;
pub(crate) mod memo;
mod partial;
pub(crate) mod save;

use crate::parts::Parts;

/// Reads the working tree and stores what changed: every capture and save (`capture/`).
#[derive(Clone, Copy)]
pub(crate) struct Snapshotter<'a> {
    pub(crate) parts: &'a Parts,
}

impl<'a> Snapshotter<'a> {
    pub(crate) fn new(parts: &'a Parts) -> Snapshotter<'a> {
        Snapshotter { parts }
    }
}
