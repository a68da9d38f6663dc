//! A first GPU use compiles what its sort runs in `Sorter::prepare`, and nothing during the
//! sort: the time a program reports for a sort is the sort's (issue: first use in seconds).
//! Runs with an empty kernel cache of its own, so every module really compiles.

mod common;

use bitonic::cuda::{self, CompileEvent};
use bitonic::half::{bf16, f16};
use bitonic::plan::{Layout, Operation};
use bitonic::{SortKey, Sorter};
use common::harness::{self, tests, Needs};
use std::sync::atomic::{AtomicUsize, Ordering};

fn main() {
    harness::run(tests![Needs::Gpu => the_sort_after_prepare_compiles_nothing]);
}

static COMPILES: AtomicUsize = AtomicUsize::new(0);

fn compiles() -> usize {
    COMPILES.load(Ordering::SeqCst)
}

/// Prepares `operation` on keys `K`, then runs `sort`: no module may compile during the sort.
fn prepared<K: SortKey>(
    what: &str,
    (operation, len, layout): (Operation, usize, Layout),
    sort: impl FnOnce(),
) {
    let before = compiles();
    Sorter::new()
        .prepare(operation, K::DTYPE, len, layout)
        .unwrap();
    let prepared = compiles();
    sort();
    assert_eq!(
        compiles(),
        prepared,
        "{what}: the sort compiled a module prepare() did not ({} compiled by prepare)",
        prepared - before
    );
}

fn the_sort_after_prepare_compiles_nothing() {
    common::gpu("the_sort_after_prepare_compiles_nothing");
    let cache = tempfile::tempdir().unwrap();
    // Before any compile in this process (the only test of this file).
    std::env::set_var("BITONIC_CACHE_DIR", cache.path());
    cuda::on_compile(|event| {
        if let CompileEvent::Started { .. } = event {
            COMPILES.fetch_add(1, Ordering::SeqCst);
        }
    });
    let sorter = Sorter::new();
    for len in [1 << 16, 100_003, 1 << 20, (1 << 22) + 5, 1 << 24] {
        let mut keys: Vec<u32> = (0..len as u32).rev().collect();
        prepared::<u32>("u32 sort", (Operation::Sort, len, Layout::Whole), || {
            sorter.sort(&mut keys).unwrap();
        });
        let mut wide: Vec<f64> = (0..len).map(|i| (i % 977) as f64).collect();
        prepared::<f64>("f64 sort", (Operation::Sort, len, Layout::Whole), || {
            sorter.sort(&mut wide).unwrap();
        });
        // 16-bit keys sort as u32 words, widened and narrowed on the GPU.
        let mut halves: Vec<f16> = (0..len).map(|i| f16::from_f32((i % 983) as f32)).collect();
        prepared::<f16>("f16 sort", (Operation::Sort, len, Layout::Whole), || {
            sorter.sort(&mut halves).unwrap();
        });
        let floats: Vec<f32> = (0..len).map(|i| (i % 1013) as f32).collect();
        let mut indices = vec![0u32; len];
        prepared::<f32>(
            "f32 argsort",
            (Operation::Argsort { index_bytes: 4 }, len, Layout::Whole),
            || {
                sorter.argsort(&floats, &mut indices).unwrap();
            },
        );
    }
    let row_len = 4096;
    let len = row_len * 257;
    let mut rows: Vec<f32> = (0..len).map(|i| ((i * 7919) % 10007) as f32).collect();
    prepared::<f32>(
        "f32 rows",
        (Operation::Sort, len, Layout::Rows { row_len }),
        || {
            sorter.sort_rows(&mut rows, row_len).unwrap();
        },
    );
    let wide: Vec<i64> = (0..len as i64).map(|i| (i * 7919) % 10007).collect();
    let mut indices = vec![0u32; len];
    prepared::<i64>(
        "i64 row argsort",
        (
            Operation::Argsort { index_bytes: 4 },
            len,
            Layout::Rows { row_len },
        ),
        || {
            sorter.argsort_rows(&wide, &mut indices, row_len).unwrap();
        },
    );
    let logits: Vec<bf16> = (0..len)
        .map(|i| bf16::from_f32((i % 4099) as f32))
        .collect();
    let mut indices = vec![0u32; len];
    prepared::<bf16>(
        "bf16 row argsort",
        (
            Operation::Argsort { index_bytes: 4 },
            len,
            Layout::Rows { row_len },
        ),
        || {
            sorter.argsort_rows(&logits, &mut indices, row_len).unwrap();
        },
    );
    let mut keys: Vec<u32> = (0..len as u32).rev().collect();
    let mut values: Vec<u64> = (0..len as u64).collect();
    prepared::<u32>(
        "u32 -> u64 key-value",
        (Operation::SortPairs { value_bytes: 8 }, len, Layout::Whole),
        || {
            sorter.sort_pairs(&mut keys, &mut values).unwrap();
        },
    );
    assert!(
        compiles() > 0,
        "an empty cache compiled nothing: the check saw no compile"
    );
}
