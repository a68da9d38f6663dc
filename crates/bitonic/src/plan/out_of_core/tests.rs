//! The out-of-core plan's schedules, run on the host.

use super::*;
use crate::device::DeviceInfo;
use crate::plan::merge::co_rank;
use crate::plan::merge::tests::stable_merge_splits;

#[test]
fn co_ranks_split_a_stable_merge() {
    let mut state = 7u64;
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % m) as u32
    };
    for (lens, distinct) in [
        (vec![0, 5], 3),
        (vec![10, 0, 7], 2),
        (vec![50, 33, 80], 1),
        (vec![64, 64], 1000),
        (vec![100, 1, 37, 200], 5),
    ] {
        let runs: Vec<Vec<u32>> = lens
            .iter()
            .map(|&n| {
                let mut run: Vec<u32> = (0..n).map(|_| next(distinct)).collect();
                run.sort();
                run
            })
            .collect();
        let views: Vec<&[u32]> = runs.iter().map(|r| r.as_slice()).collect();
        // The stable merge by hand: every word by (word, run, position).
        for (at, split) in stable_merge_splits(&runs).iter().enumerate() {
            assert_eq!(&co_ranks(&views, at), split, "{lens:?} at {at}");
        }
    }
    // The extreme words.
    let (lows, highs) = ([0u64, 0, u64::MAX], [0u64, u64::MAX, u64::MAX]);
    assert_eq!(co_ranks(&[&lows[..], &highs[..]], 3), [2, 1]);
    assert_eq!(co_ranks(&[&lows[..], &highs[..]], 5), [3, 2]);
}

/// The schedule on the host, the GPU's memory a second vector: run A sorted in its place,
/// run B sorted aside, then the pieces last first, each written where the buffer's keys
/// have all been read. Checks that no piece overwrites a key of A still to be read.
fn simulate(plan: &OutOfCorePlan, buffer: &mut [u32]) {
    let Merge::ResidentRun { piece_len } = plan.merge else {
        panic!("{:?}", plan.merge)
    };
    let (a_range, b_range) = (plan.runs[0].clone(), plan.runs[1].clone());
    let mut resident = buffer[b_range].to_vec();
    resident.sort();
    buffer[a_range.clone()].sort();
    let a_sorted = buffer[a_range.clone()].to_vec(); // (for the co-ranks only)
    let mut unread_a = a_range.end;
    let split = |at| Ok(co_rank(&a_sorted, &resident, at));
    for piece in merge_pieces(plan, split).unwrap() {
        assert!(piece.output.len() <= piece_len);
        assert_eq!(piece.from_a.end, unread_a, "pieces take A from the back");
        assert!(
            piece.output.start >= piece.from_a.start,
            "{piece:?} would overwrite keys of A not yet read"
        );
        let mut on_gpu: Vec<u32> = buffer[piece.from_a.clone()].to_vec();
        on_gpu.extend_from_slice(&resident[piece.from_b.clone()]);
        on_gpu.sort(); // the GPU's sort of the two slices
        unread_a = piece.from_a.start;
        buffer[piece.output.clone()].copy_from_slice(&on_gpu);
    }
    assert_eq!(unread_a, 0);
}

#[test]
fn two_runs_merge_back_into_the_buffer() {
    let info = DeviceInfo::h100();
    let policy = Policy::HOPPER;
    let w = 4;
    let keys = |n: usize, distinct: u32| -> Vec<u32> {
        (0..n as u32)
            .map(|i| i.wrapping_mul(2654435761) % distinct)
            .collect()
    };
    // Budgets that force two runs of a few million keys, with pieces of 2^20.
    for (len, budget_keys, distinct) in [
        (3_000_000, 4_000_000, u32::MAX),
        (5_000_001, 5_500_000, 3),
        (2_500_000, 3_000_000, 1),
    ] {
        let budget = budget_keys * w;
        let plan = plan_out_of_core(&info, &policy, DType::U32, len, budget).unwrap();
        assert_eq!(plan.runs.len(), 2, "{len} keys in {budget} bytes");
        assert!(plan.device_bytes <= budget);
        assert_eq!(plan.runs[1].end, len);
        let mut buffer = keys(len, distinct);
        let mut want = buffer.clone();
        want.sort();
        simulate(&plan, &mut buffer);
        assert!(buffer == want, "{len} keys, {distinct} distinct");
    }
}

/// The many-run schedule on the host: runs sorted in their places, output blocks (their
/// slices sorted together, as the GPU would) written to the slots `block_merge` gives, then
/// put in order through two staging blocks. Checks that no block is written over keys not
/// yet read, and that at most runs + 1 spares are used.
fn simulate_blocks(buffer: &mut [u32], run_len: usize, block_len: usize) {
    let n = buffer.len();
    for run in buffer.chunks_mut(run_len) {
        run.sort();
    }
    let sorted_runs: Vec<Vec<u32>> = buffer.chunks(run_len).map(|r| r.to_vec()).collect();
    let views: Vec<&[u32]> = sorted_runs.iter().map(|r| r.as_slice()).collect();
    let blocks = block_merge(&views, block_len);
    let block_range = |b: usize| b * block_len..((b + 1) * block_len).min(n);
    let mut written = vec![false; n.div_ceil(block_len)];
    let mut spares: std::collections::HashMap<Slot, Vec<u32>> = Default::default();
    for (b, block) in blocks.iter().enumerate() {
        let mut on_gpu = Vec::new();
        for (r, slice) in block.from_runs.iter().enumerate() {
            let keys = r * run_len + slice.start..r * run_len + slice.end;
            for k in keys.clone() {
                assert!(
                    !written[k / block_len],
                    "block {b} reads key {k} after a write over it"
                );
            }
            on_gpu.extend_from_slice(&buffer[keys]);
        }
        assert_eq!(on_gpu.len(), block_range(b).len());
        on_gpu.sort();
        match block.slot {
            Slot::Buffer(f) => {
                written[f] = true;
                buffer[block_range(f)].copy_from_slice(&on_gpu);
            }
            spare => {
                spares.insert(spare, on_gpu);
            }
        }
    }
    let runs = n.div_ceil(run_len);
    assert!(
        spares.len() <= runs + 1,
        "{} spares for {runs} runs",
        spares.len()
    );
    let slots: Vec<Slot> = blocks.iter().map(|b| b.slot).collect();
    for (from, to) in order_blocks(&slots) {
        let keys = match from {
            Slot::Buffer(f) => buffer[block_range(f)].to_vec(),
            spare => spares.remove(&spare).expect("a block in the spare"),
        };
        match to {
            Slot::Buffer(t) => buffer[block_range(t)].copy_from_slice(&keys),
            spare => {
                assert_eq!(spare, STAGING, "copies to the host go to staging only");
                spares.insert(spare, keys);
            }
        }
    }
    assert!(spares.is_empty(), "every block back in the buffer");
}

#[test]
fn many_runs_merge_through_blocks() {
    for (n, run_len, block_len, distinct) in [
        (1000, 100, 10, u32::MAX),
        (1003, 100, 10, 7),
        (999, 300, 30, 1),
        (64 * 8 + 5, 64, 8, 1000),
        (5000, 1000, 128 - 28, 50),
        (77, 77, 11, 3),
    ] {
        let mut buffer: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2654435761).rotate_left(7) % distinct)
            .collect();
        let mut want = buffer.clone();
        want.sort();
        simulate_blocks(&mut buffer, run_len, block_len);
        assert!(
            buffer == want,
            "{n} keys, runs of {run_len}, blocks of {block_len}"
        );
    }
}

/// Carries out `order_blocks(slots)`: no copy writes a slot that holds a block, every block
/// ends in its place; returns the number of copies.
fn check_order(slots: &[Slot]) -> usize {
    let copies = order_blocks(slots);
    let mut at: std::collections::HashMap<Slot, usize> =
        slots.iter().enumerate().map(|(b, &s)| (s, b)).collect();
    for &(from, to) in &copies {
        assert!(!at.contains_key(&to), "{to:?} overwritten: {slots:?}");
        assert!(matches!(to, Slot::Buffer(_)) || to == STAGING, "{to:?}");
        if to == STAGING {
            assert!(
                matches!(from, Slot::Buffer(_)),
                "only buffer blocks are lifted"
            );
        }
        let b = at
            .remove(&from)
            .expect("a copy from a slot that holds a block");
        at.insert(to, b);
    }
    for b in 0..slots.len() {
        assert_eq!(at.get(&Slot::Buffer(b)), Some(&b), "{slots:?}");
    }
    assert_eq!(at.len(), slots.len(), "nothing left in staging or spares");
    copies.len()
}

#[test]
fn blocks_go_in_order_each_copied_once() {
    // A cycle of two, a chain from a hole (block 4's place) to a spare, a block in place: the
    // cycle's lifted block moves twice, the others once.
    let slots = [
        Slot::Buffer(1),
        Slot::Buffer(0),
        Slot::Spare(0),
        Slot::Buffer(3),
        Slot::Buffer(2),
    ];
    assert_eq!(check_order(&slots), 3 + 1 + 1);
    // Random placements: of n blocks, some written to spares (as many buffer blocks hold
    // none), the rest to the other buffer blocks in any order.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for case in 0..500 {
        let n = 1 + case % 40;
        let spares = next(n.min(6) + 1);
        let mut places: Vec<Slot> = (0..n).map(Slot::Buffer).collect();
        for i in (1..n).rev() {
            places.swap(i, next(i + 1));
        }
        places.truncate(n - spares);
        places.extend((0..spares).map(Slot::Spare));
        for i in (1..n).rev() {
            places.swap(i, next(i + 1));
        }
        let copies = check_order(&places);
        let out_of_place = (0..n).filter(|&b| places[b] != Slot::Buffer(b)).count();
        assert!(copies >= out_of_place, "{places:?}");
        assert!(
            copies <= out_of_place + n / 2,
            "{copies} copies: {places:?}"
        );
    }
}

#[test]
fn plans_say_what_they_need() {
    let info = DeviceInfo::h100();
    let policy = Policy::HOPPER;
    // Fits one sort: one run, no pieces.
    let one = plan_out_of_core(&info, &policy, DType::U32, 1 << 20, 64 << 20).unwrap();
    assert_eq!(one.runs.len(), 1);
    assert_eq!((one.runs[0].clone(), one.merge), (0..1 << 20, Merge::None));
    // 2^32 u32 keys (16 GiB) on a GPU of 20 GiB: every run resident (runs short enough for
    // their sort's workspace beside all the keys).
    let gib = 1usize << 30;
    let resident = plan_out_of_core(&info, &policy, DType::U32, 1 << 32, 20 * gib).unwrap();
    let Merge::Resident {
        piece_len,
        sample_gap,
    } = resident.merge
    else {
        panic!("{:?}", resident.merge)
    };
    assert!(resident.device_bytes <= 20 * gib);
    let capacity = piece_capacity(resident.runs.len(), piece_len, sample_gap);
    let piece_bytes =
        2 * in_memory_bytes(&info, &policy, Items::keys(DType::U32), capacity).unwrap();
    assert!((1 << 32) * 4 + piece_bytes <= 20 * gib, "{resident:?}");
    assert_eq!(resident.host_bytes, 0);
    // Just over the keys' bytes, where the pieces do not fit beside them all: two runs, the
    // resident one and a piece's sort within the budget.
    let len = (5 << 20) + 12_345;
    let budget = len * 4 * 6 / 5;
    let two = plan_out_of_core(&info, &policy, DType::U32, len, budget).unwrap();
    assert_eq!(two.runs.len(), 2);
    assert!(two.device_bytes <= budget);
    let Merge::ResidentRun { piece_len } = two.merge else {
        panic!("{:?}", two.merge)
    };
    assert!(two.runs[1].len() * 4 + piece_len * 4 <= budget);
    assert_eq!(two.host_bytes, 0);
    // The 2^34 (64 GiB) on an 80 GB H100: all resident, 8 runs of 2^31 keys (the most
    // one GPU sort indexes), pieces of 2^28.
    let h100 = 79 * gib;
    let all = plan_out_of_core(&info, &policy, DType::U32, 1 << 34, h100).unwrap();
    assert_eq!(all.runs.len(), 8);
    assert!(all.runs.iter().all(|r| r.len() == 1 << 31));
    assert!(matches!(all.merge, Merge::Resident { piece_len: p, .. } if p == 1 << 28));
    assert!(all.device_bytes <= h100);
    // On a GPU of 40 GiB: merged in blocks of 2^24 through 8 + 1 + 2 host blocks.
    let many = plan_out_of_core(&info, &policy, DType::U32, 1 << 34, 40 * gib).unwrap();
    assert_eq!(many.runs.len(), 8);
    assert_eq!(many.merge, Merge::Blocks { block_len: BLOCK });
    assert_eq!(many.host_bytes, 10 * BLOCK * 4);
    assert!(many.device_bytes <= 40 * gib);
    // Where a shorter sort takes more bytes than a longer one (2^24 u32 keys against
    // 2^24 + 1, whose plan differs): every plan stays within its budget.
    let mut planned = 0;
    for budget in [138_548_088, 138_969_088, 150_000_000, 300_000_000] {
        for len in [1 << 26, 3 << 24, 5 << 24, 40_000_000] {
            match plan_out_of_core(&info, &policy, DType::U32, len, budget) {
                Ok(plan) => {
                    planned += 1;
                    assert!(plan.device_bytes <= budget, "{len}: {plan:?}");
                    for run in &plan.runs {
                        let bytes =
                            in_memory_bytes(&info, &policy, Items::keys(DType::U32), run.len())
                                .unwrap();
                        assert!(bytes <= budget, "{len} in {budget}: {run:?}");
                    }
                }
                Err(Error::DeviceMemory { bytes, .. }) => assert!(bytes > budget),
                Err(other) => panic!("{other}"),
            }
        }
    }
    assert!(planned >= 8, "{planned} plans");
    // A smaller budget: smaller blocks, the spares at most about a sixteenth of the keys.
    let small = plan_out_of_core(&info, &policy, DType::U32, 1 << 30, 100 << 20).unwrap();
    assert!(small.device_bytes <= 100 << 20);
    assert!(
        small.host_bytes <= (1 << 32) / 16 + 4 * BLOCK * 4,
        "{small:?}"
    );
    // A budget below the shortest block's sort: refused, with the bytes that sort needs.
    let refused = plan_out_of_core(&info, &policy, DType::U32, 1 << 30, 200 << 10).unwrap_err();
    let Error::DeviceMemory { bytes, what } = refused else {
        panic!("{refused:?}")
    };
    assert!(bytes > 200 << 10, "{bytes}");
    assert!(what.contains("block"), "{what}");
}
#[test]
fn pairs_past_the_device_merge_in_blocks() {
    let info = DeviceInfo::h100();
    let policy = Policy::HOPPER;
    let len = (1usize << 22) + 7;
    for (dtype, value_bytes) in [
        (DType::U32, 4),
        (DType::F32, 8),
        (DType::U64, 4),
        (DType::U64, 8),
    ] {
        let bytes = len * (dtype.size() + value_bytes);
        // Twice the pairs' bytes: every run resident, within the budget.
        let plan =
            plan_out_of_core_pairs(&info, &policy, (dtype, value_bytes), len, 2 * bytes).unwrap();
        assert!(matches!(plan.merge, Merge::Resident { .. }), "{plan:?}");
        assert!(
            plan.device_bytes <= 2 * bytes && plan.runs.len() >= 2,
            "{plan:?}"
        );
        // Half of them: runs merged in blocks, each step within the budget, the host's
        // blocks about a sixteenth of the pairs.
        let budget = bytes / 2;
        let blocks =
            plan_out_of_core_pairs(&info, &policy, (dtype, value_bytes), len, budget).unwrap();
        let Merge::Blocks { block_len } = blocks.merge else {
            panic!("{blocks:?}")
        };
        assert!(blocks.runs.len() >= 3, "{blocks:?}");
        assert!(blocks.device_bytes <= budget, "{blocks:?}");
        let whole_blocks = blocks.runs[..blocks.runs.len() - 1].iter();
        assert!(whole_blocks.clone().all(|run| run.len() % block_len == 0));
        assert_eq!(blocks.runs.last().unwrap().end, len);
        let items = dtype.size() + value_bytes;
        let spares_and_staging = (blocks.runs.len() + 2) * block_len * items;
        assert_eq!(blocks.host_bytes, spares_and_staging, "{blocks:?}");
        // Too small for one block's sort: refused, saying what is missing.
        let refused = plan_out_of_core_pairs(&info, &policy, (dtype, value_bytes), len, 64 << 10);
        let Err(Error::DeviceMemory { what, bytes }) = refused else {
            panic!("{refused:?}")
        };
        assert!(bytes > 64 << 10, "{bytes}");
        assert!(what.contains(&format!("values of {value_bytes}")), "{what}");
    }
    // Pairs that one sort takes: one run.
    let one = plan_out_of_core_pairs(&info, &policy, (DType::U32, 4), 1 << 20, 1 << 30).unwrap();
    assert_eq!(one.merge, Merge::None);
}
