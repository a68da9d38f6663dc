//! Criterion benches of the CPU paths: the serial network, the rayon network, the CPU
//! fallback (`Backend::Cpu`), and std's
//! `sort_unstable` / rayon's `par_sort_unstable` as baselines. GPU timings come from
//! `bitonic bench` on a GPU host, not from here.

use bitonic::{Backend, Sorter};
use bitonic_bench::gen::{generate, Pattern};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;

fn cpu_sorts(c: &mut Criterion) {
    let mut group = c.benchmark_group("u32 random");
    group.sample_size(10);
    for exp in [12u32, 16, 20] {
        let len = 1usize << exp;
        let keys = generate::<u32>(len, Pattern::Random, exp as u64);
        group.throughput(Throughput::Elements(len as u64));
        let mut bench = |name: &str, sort: &dyn Fn(&mut Vec<u32>)| {
            group.bench_with_input(
                BenchmarkId::new(name, format!("2^{exp}")),
                &keys,
                |b, keys| b.iter_batched_ref(|| keys.clone(), |v| sort(v), BatchSize::LargeInput),
            );
        };
        bench("bitonic cpu-network-serial", &|v| {
            Sorter::new()
                .backend(Backend::CpuNetworkSerial)
                .sort(v)
                .unwrap();
        });
        bench("bitonic cpu-network", &|v| {
            Sorter::new().backend(Backend::CpuNetwork).sort(v).unwrap();
        });
        bench("bitonic cpu (the fallback)", &|v| {
            Sorter::new().backend(Backend::Cpu).sort(v).unwrap();
        });
        bench("std sort_unstable", &|v| v.sort_unstable());
        bench("rayon par_sort_unstable", &|v| v.par_sort_unstable());
    }
    group.finish();
}

criterion_group!(benches, cpu_sorts);
criterion_main!(benches);
