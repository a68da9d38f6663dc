//! The bitonic sorting network's schedule, shared by every backend.
//!
//! The network sorts `n` keys through *stages* of merge size `size = 2, 4, 8, …, P`, where
//! `P` is `n` rounded up to a power of two. Each stage runs *steps* of stride
//! `size/2, size/4, …, 1`; a step is one layer of independent compare-exchanges.
//!
//! # The all-ascending form
//!
//! The textbook network (and the seed's code) pairs `i` with `i ^ stride` in every step and
//! alternates the direction with `i & size`. We use the equivalent form in which every
//! comparator is ascending (the smaller key goes to the lower index): the first step of each
//! stage pairs `i` with its *mirror* in the block, `i ^ (size - 1)`, and the others pair
//! `i` with `i ^ stride` as before. Reversing the upper half of every block that the textbook
//! form sorts descending gives exactly this network.
//!
//! Why it matters: a length that is not a power of two is padded, virtually, with `+inf` keys
//! at indices `n..P`. In the all-ascending form a comparator `(i, j)` with `i < n <= j` always
//! leaves the `+inf` at `j`, so the padding never moves, and every comparator whose partner is
//! `>= n` can simply be skipped. No padding is ever stored or read. (In the alternating form
//! descending blocks would pull the padding down into the data.)

/// One layer of compare-exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The merge size of the stage this step belongs to (a power of two, at least 2).
    pub size: usize,
    /// Distance between the two halves being merged (a power of two below `size`).
    pub stride: usize,
}

impl Step {
    /// The first step of a stage: pairs each index with its mirror in its block of `size`.
    pub fn is_flip(&self) -> bool {
        self.stride * 2 == self.size
    }

    /// The partner of index `i` in this step (smaller index keeps the smaller key).
    pub fn partner(&self, i: usize) -> usize {
        if self.is_flip() {
            i ^ (self.size - 1)
        } else {
            i ^ self.stride
        }
    }

    /// The lower index of comparator number `t` (comparators are numbered densely from 0):
    /// insert a zero bit at the stride's position. This is the report's `get_lower_partner`.
    #[cfg(test)]
    pub fn lower_index(&self, t: usize) -> usize {
        let low_mask = self.stride - 1;
        ((t & !low_mask) << 1) | (t & low_mask)
    }
}

/// `n` rounded up to a power of two (1 for 0 and 1): the width of the virtual network.
pub fn padded_len(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// Merge sizes of the stages that sort `n` keys: 2, 4, …, `padded_len(n)`.
pub fn stage_sizes(n: usize) -> impl Iterator<Item = usize> {
    let padded = padded_len(n);
    std::iter::successors(Some(2usize), |s| s.checked_mul(2)).take_while(move |&s| s <= padded)
}

/// The steps of the stage with merge size `size`, from stride `size/2` down to 1.
pub fn stage_steps(size: usize) -> impl Iterator<Item = Step> {
    std::iter::successors(Some(size / 2), |s| Some(s / 2))
        .take_while(|&s| s >= 1)
        .map(move |stride| Step { size, stride })
}

/// Every step of the network for `n` keys, in order.
pub fn steps(n: usize) -> impl Iterator<Item = Step> {
    stage_sizes(n).flat_map(stage_steps)
}

/// Number of steps for `n` keys: `k(k+1)/2` for `2^k` padded keys.
pub fn step_count(n: usize) -> usize {
    let k = padded_len(n).trailing_zeros() as usize;
    k * (k + 1) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_shape() {
        assert_eq!(steps(0).count(), 0);
        assert_eq!(steps(1).count(), 0);
        assert_eq!(
            steps(2).collect::<Vec<_>>(),
            vec![Step { size: 2, stride: 1 }]
        );
        assert_eq!(steps(16).count(), 10);
        assert_eq!(step_count(1 << 20), 210);
        assert_eq!(steps(1000).count(), step_count(1000));
    }

    #[test]
    fn lower_index_enumerates_each_pair_once() {
        for step in steps(64) {
            let mut seen = [false; 64];
            for t in 0..32 {
                let i = step.lower_index(t);
                let j = step.partner(i);
                assert!(j > i && !seen[i] && !seen[j]);
                seen[i] = true;
                seen[j] = true;
            }
        }
    }
}
