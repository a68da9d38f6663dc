//! Kernel packs (`bitonic::cuda::build_pack`, `use_pack`): kernels compiled ahead of time and
//! handed to the library, so that a first use on a packed architecture compiles nothing
//! (issue: first use; the Python wheel embeds one, python/build.rs).

mod common;

use bitonic::cuda::{self, CompileEvent, Origin};
use bitonic::{Policy, Sorter};
use common::harness::{self, tests, Needs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn main() {
    harness::run(tests![
        Needs::Nvrtc => a_pack_serves_its_architectures_and_their_later_minors;
        Needs::Gpu => with_a_pack_a_first_use_compiles_nothing
    ]);
}

/// The tests change the process's cache folder and packs: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

static COMPILES: AtomicUsize = AtomicUsize::new(0);

fn count_compiles() {
    cuda::on_compile(|event| {
        if let CompileEvent::Started { .. } = event {
            COMPILES.fetch_add(1, Ordering::SeqCst);
        }
    });
}

fn a_pack_serves_its_architectures_and_their_later_minors() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let modules = cuda::kernel_modules();
    let pack = cuda::build_pack(&["sm_80", "sm_90"]).unwrap_or_else(|e| panic!("{e}"));
    let held = cuda::use_pack(pack).unwrap();
    assert_eq!(held.archs, ["sm_80", "sm_90"]);
    assert_eq!(held.cubin_count, 2 * modules.len());

    count_compiles();
    let before = COMPILES.load(Ordering::SeqCst);
    for &module in modules {
        // An sm_86 (A10, A40) runs sm_80's CUBIN, the very one the pack was built with.
        let later_minor = cuda::compile(module, "sm_86", &Policy::AMPERE).unwrap();
        assert_eq!(
            later_minor.origin,
            Origin::Precompiled,
            "{}",
            later_minor.name
        );
        let own = cuda::compile(module, "sm_80", &Policy::AMPERE).unwrap();
        assert_eq!(own.cubin, later_minor.cubin, "{}", own.name);
    }
    assert_eq!(COMPILES.load(Ordering::SeqCst), before, "nothing compiled");
    // Sources or numbers the pack was not built from are not found in it: another policy's
    // defines compile as before (the smallest module, to keep this quick).
    let mut other = Policy::AMPERE;
    other.merge.tile *= 2;
    let smallest = modules.iter().min_by_key(|m| m.source.len()).unwrap();
    let compiled = cuda::compile(smallest, "sm_86", &other).unwrap();
    assert_ne!(compiled.origin, Origin::Precompiled, "{}", compiled.name);
    // Bytes that are not a pack are refused, and change nothing.
    assert!(cuda::use_pack(b"BTNPACK1\x01\x00\x00\x00".as_slice()).is_err());
    assert!(cuda::use_pack(Vec::from(&b"not a pack"[..])).is_err());
}

fn with_a_pack_a_first_use_compiles_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu("with_a_pack_a_first_use_compiles_nothing");
    let arch = gpu.info().arch();
    // The pack is built from the usual cache (build_pack leaves this process's modules
    // alone, so the sorts below find nothing compiled before them); the sorts then run with
    // an empty cache, where a compiled module would be written.
    let pack = cuda::build_pack(&[arch.as_str()]).unwrap_or_else(|e| panic!("{e}"));
    cuda::use_pack(pack).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let cache_before = std::env::var_os("BITONIC_CACHE_DIR");
    std::env::set_var("BITONIC_CACHE_DIR", empty.path());
    count_compiles();
    let before = COMPILES.load(Ordering::SeqCst);

    let sorter = Sorter::new();
    let mut keys: Vec<u32> = (0..(1u32 << 22) + 7).rev().collect();
    sorter.sort(&mut keys).unwrap();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    let mut wide: Vec<f64> = (0..300_001).map(|i| ((i * 7919) % 1009) as f64).collect();
    sorter.sort(&mut wide).unwrap();
    assert!(wide.windows(2).all(|w| w[0] <= w[1]));
    let (rows, row_len, k) = (64, 32_768, 50);
    let scores: Vec<f32> = (0..rows * row_len)
        .map(|i| ((i as u64 * 2_654_435_761) % 100_003) as f32)
        .collect();
    let (mut values, mut indices) = (vec![0f32; rows * k], vec![0u32; rows * k]);
    let largest = Sorter::new().order(bitonic::Order::Descending);
    largest
        .topk_rows(&scores, &mut values, &mut indices, row_len, k)
        .unwrap();
    for (row, top) in values.chunks(k).enumerate() {
        let mut expected = scores[row * row_len..(row + 1) * row_len].to_vec();
        expected.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(top, &expected[..k], "row {row}");
    }
    let compiled = COMPILES.load(Ordering::SeqCst) - before;
    let written = std::fs::read_dir(empty.path()).unwrap().count();
    match cache_before {
        Some(dir) => std::env::set_var("BITONIC_CACHE_DIR", dir),
        None => std::env::remove_var("BITONIC_CACHE_DIR"),
    }
    assert_eq!(compiled, 0, "modules compiled");
    assert_eq!(written, 0, "files written to the empty cache");
}
