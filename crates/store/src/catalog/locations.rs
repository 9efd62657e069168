//! Every object's location at once, held compactly for the commands that look at all of them
//! (gc, verify, `log --stats`).

use std::collections::HashMap;

use super::Location;
use crate::pack::{Compression, FrameInfo};
use crate::{ObjectId, ObjectKind};

/// The `objects` table in memory. Each pack id is held once, and beside each object's id only
/// its frame (24 bytes): a `Location` repeats the object's id and its pack's, 120 bytes a row.
#[derive(Debug, Default)]
pub(crate) struct Locations {
    packs: Vec<ObjectId>,
    pack_numbers: HashMap<ObjectId, u32>,
    objects: HashMap<ObjectId, Slot>,
}

/// One object's frame, its pack by number.
#[derive(Clone, Copy, Debug)]
struct Slot {
    offset: u64,
    pack: u32,
    raw_len: u32,
    stored_len: u32,
    kind: ObjectKind,
    compression: Compression,
}

impl Locations {
    /// Room for `objects` locations, reserved at once: a map grown by doubling holds its old
    /// and new tables together.
    pub(crate) fn with_capacity(objects: usize) -> Locations {
        Locations {
            objects: HashMap::with_capacity(objects),
            ..Locations::default()
        }
    }

    pub(crate) fn insert(&mut self, location: Location) {
        let packs = &mut self.packs;
        let pack = *self.pack_numbers.entry(location.pack).or_insert_with(|| {
            packs.push(location.pack);
            (packs.len() - 1) as u32
        });
        let frame = location.frame;
        let slot = Slot {
            offset: frame.offset,
            pack,
            raw_len: frame.raw_len,
            stored_len: frame.stored_len,
            kind: frame.kind,
            compression: frame.compression,
        };
        self.objects.insert(frame.id, slot);
    }

    pub(crate) fn get(&self, id: &ObjectId) -> Option<Location> {
        self.objects.get(id).map(|slot| self.location(id, slot))
    }

    pub(crate) fn contains_key(&self, id: &ObjectId) -> bool {
        self.objects.contains_key(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Every location, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Location> + '_ {
        self.objects
            .iter()
            .map(|(id, slot)| self.location(id, slot))
    }

    fn location(&self, id: &ObjectId, slot: &Slot) -> Location {
        Location {
            pack: self.packs[slot.pack as usize],
            frame: FrameInfo {
                id: *id,
                kind: slot.kind,
                compression: slot.compression,
                offset: slot.offset,
                raw_len: slot.raw_len,
                stored_len: slot.stored_len,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_location_comes_back_as_it_went_in() {
        let mut locations = Locations::with_capacity(4);
        let mut given = Vec::new();
        for n in 0..300u32 {
            let location = Location {
                pack: ObjectId([(n % 3) as u8; 32]),
                frame: FrameInfo {
                    id: ObjectId(*blake3::hash(&n.to_le_bytes()).as_bytes()),
                    kind: if n % 2 == 0 {
                        ObjectKind::Chunk
                    } else {
                        ObjectKind::Tree
                    },
                    compression: if n % 5 == 0 {
                        Compression::Delta
                    } else {
                        Compression::Zstd
                    },
                    offset: 16 + u64::from(n) * 1_000_000_007,
                    raw_len: n * 7,
                    stored_len: n * 3,
                },
            };
            locations.insert(location);
            given.push(location);
        }
        assert_eq!(locations.len(), given.len());
        for location in &given {
            assert_eq!(locations.get(&location.frame.id), Some(*location));
        }
        let mut all: Vec<Location> = locations.iter().collect();
        all.sort_by_key(|l| l.frame.id);
        given.sort_by_key(|l| l.frame.id);
        assert_eq!(all, given);
        assert!(!locations.contains_key(&ObjectId([7; 32])));
    }
}
