//! The parser's table of value names: every distinct name of a function gets a number, in
//! order of first mention, so that later passes index vectors instead of looking names up.
//!
//! Names in large programs are overwhelmingly a prefix, a decimal number and maybe a suffix
//! (`%x12`, `%v40031`, `%x7_b`), numbered in program order. Such a name is found through its
//! *family* (its prefix and suffix: a few per program, so their table stays in the cache) and a
//! dense vector of the family indexed by the number: consecutive names touch neighbouring
//! slots, where a hash table of 10⁶ names costs a cache miss per mention. Every other name goes
//! to a hash table of names.
//!
//! The split is a function of the name alone, so one name never has two numbers: the number is
//! the first run of digits, written without leading zeros (`%x01` is not `%x1`, it goes to the
//! hash table) and in at most [`MAX_DIGITS`] digits. The one exception is the memory bound: the
//! families' slots together may not exceed a budget fixed when the table is made (a share of
//! the source's length), and a number past it goes to the hash table. That refusal is final for
//! that name: the budget only shrinks, so a later attempt to reach the same slot would cost at
//! least as much (see [`Names::dense_slot`]); a slot that stays empty keeps sending its name to
//! the hash table, where it is then found.

use std::hash::BuildHasher;

use hashbrown::{hash_table, HashTable};
use rustc_hash::FxBuildHasher;

/// The most digits a family number may have (so it fits a `u32` and indexes a vector).
pub(super) const MAX_DIGITS: usize = 9;

/// An empty family slot.
const EMPTY: u32 = u32::MAX;

/// How many families [`Names::recent`] remembers.
const RECENT: usize = 64;

/// Where [`Names::recent`] keeps the family of `prefix` and `suffix`: a mix of their lengths
/// and outer bytes (a collision only costs a look-up in the hash table).
fn recent_key(prefix: &str, suffix: &str) -> usize {
    let (p, s) = (prefix.as_bytes(), suffix.as_bytes());
    let mix = p.len() as u64
        ^ u64::from(p.first().copied().unwrap_or(0)) << 8
        ^ u64::from(p.last().copied().unwrap_or(0)) << 16
        ^ (s.len() as u64) << 24
        ^ u64::from(s.last().copied().unwrap_or(0)) << 32;
    // The top bits of a Fibonacci hash: 0..RECENT.
    (mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT.trailing_zeros())) as usize
}

/// Names of one prefix and suffix, by number: `slots[k]` is the number of the name
/// `{prefix}{k}{suffix}`, or [`EMPTY`].
struct Family<'src> {
    prefix: &'src str,
    suffix: &'src str,
    slots: Vec<u32>,
}

/// What the parser knows of one name: the name, its first and its latest definition so far
/// (value indices, `usize::MAX`: none). Kept together because they are read together: a
/// name's definitions are needed exactly when the name is.
struct Entry<'src> {
    name: &'src str,
    first_def: usize,
    latest: usize,
}

/// Every name of a function → its number (see the module notes), and per number the name and
/// its definitions.
pub(super) struct Names<'src> {
    /// Per name number.
    names: Vec<Entry<'src>>,
    families: Vec<Family<'src>>,
    /// Family indices, hashed by prefix and suffix.
    family_ids: HashTable<usize>,
    /// The families used last, by [`recent_key`] (index + 1; 0: none): a program alternates
    /// between a few families, which are then found without hashing.
    recent: [usize; RECENT],
    /// Name numbers, hashed by the names they stand for: the names outside every family.
    others: HashTable<usize>,
    /// How many more slots the families may take together.
    slots_left: usize,
    /// How many names to reserve room for in `others` when it first gets one.
    others_hint: usize,
}

impl Default for Names<'_> {
    fn default() -> Self {
        Names::new(0, 0)
    }
}

/// `name` as prefix, number and suffix, if it belongs to a family (see the module notes).
pub(super) fn split_numbered(name: &str) -> Option<(&str, u32, &str)> {
    let bytes = name.as_bytes();
    let start = bytes.iter().position(u8::is_ascii_digit)?;
    let len = bytes[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let digits = &bytes[start..start + len];
    if len > MAX_DIGITS || (len > 1 && digits[0] == b'0') {
        return None;
    }
    let number = digits
        .iter()
        .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
    // Digits are ASCII, so both cuts are character boundaries.
    Some((&name[..start], number, &name[start + len..]))
}

impl<'src> Names<'src> {
    /// A table whose families take at most `slot_budget` slots, with room for `expected`
    /// names. With a budget of 0 every name goes to the hash table (the reference that tests
    /// compare the families with).
    pub(super) fn new(slot_budget: usize, expected: usize) -> Self {
        Names {
            names: Vec::with_capacity(expected),
            families: Vec::new(),
            family_ids: HashTable::new(),
            recent: [0; RECENT],
            others: HashTable::new(),
            slots_left: slot_budget,
            others_hint: expected,
        }
    }

    /// How many distinct names have been seen.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// The name numbered `id`.
    pub(super) fn name(&self, id: usize) -> &'src str {
        self.names[id].name
    }

    /// The first value defining name `id` (`usize::MAX`: none).
    pub(super) fn first_def(&self, id: usize) -> usize {
        self.names[id].first_def
    }

    /// Record that `value` defines name `id` (only the first definition is kept).
    pub(super) fn define(&mut self, id: usize, value: usize) {
        let first = &mut self.names[id].first_def;
        if *first == usize::MAX {
            *first = value;
        }
    }

    /// The latest value recorded by [`Names::set_latest`] for name `id` (`usize::MAX`: none).
    pub(super) fn latest(&self, id: usize) -> usize {
        self.names[id].latest
    }

    /// Record `value` as the latest definition of name `id`.
    pub(super) fn set_latest(&mut self, id: usize, value: usize) {
        self.names[id].latest = value;
    }

    /// A new number for `name`.
    fn push(&mut self, name: &'src str) -> usize {
        self.names.push(Entry {
            name,
            first_def: usize::MAX,
            latest: usize::MAX,
        });
        self.names.len() - 1
    }

    /// The number of `name`, given it on its first mention.
    pub(super) fn id(&mut self, name: &'src str) -> usize {
        if let Some((prefix, number, suffix)) = split_numbered(name) {
            if let Some((family, k)) = self.dense_slot(prefix, number, suffix) {
                let slot = &mut self.families[family].slots[k];
                if *slot != EMPTY {
                    return *slot as usize;
                }
                let id = self.names.len();
                // A number that does not fit the slot stays in the hash table; its slot stays
                // empty, so it is looked up there every time.
                if let Some(id32) = u32::try_from(id).ok().filter(|&i| i != EMPTY) {
                    *slot = id32;
                    return self.push(name);
                }
            }
        }
        self.other_id(name)
    }

    /// The family and slot index of `{prefix}{number}{suffix}`, the family grown to hold it
    /// if the budget allows, or `None`.
    ///
    /// A refusal is final: it means `left + len < number + 1` for the family's length `len`
    /// and the budget left `left`. Later the family is longer by some `g` and the budget
    /// smaller by at least `g`, so reaching `number` would still need more than is left.
    fn dense_slot(
        &mut self,
        prefix: &'src str,
        number: u32,
        suffix: &'src str,
    ) -> Option<(usize, usize)> {
        let key = recent_key(prefix, suffix);
        let index = match self.recent[key].checked_sub(1) {
            Some(f)
                if self
                    .families
                    .get(f)
                    .is_some_and(|fam| fam.prefix == prefix && fam.suffix == suffix) =>
            {
                f
            }
            _ => {
                let f = self.family(prefix, suffix);
                self.recent[key] = f + 1;
                f
            }
        };
        let slots = &mut self.families[index].slots;
        let k = number as usize;
        if k >= slots.len() {
            let more = k + 1 - slots.len();
            if more > self.slots_left {
                return None;
            }
            self.slots_left -= more;
            slots.resize(k + 1, EMPTY);
        }
        Some((index, k))
    }

    /// The index of the family of `prefix` and `suffix`, made if new.
    fn family(&mut self, prefix: &'src str, suffix: &'src str) -> usize {
        let hash = FxBuildHasher.hash_one((prefix, suffix));
        let families = &self.families;
        let entry = self.family_ids.entry(
            hash,
            |&f| families[f].prefix == prefix && families[f].suffix == suffix,
            |&f| FxBuildHasher.hash_one((families[f].prefix, families[f].suffix)),
        );
        match entry {
            hash_table::Entry::Occupied(e) => *e.get(),
            hash_table::Entry::Vacant(e) => {
                let index = self.families.len();
                e.insert(index);
                self.families.push(Family {
                    prefix,
                    suffix,
                    slots: Vec::new(),
                });
                index
            }
        }
    }

    /// The number of a name outside every family.
    fn other_id(&mut self, name: &'src str) -> usize {
        if self.others.capacity() == 0 {
            // Reserved on first use: a program whose names are all in families never pays.
            self.others.reserve(self.others_hint, |_| 0);
        }
        let names = &self.names;
        let entry = self.others.entry(
            FxBuildHasher.hash_one(name),
            |&id| names[id].name == name,
            |&id| FxBuildHasher.hash_one(names[id].name),
        );
        match entry {
            hash_table::Entry::Occupied(e) => *e.get(),
            hash_table::Entry::Vacant(e) => {
                e.insert(self.names.len());
                self.push(name)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_at_their_first_number() {
        assert_eq!(split_numbered("x12"), Some(("x", 12, "")));
        assert_eq!(split_numbered("x7_b"), Some(("x", 7, "_b")));
        assert_eq!(split_numbered("0"), Some(("", 0, "")));
        assert_eq!(split_numbered("a1b2"), Some(("a", 1, "b2")));
        assert_eq!(split_numbered("x0"), Some(("x", 0, "")));
        assert_eq!(
            split_numbered("x01"),
            None,
            "a leading zero is another name"
        );
        assert_eq!(split_numbered("x00"), None);
        assert_eq!(split_numbered("foo"), None);
        assert_eq!(split_numbered("x999999999"), Some(("x", 999_999_999, "")));
        assert_eq!(split_numbered("x1000000000"), None, "ten digits");
    }

    /// Every way into the table gives one number per distinct name, the same as the hash
    /// table alone, also when the budget runs out half way.
    #[test]
    fn families_and_hash_table_agree() {
        let words: Vec<String> = (0..3000u64)
            .map(|i| {
                let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                match h % 7 {
                    0 => format!("x{}", h % 50),
                    1 => format!("x0{}", h % 50),
                    2 => format!("v{}_b", h % 400),
                    3 => format!("n{}", h % 5000),
                    4 => format!("foo{}", h % 3),
                    5 => format!("{}", h % 100),
                    _ => format!("x{}", 1_000_000 + h % 10),
                }
            })
            .collect();
        for budget in [0, 10, 100, 1000, 100_000] {
            let mut dense = Names::new(budget, 0);
            let mut hashed = Names::new(0, 0);
            for w in &words {
                assert_eq!(dense.id(w), hashed.id(w), "{w}, budget {budget}");
            }
            assert_eq!(dense.len(), hashed.len());
            assert!(dense.families.iter().map(|f| f.slots.len()).sum::<usize>() <= budget);
        }
    }
}
