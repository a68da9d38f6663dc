//! Taking the measurements: every implementation at every size, on fresh random keys for
//! every repeat, after a warm-up run that also compiles and loads the kernels.

use super::{summarize, Metric, Row};
use crate::gen::{fill, first_unsorted, Pattern, RandomKey};
use anyhow::{bail, Context as _, Result};
use bitonic::Gpu;
use bitonic::{with_key_type, Backend, DType, Order, SortKey, Sorter, Version};
use cudarc::driver::sys::CUevent_flags;
use rayon::prelude::*;
use std::time::Instant;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Plan {
    pub dtype: DType,
    /// Sizes, as powers of two.
    pub exps: Vec<u32>,
    /// GPU versions (none: no GPU rows).
    pub versions: Vec<Version>,
    /// Also time the host-to-host sort of every GPU version.
    pub end_to_end: bool,
    /// Also time the CPU sorts: bitonic serial and parallel, std and rayon's sort_unstable.
    pub cpu: bool,
    pub repeats: u32,
    pub cpu_repeats: u32,
    /// The serial bitonic network is measured up to 2^serial_max_exp keys and extrapolated
    /// above (it needs minutes at 2^29); such rows are marked `extrapolated`.
    pub serial_max_exp: u32,
    /// The other CPU sorts are measured up to 2^cpu_max_exp keys.
    pub cpu_max_exp: u32,
    pub seed: u64,
    /// Overrides of the GPU's own policy ([`crate::policy`]), for A/B runs; empty: none.
    pub policy: String,
}

/// Who measured what, where: written into every row.
#[derive(Clone, Debug, PartialEq)]
pub struct Provenance {
    pub device: String,
    pub driver: String,
    pub commit: String,
    pub date: String,
}

impl Provenance {
    /// This machine's GPU (or "cpu only"), the commit the binary was built from, and today.
    pub fn here() -> Provenance {
        let (device, driver) = match Gpu::get() {
            Ok(gpu) => {
                let i = gpu.info();
                (
                    i.name.clone(),
                    format!("CUDA {}.{}", i.driver_version.0, i.driver_version.1),
                )
            }
            Err(_) => ("cpu only".into(), String::new()),
        };
        Provenance {
            device,
            driver,
            commit: crate::COMMIT.into(),
            date: today_utc(),
        }
    }
}

/// The measurements `plan` will take, for a progress bar.
pub fn count(plan: &Plan) -> usize {
    let gpu = plan.versions.len() * if plan.end_to_end { 2 } else { 1 };
    let cpu = if plan.cpu { 5 } else { 0 };
    plan.exps.len() * (gpu + cpu) + usize::from(Gpu::get().is_ok())
}

/// Runs the plan; `progress` hears the name of each measurement as it starts.
pub fn run(plan: &Plan, who: &Provenance, progress: &dyn Fn(&str)) -> Result<Vec<Row>> {
    with_key_type!(plan.dtype, K => run_typed::<K>(plan, who, progress))
}

fn run_typed<K: RandomKey>(
    plan: &Plan,
    who: &Provenance,
    progress: &dyn Fn(&str),
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let row = |name: &str, n: usize, metric, times: &mut Vec<f64>, bytes, extrapolated| {
        let (median_ms, min_ms, max_ms) = summarize(times);
        Row {
            name: name.into(),
            device: who.device.clone(),
            driver: who.driver.clone(),
            commit: who.commit.clone(),
            date: who.date.clone(),
            dtype: plan.dtype.name().into(),
            n: n as u64,
            metric,
            median_ms,
            min_ms,
            max_ms,
            repeats: times.len() as u32,
            bytes_moved: bytes,
            extrapolated,
        }
    };
    let gpu = if plan.versions.is_empty() {
        None
    } else {
        Some(crate::gpu()?)
    };
    // The policy of every GPU sort, its overrides checked before anything is measured.
    let policy = gpu
        .map(|gpu| crate::policy::with_overrides(gpu.policy(), &plan.policy))
        .transpose()?;
    if let Some(gpu) = gpu {
        progress("device-to-device copy");
        let words = 1 << 28; // 1 GiB of u32, read once and written once
        let mut times = copy_times(gpu, words, plan.repeats)?;
        let bytes = (2 * words * std::mem::size_of::<u32>()) as u64;
        rows.push(row(
            "memcpy-d2d",
            words,
            Metric::Device,
            &mut times,
            Some(bytes),
            false,
        ));
    }
    for &exp in &plan.exps {
        let n = 1usize << exp;
        let mut host = vec![K::zeroed(); n];
        if let (Some(gpu), Some(policy)) = (gpu, &policy) {
            let mut fresh = FreshKeys::<K>::new(gpu, n, plan.seed)?;
            for &version in &plan.versions {
                let name = format!("bitonic-{version}");
                let sorter = Sorter::new()
                    .gpu(gpu)
                    .backend(Backend::Cuda)
                    .version(version)
                    .policy(policy.clone());
                progress(&format!("{name} device 2^{exp}"));
                let mut times = Vec::new();
                for r in 0..=plan.repeats {
                    fresh.draw(gpu, r as usize)?;
                    let t = time_on_stream(gpu, || {
                        sorter
                            .sort_device(&mut fresh.keys)
                            .map(drop)
                            .map_err(Into::into)
                    })?;
                    if r > 0 {
                        times.push(t); // repeat 0 is the warm-up
                    }
                }
                check_sorted(gpu, &fresh.keys, n, &name)?;
                let bytes = sorter.bytes_moved(n, plan.dtype)?;
                rows.push(row(
                    &name,
                    n,
                    Metric::Device,
                    &mut times,
                    Some(bytes),
                    false,
                ));
                if plan.end_to_end {
                    progress(&format!("{name} end-to-end 2^{exp}"));
                    let mut times = host_times(&mut host, plan, plan.repeats, |keys| {
                        sorter.sort(keys).map(drop).map_err(Into::into)
                    })?;
                    rows.push(row(&name, n, Metric::EndToEnd, &mut times, None, false));
                }
            }
        }
        if plan.cpu {
            let cpu_sorts: [CpuSort<K>; 5] = [
                ("cpu-serial-bitonic", plan.serial_max_exp, |k| {
                    network_sort(k, Backend::CpuNetworkSerial)
                }),
                ("cpu-parallel-bitonic", plan.cpu_max_exp, |k| {
                    network_sort(k, Backend::CpuNetwork)
                }),
                // What Backend::Cpu (and Auto without a GPU) runs: the rayon sort of the keys'
                // ordered words.
                ("bitonic-cpu-fallback", plan.cpu_max_exp, |k| {
                    network_sort(k, Backend::Cpu)
                }),
                ("std-sort_unstable", plan.cpu_max_exp, |k| {
                    k.sort_unstable_by(bitonic::key::cmp_keys)
                }),
                ("rayon-par_sort_unstable", plan.cpu_max_exp, |k| {
                    k.par_sort_unstable_by(bitonic::key::cmp_keys)
                }),
            ];
            for (name, max_exp, sort) in cpu_sorts {
                if exp <= max_exp {
                    progress(&format!("{name} 2^{exp}"));
                    let mut times = host_times(&mut host, plan, plan.cpu_repeats, |k| {
                        sort(k);
                        Ok(())
                    })?;
                    rows.push(row(name, n, Metric::EndToEnd, &mut times, None, false));
                } else if let Some(base) = rows
                    .iter()
                    .rev()
                    .find(|r| r.name == name && !r.extrapolated)
                {
                    rows.push(extrapolate(base, n));
                }
            }
        }
    }
    Ok(rows)
}

/// A timing is only worth keeping if the sort worked: checks the last repeat's output, every
/// row of `row_len` keys (the whole slice for a plain sort).
pub(super) fn check_sorted<K: SortKey>(
    gpu: &Gpu,
    device: &cudarc::driver::CudaSlice<K>,
    row_len: usize,
    what: &str,
) -> Result<()> {
    let keys = gpu
        .stream()
        .clone_dtoh(device)
        .with_context(|| "copying the sorted keys back to check them")?;
    for (r, row) in keys.chunks(row_len.max(1)).enumerate() {
        if let Some(i) = first_unsorted(row, Order::Ascending) {
            bail!(
                "benchmark result is not sorted: {what}: row {r}, keys {i} and {} out of order",
                i + 1
            );
        }
    }
    Ok(())
}

/// A CPU sort in the bench: its name, the largest size it runs at, and the sort.
type CpuSort<K> = (&'static str, u32, fn(&mut [K]));

/// The CPU sort of `backend` on `keys`, ascending.
fn network_sort<K: SortKey>(keys: &mut [K], backend: Backend) {
    Sorter::new()
        .backend(backend)
        .sort(keys)
        .expect("the CPU network cannot fail");
}

/// A network's time grows with its comparator count, n·k(k+1)/4 for n = 2^k: n times its
/// k(k+1)/2 steps.
fn extrapolate(base: &Row, n: usize) -> Row {
    let steps = |n: usize| {
        let k = n.next_power_of_two().trailing_zeros() as f64;
        k * (k + 1.0) / 2.0
    };
    let work = |n: usize| n as f64 * steps(n);
    let scale = work(n) / work(base.n as usize);
    Row {
        n: n as u64,
        median_ms: base.median_ms * scale,
        min_ms: base.min_ms * scale,
        max_ms: base.max_ms * scale,
        extrapolated: true,
        ..base.clone()
    }
}

/// Host-clock times of `sort` on fresh random keys, after one warm-up.
fn host_times<K: RandomKey>(
    keys: &mut [K],
    plan: &Plan,
    repeats: u32,
    mut sort: impl FnMut(&mut [K]) -> Result<()>,
) -> Result<Vec<f64>> {
    let mut times = Vec::new();
    for r in 0..=repeats {
        fill(keys, Pattern::Random, plan.seed + 1000 + r as u64);
        let start = Instant::now();
        sort(keys)?;
        if r > 0 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(times)
}

/// Fresh random keys on the device for every repeat, placed where the peers place theirs.
///
/// The peers draw their keys on the device just before the timed call (torch's `randn`, the
/// CUB programs' `fill_random`), so the call is queued behind device work, and its launch
/// overlaps that work. Ours are drawn on the host (one seeded generator for every key type and
/// pattern) before any timing, a few sets of them uploaded once, and each repeat copies the
/// next set on the device into `keys` just before the timed call: the same place on the
/// stream, without a generator kernel of our own, and with no work of the bench's on the host
/// between repeats. (Until step 17 of docs/notes/topk.md every repeat drew its keys on the
/// host, on every core, and uploaded them from pageable memory right before the call: the
/// calls shortest on the GPU took longer to queue after that work.)
pub(super) struct FreshKeys<K: SortKey> {
    /// The sets of keys, on the host and on the device.
    host: Vec<Vec<K>>,
    sets: Vec<cudarc::driver::CudaSlice<K>>,
    /// The set the last `draw` copied.
    last: usize,
    pub keys: cudarc::driver::CudaSlice<K>,
}

impl<K: RandomKey> FreshKeys<K> {
    /// The device memory the sets may take: 2 to 4 sets, so that each repeat's keys differ from
    /// the repeat's before.
    const SETS_BYTES: usize = 4 << 30;

    /// Sets of `n` random keys drawn from `seed` on, on the host and on the device, and room
    /// for `n` keys more on the device.
    pub fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let count = (Self::SETS_BYTES / (n.max(1) * std::mem::size_of::<K>())).clamp(2, 4);
        let stream = gpu.stream();
        let mut host = Vec::with_capacity(count);
        let mut sets = Vec::with_capacity(count);
        for i in 0..count {
            let mut keys = vec![K::zeroed(); n];
            fill(&mut keys, Pattern::Random, seed + i as u64);
            sets.push(
                stream
                    .clone_htod(&keys)
                    .with_context(|| format!("uploading {n} keys"))?,
            );
            host.push(keys);
        }
        let keys = stream
            .clone_htod(&host[0])
            .with_context(|| format!("allocating {n} more keys"))?;
        Ok(FreshKeys {
            host,
            sets,
            last: 0,
            keys,
        })
    }

    /// Queues the copy of repeat `repeat`'s set into `keys`, the last work on the stream
    /// before the caller's.
    pub fn draw(&mut self, gpu: &Gpu, repeat: usize) -> Result<()> {
        self.last = repeat % self.sets.len();
        gpu.stream()
            .memcpy_dtod(&self.sets[self.last], &mut self.keys)
            .context("copying keys on the device")
    }

    /// The keys of the last draw.
    pub fn host(&self) -> &[K] {
        &self.host[self.last]
    }
}

/// A device copy queued before a timed call keeps the GPU busy while the host queues the
/// call's launches, so that the events around the call time the GPU's work alone: 2 x 256 MiB
/// moved, ~0.2 ms at the copy ceiling, more than the host takes to queue a call.
pub(super) struct GpuBusy {
    from: cudarc::driver::CudaSlice<u8>,
    to: cudarc::driver::CudaSlice<u8>,
}

impl GpuBusy {
    const BYTES: usize = 256 << 20;

    pub fn new(gpu: &Gpu) -> Result<Self> {
        let stream = gpu.stream();
        Ok(GpuBusy {
            from: stream
                .alloc_zeros(Self::BYTES)
                .context("allocating a busy copy")?,
            to: stream
                .alloc_zeros(Self::BYTES)
                .context("allocating a busy copy")?,
        })
    }

    /// Queues the copy on the GPU's stream.
    pub fn queue(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.stream()
            .memcpy_dtod(&self.from, &mut self.to)
            .context("queueing a busy copy")
    }
}

/// Milliseconds between CUDA events recorded before and after the work `queue` puts on the
/// GPU's stream.
pub(super) fn time_on_stream(gpu: &Gpu, queue: impl FnOnce() -> Result<()>) -> Result<f64> {
    let ctx = gpu.context();
    let start = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .with_context(|| "creating an event")?;
    let end = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .with_context(|| "creating an event")?;
    start
        .record(gpu.stream())
        .with_context(|| "recording an event")?;
    queue()?;
    end.record(gpu.stream())
        .with_context(|| "recording an event")?;
    end.synchronize()
        .with_context(|| "waiting for the timed work")?;
    let ms = start
        .elapsed_ms(&end)
        .map(f64::from)
        .with_context(|| "reading the event timer")?;
    Ok(ms)
}

/// Times a device-to-device copy of `n` u32 words: the bandwidth ceiling (read + write).
fn copy_times(gpu: &Gpu, n: usize, repeats: u32) -> Result<Vec<f64>> {
    let stream = gpu.stream();
    let src = stream
        .alloc_zeros::<u32>(n)
        .with_context(|| "allocating the copy source")?;
    let mut dst = stream
        .alloc_zeros::<u32>(n)
        .with_context(|| "allocating the copy target")?;
    let mut times = Vec::new();
    for r in 0..=repeats {
        let t = time_on_stream(gpu, || {
            stream
                .memcpy_dtod(&src, &mut dst)
                .with_context(|| "copying")
        })?;
        if r > 0 {
            times.push(t);
        }
    }
    Ok(times)
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Howard Hinnant's days-to-civil conversion.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
