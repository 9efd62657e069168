//! `SeenIds`: the set of ids a writer has stored or is storing, so that an object met twice
//! in one save is written once. It is exact (a whole id per entry: a false "seen" would
//! leave an object unwritten) and sharded by the id's first bytes.
//!
//! The shards are sized so that each fills to just under hashbrown's 7/8 load: one set of a
//! million ids would round up to twice the buckets it needs (docs/PERFORMANCE.md, "Figures
//! behind the code").

use std::collections::HashSet;
use std::sync::{Mutex, RwLock};

use crate::ObjectId;
use crate::fs::lock_poisoned;

/// Ids a shard is sized for: 2^16 buckets hold 57,344 at hashbrown's 7/8 load, and a shard
/// of a set sized this way sees a few hundred more or less than the average (a binomial
/// spread); one that overflows grows, which costs memory, never correctness.
const SHARD_IDS: usize = 54_000;

/// The ids seen, in shards chosen by the id's first eight bytes.
#[derive(Debug)]
pub(crate) struct SeenIds {
    shards: RwLock<Vec<Mutex<HashSet<ObjectId>>>>,
}

impl Default for SeenIds {
    fn default() -> SeenIds {
        SeenIds {
            shards: RwLock::new(vec![Mutex::default()]),
        }
    }
}

impl SeenIds {
    /// Adds `id`; true when it was not there.
    pub(crate) fn insert(&self, id: ObjectId) -> bool {
        let shards = self.shards.read().unwrap_or_else(|p| p.into_inner());
        lock_poisoned(&shards[shard_of(&id, shards.len())]).insert(id)
    }

    /// Re-shards the set for `more` ids beyond those it holds, each shard sized at once:
    /// grown as it fills, a set holds its old and new tables at once.
    pub(crate) fn expect(&self, more: usize) {
        let mut shards = self.shards.write().unwrap_or_else(|p| p.into_inner());
        let held: Vec<ObjectId> = (shards.iter_mut())
            .flat_map(|s| std::mem::take(s.get_mut().unwrap_or_else(|p| p.into_inner())))
            .collect();
        let total = held.len() + more;
        let count = total.div_ceil(SHARD_IDS).max(1);
        let each = total.div_ceil(count);
        *shards = (0..count)
            .map(|_| Mutex::new(HashSet::with_capacity(each)))
            .collect();
        for id in held {
            let shard = shards[shard_of(&id, count)].get_mut();
            shard.unwrap_or_else(|p| p.into_inner()).insert(id);
        }
    }

    /// Forgets every id, giving the shards' room back.
    pub(crate) fn clear(&self) {
        *self.shards.write().unwrap_or_else(|p| p.into_inner()) = vec![Mutex::default()];
    }

    /// The room the shards hold, in ids.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        let shards = self.shards.read().unwrap_or_else(|p| p.into_inner());
        shards.iter().map(|s| lock_poisoned(s).capacity()).sum()
    }
}

/// The shard of `id` among `count`.
fn shard_of(id: &ObjectId, count: usize) -> usize {
    let (first, _) = id.0.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    (u64::from_le_bytes(*first) % count as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> ObjectId {
        ObjectId(*blake3::hash(&n.to_le_bytes()).as_bytes())
    }

    /// Each id is new once, before and after the set is re-sharded around it.
    #[test]
    fn an_id_is_new_once_across_re_sharding() {
        let seen = SeenIds::default();
        assert!((0..1000).all(|n| seen.insert(id(n))));
        seen.expect(200_000);
        assert!(
            (0..1000).all(|n| !seen.insert(id(n))),
            "kept when re-sharded"
        );
        assert!((1000..201_000).all(|n| seen.insert(id(n))));
        assert!((0..201_000).step_by(7).all(|n| !seen.insert(id(n))));
        seen.clear();
        assert!(seen.insert(id(5)), "forgotten");
    }

    /// The ids expected fit in shards of 2^16 buckets, filled to under 7/8, without any
    /// growing (one set for 200,000 would take 2^18 buckets, 4 shards take 2^16 each).
    #[test]
    fn the_ids_expected_fit_in_the_room_reserved() {
        let seen = SeenIds::default();
        seen.expect(200_000);
        let reserved = seen.capacity();
        assert_eq!(reserved, 4 * 57_344);
        assert!((0..200_000).all(|n| seen.insert(id(n))));
        assert_eq!(seen.capacity(), reserved, "no shard grew");
    }
}
