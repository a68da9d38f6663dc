//! The messages of [`ProcessRank`](super::ProcessRank)'s small all-gathers, on the host: each
//! rank's status word (whether its local steps since the last gather succeeded), then its
//! payload, all zeros after a failure; and what every rank makes of every rank's. A failure on
//! one rank then stops every rank at the same gather, none left waiting.

use crate::error::{Error, Result};
use crate::multi::SAMPLES_PER_RANK;
use crate::{Order, SortKey};

/// The first gather's message after the status: the shard's length and the call's fingerprint
/// (`ProcessRank::gather_lens`), the same size for every call.
pub(super) const FIRST_GATHER_PAYLOAD: usize = 16;

/// A gather's status word: the rank's local steps since the last gather succeeded, or not.
pub(super) const OK: [u8; 8] = 0u64.to_le_bytes();
pub(super) const FAILED: [u8; 8] = 1u64.to_le_bytes();

/// The longest message a rank sends in a gather of `p` ranks: the status word, then the
/// widest payload, the padded samples (at most `SAMPLES_PER_RANK × p` words of at most 16
/// bytes: `sample_count`) or the bucket bounds (`p + 1` u64).
pub(super) fn most_sent(p: usize) -> usize {
    8 + (16 * SAMPLES_PER_RANK * p).max((p + 1) * 8)
}

/// What a rank sends in a gather (`ProcessRank::gather`): its status, then `message` of its
/// local steps' value, `payload` bytes; all zeros after a failure.
pub(super) fn status_message<T>(
    local: &Result<T>,
    payload: usize,
    message: impl FnOnce(&T) -> Vec<u8>,
) -> Vec<u8> {
    let mut sent = Vec::with_capacity(OK.len() + payload);
    match local {
        Ok(value) => {
            sent.extend(OK);
            sent.extend(message(value));
        }
        Err(_) => {
            sent.extend(FAILED);
            sent.resize(OK.len() + payload, 0);
        }
    }
    assert_eq!(sent.len(), OK.len() + payload, "every rank sends alike");
    sent
}

/// What a rank makes of a gather of every rank's [`status_message`] of `width` bytes: its
/// own error first, then [`Error::PeerFailed`] when any rank failed, else every rank's
/// message, in rank order.
pub(super) fn read_gathered<T>(
    local: Result<T>,
    gathered: &[u8],
    width: usize,
) -> Result<(T, Vec<Vec<u8>>)> {
    let value = local?;
    let parts = gathered.chunks_exact(width);
    if parts.clone().any(|part| part[..OK.len()] != OK) {
        return Err(Error::PeerFailed);
    }
    Ok((value, parts.map(|part| part[OK.len()..].to_vec()).collect()))
}

/// What a sort call is, as one number that every rank compares in its first gather: the key
/// type, the value width (0 for keys alone) and the order. Calls that differ here would send
/// messages of different sizes later, which NCCL neither checks nor survives.
pub(super) fn call_fingerprint<K: SortKey>(value_bytes: usize, order: Order) -> u64 {
    let dtype = K::DTYPE as u64 + 1;
    let order = match order {
        Order::Ascending => 1,
        Order::Descending => 2,
    };
    dtype | (value_bytes as u64) << 8 | order << 16
}

/// Plain-data values from their bytes (a whole number of them).
pub(super) fn decode<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three ranks' gathers as NCCL's all-gather lays them out (rank by rank), each rank's
    /// local steps failed or not, read by every rank.
    fn gather_of(failed: [bool; 3]) -> Vec<Result<(usize, Vec<Vec<u8>>)>> {
        let local = |rank: usize| -> Result<usize> {
            if failed[rank] {
                Err(Error::WrongDevice {
                    buffer: 0,
                    sorter: rank,
                })
            } else {
                Ok(rank)
            }
        };
        let gathered: Vec<u8> = (0..3)
            .flat_map(|rank| status_message(&local(rank), 2, |&r| vec![r as u8, 7]))
            .collect();
        (0..3)
            .map(|rank| read_gathered(local(rank), &gathered, OK.len() + 2))
            .collect()
    }

    #[test]
    fn every_rank_reads_every_message() {
        for (rank, read) in gather_of([false; 3]).into_iter().enumerate() {
            let (value, messages) = read.unwrap();
            assert_eq!(value, rank);
            assert_eq!(messages, vec![vec![0, 7], vec![1, 7], vec![2, 7]]);
        }
    }

    #[test]
    fn one_rank_failing_stops_every_rank_at_the_same_gather() {
        let reads = gather_of([false, true, false]);
        assert!(matches!(reads[0], Err(Error::PeerFailed)));
        assert!(matches!(
            reads[1],
            Err(Error::WrongDevice { sorter: 1, .. })
        ));
        assert!(matches!(reads[2], Err(Error::PeerFailed)));
        // Its own error first, when several fail.
        let reads = gather_of([true, true, false]);
        assert!(matches!(
            reads[0],
            Err(Error::WrongDevice { sorter: 0, .. })
        ));
        assert!(matches!(
            reads[1],
            Err(Error::WrongDevice { sorter: 1, .. })
        ));
        assert!(matches!(reads[2], Err(Error::PeerFailed)));
    }

    #[test]
    fn calls_that_differ_have_different_fingerprints() {
        let calls = [
            call_fingerprint::<u32>(0, Order::Ascending),
            call_fingerprint::<u32>(0, Order::Descending),
            call_fingerprint::<i32>(0, Order::Ascending),
            call_fingerprint::<f32>(0, Order::Ascending),
            call_fingerprint::<u64>(0, Order::Ascending),
            call_fingerprint::<u32>(4, Order::Ascending),
            call_fingerprint::<u32>(8, Order::Ascending),
        ];
        for (i, a) in calls.iter().enumerate() {
            assert!(calls[i + 1..].iter().all(|b| b != a), "call {i} repeats");
        }
    }
}
