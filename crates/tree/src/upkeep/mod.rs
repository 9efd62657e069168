//! Upkeep of a store: retention and gc, verify and stats, export, expunge and the secrets
//! search. Each is a verb of [`Upkeep`], which borrows the workspace's parts.

pub(crate) mod export;
pub(crate) mod expunge;
pub(crate) mod lifecycle;

use crate::parts::Parts;

/// Keeps a store: what it holds, how long, and what leaves it.
#[derive(Clone, Copy)]
pub(crate) struct Upkeep<'a> {
    pub(crate) parts: &'a Parts,
}

impl<'a> Upkeep<'a> {
    pub(crate) fn new(parts: &'a Parts) -> Upkeep<'a> {
        Upkeep { parts }
    }
}
