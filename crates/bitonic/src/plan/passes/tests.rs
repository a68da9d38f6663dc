//! The tuned passes' plans: their modules, their pass counts, and a model of the kernel that
//! sorts with them on the CPU.

use super::*;

fn shape(tile_bits: u32, cluster_bits: u32) -> TunedShape {
    TunedShape {
        tile_bits,
        threads: 1 << (tile_bits - 5),
        cluster_bits,
    }
}

/// The network's steps of stages `from .. log_p`, as (stage, bit).
fn network_steps(from: u32, log_p: u32) -> Vec<(u32, u32)> {
    (from..log_p)
        .flat_map(|b| (0..=b).rev().map(move |g| (b, g)))
        .collect()
}

/// The module of the tuned passes over `layout` of words of `word_bytes` on `info`'s device.
fn tuned_module(
    info: &DeviceInfo,
    policy: &Policy,
    word_bytes: usize,
    layout: &RowLayout,
) -> &'static KernelModule {
    let (kernel, shape) = tuned_plan(info, policy, word_bytes, layout);
    kernel.module(shape.tile_bits)
}

fn h100() -> DeviceInfo {
    DeviceInfo::h100()
}

#[test]
fn each_input_names_a_module_of_its_tile() {
    let (info, policy) = (h100(), Policy::HOPPER);
    let module = |bytes, n, row_len| {
        let m = tuned_module(&info, &policy, bytes, &RowLayout::rows(n, row_len));
        m.name()
    };
    // Large arrays, and many rows, take the policy's full tiles; a small array the narrow
    // u32 kernel's smaller tiles (spread over a cluster).
    assert_eq!(module(4, 1 << 24, 1 << 24), "tuned.cu[u32, 2^14]");
    assert_eq!(module(8, 1 << 24, 1 << 24), "tuned.cu[u64, 2^13]");
    assert_eq!(module(16, 1 << 24, 1 << 24), "tuned.cu[kv64, 2^12]");
    assert_eq!(module(4, 1 << 15, 1 << 15), "tuned.cu[u32_narrow, 2^12]");
    assert_eq!(module(4, 4096 * 257, 4096), "tuned.cu[u32, 2^14]");
    // 8-byte rows of half a tile (a u64 merge sort's runs past 2^21 keys) get a tile each;
    // shorter ones share tiles, and u32 rows of half a tile do too.
    assert_eq!(module(8, 1 << 24, 1 << 12), "tuned.cu[u64, 2^12]");
    assert_eq!(module(8, 1 << 24, 1 << 11), "tuned.cu[u64, 2^13]");
    assert_eq!(module(4, 1 << 24, 1 << 13), "tuned.cu[u32, 2^14]");
    let mut shared = Policy::HOPPER;
    shared.sort.wide_half_tiles = false;
    let m = tuned_module(&info, &shared, 8, &RowLayout::rows(1 << 24, 1 << 12));
    assert_eq!(m.name(), "tuned.cu[u64, 2^13]");
    // Every length and row length, every word, maps to a module whose tile the kernel
    // has (Tuned::module panics otherwise), for the policy and for a big-tile one.
    let mut big_tiles = Policy::HOPPER;
    big_tiles.sort.tile_bytes = 1 << 20;
    for policy in [Policy::HOPPER, Policy::AMPERE, big_tiles] {
        for bytes in [4, 8, 16] {
            for log_n in 1..=29 {
                for row_bits in 1..=log_n {
                    let layout = RowLayout::rows(1 << log_n, 1 << row_bits);
                    let (kernel, shape) = tuned_plan(&info, &policy, bytes, &layout);
                    assert_eq!(
                        kernel.module(shape.tile_bits).tile_bits,
                        Some(shape.tile_bits)
                    );
                }
            }
        }
    }
}

#[test]
fn tuned_pass_counts_for_2_pow_29() {
    // (block tile bits, cluster bits) -> passes: 2^15 and the default 2^14 tiles in the
    // cheapest windowed plan (37 passes stage by stage); 2^14 tiles in clusters of 8
    // blocks (2^17 keys a contiguous pass) and of 16 (2^18), which plan stage by stage.
    for (tile_bits, cluster_bits, count) in [(15, 0, 28), (14, 0, 31), (14, 3, 28), (14, 4, 25)] {
        let shape = shape(tile_bits, cluster_bits);
        let passes = tuned_passes(&shape, 1 << 29);
        assert_eq!(passes.len(), count, "{shape:?}");
        // The tile sort runs every stage a contiguous pass holds; the later passes run
        // every later step once, in order.
        assert_eq!(passes[0].b_last, shape.merge_bits() - 1);
        let steps: Vec<_> = passes[1..].iter().flat_map(TunedPass::steps).collect();
        assert_eq!(steps, network_steps(shape.merge_bits(), 29), "{shape:?}");
        // A strided pass's steps lie in its tile: in its columns or its row bits.
        for p in passes.iter().filter(|p| !p.is_contiguous()) {
            for (_, g) in p.steps() {
                assert!(
                    g < p.col_bits || g >= p.lo,
                    "bit {g} between the rows of {p:?}"
                );
                assert!(p.tile_bit(g) < tile_bits, "bit {g} above the tile of {p:?}");
            }
        }
    }
}

/// kernels/tuned.cu's pass on the CPU: each block gathers its tile through the kernel's
/// index map (rows, mid bits, the mirrored rows of a pass in which a stage starts), runs
/// the pass's steps on tile indices, and scatters the tile back.
fn model_pass(keys: &mut [u32], shape: &TunedShape, p: &TunedPass) {
    let tile_bits = if p.is_contiguous() {
        shape.merge_bits()
    } else {
        shape.tile_bits
    };
    let stage_start = if p.hi_first == p.b_first {
        Some(p.b_first)
    } else {
        (p.b_last > p.b_first).then_some(p.b_last)
    };
    let mirror_row_bit = stage_start
        .filter(|_| !p.is_contiguous())
        .map(|s| p.tile_bit(s) - p.col_bits);
    let mid_bits = p.lo - p.col_bits;
    let global_index = |block: usize, i: usize| -> usize {
        if p.is_contiguous() {
            return block << tile_bits | i;
        }
        let (col, row) = (i & ((1 << p.col_bits) - 1), i >> p.col_bits);
        let (mut mid, high) = (block & ((1 << mid_bits) - 1), block >> mid_bits);
        if mirror_row_bit.is_some_and(|bit| row >> bit & 1 == 1) {
            mid ^= (1 << mid_bits) - 1;
        }
        high << (p.lo + tile_bits - p.col_bits) | row << p.lo | mid << p.col_bits | col
    };
    for block in 0..keys.len() >> tile_bits {
        let at: Vec<usize> = (0..1 << tile_bits)
            .map(|i| global_index(block, i))
            .collect();
        let mut tile: Vec<u32> = at.iter().map(|&g| keys[g]).collect();
        for (b, g) in p.steps() {
            let tb = p.tile_bit(g);
            for i in (0..tile.len()).filter(|i| i >> tb & 1 == 0) {
                let j = if g == b {
                    i ^ ((2 << tb) - 1)
                } else {
                    i | 1 << tb
                };
                if tile[i] > tile[j] {
                    tile.swap(i, j);
                }
            }
        }
        for (&g, key) in at.iter().zip(tile) {
            keys[g] = key;
        }
    }
}

#[test]
fn tuned_plans_sort_on_the_model() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(29);
    // Small tiles give long plans on small inputs: every kind of pass, windows of every
    // width, stages needing one to several strided passes.
    for (tile_bits, cluster_bits) in [(6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (7, 2), (8, 1)] {
        let shape = shape(tile_bits, cluster_bits);
        for log_n in 1..=15 {
            let mut keys: Vec<u32> = (0..1 << log_n).map(|_| rng.random_range(0..1000)).collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            let passes = tuned_passes(&shape, keys.len());
            let steps: Vec<_> = passes[1..].iter().flat_map(TunedPass::steps).collect();
            assert_eq!(
                steps,
                network_steps(shape.merge_bits(), log_n),
                "{shape:?} 2^{log_n}"
            );
            // Slots past the keys hold +inf, as the kernel's padding does.
            keys.resize(keys.len().max(1 << shape.merge_bits()), u32::MAX);
            for p in &passes {
                model_pass(&mut keys, &shape, p);
            }
            keys.truncate(expected.len());
            assert!(keys == expected, "{shape:?}, 2^{log_n} keys: {passes:?}");
        }
    }
}
