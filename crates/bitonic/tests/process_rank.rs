//! One rank a process ([`ProcessRank`]): each test starts one thread a rank, each on its own
//! GPU (NCCL takes one communicator a thread, one rank a GPU), all joining one communicator
//! from one unique id as the processes of a torchrun or MPI job would. The parts joined in
//! rank order must equal std's sort and, bit for bit and part for part, the single-process
//! `MultiGpu` partition sort of the same shards.
//!
//! Tests that need more GPUs than the machine has are ignored, unless `BITONIC_REQUIRE_GPUS=N`
//! asks for N of them (then they fail), as in tests/multi_gpu.rs. The constructor's errors
//! are tested everywhere, without a GPU too.

mod common;

use bitonic::cuda::multi::{new_unique_id, DeviceShard, MultiGpu, ProcessRank, NCCL_ID_BYTES};
use bitonic::cuda::Gpu;
use bitonic::key::cmp_keys;
use bitonic::multi::Algorithm;
use bitonic::{Error, Order};
use common::harness::{self, enough_gpus, tests, Needs};
use common::{
    assert_same_bits, make_keys, reference, shard_sets, shards_of, Pattern, TestKey, PATTERNS,
};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

fn main() {
    harness::run(tests![
        Needs::Nothing => bad_ranks_are_errors;
        Needs::NoGpu => without_a_gpu_the_constructor_is_an_error;
        Needs::Gpus(1) => one_process_rank;
        Needs::Gpus(2) =>
            two_process_ranks, a_failing_rank_stops_every_rank, a_callers_communicator;
        Needs::Gpus(4) => four_process_ranks;
    ]);
}

/// Held by each test for its communicators' lifetime: the harness runs tests on several
/// threads, and NCCL communicators of one GPU used at once can deadlock each other.
static ONE_TEST_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock, also after a test that held it failed.
fn one_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_TEST_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A rank never leaves a sort alone: one that panics leaves the others waiting in NCCL, so
/// the test fails after this long instead of hanging.
const DEADLINE: Duration = Duration::from_secs(300);

fn bad_ranks_are_errors() {
    let id = [0u8; NCCL_ID_BYTES];
    for (rank, world_size) in [(2, 2), (0, 0), (5, 3), (0, 1 << 31)] {
        let err = ProcessRank::from_unique_id(&id, rank, world_size, 0).unwrap_err();
        assert!(matches!(err, Error::BadRank { .. }), "{err}");
        assert!(
            err.to_string().contains("from 0 to the world size"),
            "{err}"
        );
    }
}

fn without_a_gpu_the_constructor_is_an_error() {
    let id = [0u8; NCCL_ID_BYTES];
    let err = ProcessRank::from_unique_id(&id, 0, 2, 0).unwrap_err();
    assert!(matches!(err, Error::NoGpu(_)), "{err}");
    // An id needs NCCL, not a GPU: made, or refused with a reason.
    if let Err(err) = new_unique_id() {
        assert!(err.to_string().contains("NCCL"), "{err}");
    }
}

/// What one rank returns of one job: its part's bytes (keys, then values for pairs) and the
/// part lengths the sort reported.
#[derive(Default)]
struct Part {
    keys: Vec<u8>,
    values: Vec<u8>,
    sizes: Vec<usize>,
}

/// One collective call, run by every rank in the same order.
type Job = Arc<dyn Fn(&ProcessRank) -> Part + Send + Sync>;

/// How a rank's thread makes its sorter: from the id, its rank and the world size.
type MakeRank = fn(&[u8; NCCL_ID_BYTES], usize, usize) -> ProcessRank;

/// A rank on GPU `rank`, from the id ([`ProcessRank::from_unique_id`]).
fn rank_from_id(id: &[u8; NCCL_ID_BYTES], rank: usize, p: usize) -> ProcessRank {
    ProcessRank::from_unique_id(id, rank, p, rank).unwrap_or_else(|e| panic!("rank {rank}: {e}"))
}

/// Starts one thread a rank on GPUs `0..p`, each making its `ProcessRank` with `make` from one
/// unique id, makes each run `jobs` in order, and returns each job's parts in rank order.
fn run_ranks(test: &str, p: usize, make: MakeRank, jobs: Vec<Job>) -> Vec<Vec<Part>> {
    let id = new_unique_id().unwrap_or_else(|e| panic!("{test}: {e}"));
    let jobs = Arc::new(jobs);
    let (done, results) = mpsc::channel();
    for rank in 0..p {
        let (jobs, done) = (jobs.clone(), done.clone());
        std::thread::spawn(move || {
            let parts = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let sorter = make(&id, rank, p);
                assert_eq!((sorter.rank(), sorter.world_size()), (rank, p));
                jobs.iter().map(|job| job(&sorter)).collect::<Vec<Part>>()
            }));
            let _ = done.send((rank, parts));
        });
    }
    let start = Instant::now();
    let mut by_rank: Vec<Option<Vec<Part>>> = (0..p).map(|_| None).collect();
    for _ in 0..p {
        let left = DEADLINE.saturating_sub(start.elapsed());
        let (rank, parts) = results
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{test}: the ranks took over {DEADLINE:?}"));
        match parts {
            Ok(parts) => by_rank[rank] = Some(parts),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    let mut by_rank: Vec<_> = by_rank.into_iter().map(Option::unwrap).collect();
    // Transposed: job by job, rank by rank.
    (0..jobs.len())
        .map(|_| by_rank.iter_mut().map(|parts| parts.remove(0)).collect())
        .collect()
}

/// Rank `rank`'s shard of `all` cut into `lens`, on its GPU. CUDA makes no empty buffer: an
/// empty shard is a one-value buffer of which the sort views nothing.
fn upload<T: cudarc::driver::DeviceRepr + bytemuck::Pod>(
    sorter: &ProcessRank,
    all: &[T],
    lens: &[usize],
) -> cudarc::driver::CudaSlice<T> {
    let rank = sorter.rank();
    let start: usize = lens[..rank].iter().sum();
    let shard = &all[start..start + lens[rank]];
    let host = if shard.is_empty() { &all[..1] } else { shard };
    sorter.gpu().stream().clone_htod(host).unwrap()
}

fn download<T: cudarc::driver::DeviceRepr + bytemuck::Pod>(
    sorter: &ProcessRank,
    shard: &DeviceShard<T>,
) -> Vec<u8> {
    let mut host = vec![T::zeroed(); shard.len()];
    if !host.is_empty() {
        let stream = sorter.gpu().stream();
        stream.memcpy_dtoh(&shard.view(), &mut host).unwrap();
        stream.synchronize().unwrap();
    }
    bytemuck::cast_slice(&host).to_vec()
}

/// Values of plain data from their bytes.
fn values_of<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// A keys-only sort of shards of `lens` of `all`, on every rank.
fn sort_job<K: TestKey>(all: Arc<Vec<K>>, lens: Vec<usize>, order: Order, what: String) -> Job {
    Arc::new(move |sorter| {
        let input = upload(sorter, &all, &lens);
        let len = lens[sorter.rank()];
        let sorted = sorter
            .sort(&input.slice(0..len), order)
            .unwrap_or_else(|e| panic!("{what}, rank {}: {e}", sorter.rank()));
        assert_eq!(sorted.keys.len(), sorted.sizes[sorter.rank()], "{what}");
        Part {
            keys: download(sorter, &sorted.keys),
            values: Vec::new(),
            sizes: sorted.sizes,
        }
    })
}

/// A key-value sort of shards of `lens`, on every rank.
fn pairs_job<K: TestKey, V: cudarc::driver::DeviceRepr + bytemuck::Pod + Send + Sync>(
    (keys, values): (Arc<Vec<K>>, Arc<Vec<V>>),
    lens: Vec<usize>,
    order: Order,
    what: String,
) -> Job {
    Arc::new(move |sorter| {
        let (k, v) = (upload(sorter, &keys, &lens), upload(sorter, &values, &lens));
        let len = lens[sorter.rank()];
        let sorted = sorter
            .sort_pairs(&k.slice(0..len), &v.slice(0..len), order)
            .unwrap_or_else(|e| panic!("{what}, rank {}: {e}", sorter.rank()));
        Part {
            keys: download(sorter, &sorted.keys),
            values: download(sorter, &sorted.values),
            sizes: sorted.sizes,
        }
    })
}

/// The single-process sorter's result for the same shards: its parts' bytes and lengths.
fn multi_gpu_parts<T: cudarc::driver::DeviceRepr + bytemuck::Pod>(
    multi: &MultiGpu,
    shards: &[DeviceShard<T>],
) -> (Vec<u8>, Vec<usize>) {
    let mut host = vec![T::zeroed(); shards.iter().map(DeviceShard::len).sum()];
    multi.download(shards, &mut host).unwrap();
    let sizes = shards.iter().map(DeviceShard::len).collect();
    (bytemuck::cast_slice(&host).to_vec(), sizes)
}

/// A job and what its joined parts must be: std's sort, and the single-process sort's bytes
/// and part lengths.
struct Case {
    what: String,
    key_bytes: usize,
    job: Job,
    want_keys: Vec<u8>,
    want_values: Vec<u8>,
    multi: (Vec<u8>, Vec<u8>, Vec<usize>),
}

fn key_case<K: TestKey>(multi: &MultiGpu, lens: &[usize], pattern: Pattern, order: Order) -> Case {
    let n: usize = lens.iter().sum();
    let all = make_keys::<K>(n.max(1), pattern, n as u64 ^ 53);
    let what = format!("{:?} {order:?} shards {lens:?} {pattern:?}", K::DTYPE);
    let buffers = shards_of(multi, &all, lens, all[0]); // `all` holds at least one key
    let views: Vec<_> = buffers
        .iter()
        .zip(lens)
        .map(|(b, &l)| b.slice(0..l))
        .collect();
    let sorted = multi
        .sort_shards(&views, order, Algorithm::Partition)
        .unwrap_or_else(|e| panic!("{what}: MultiGpu: {e}"));
    let (bytes, sizes) = multi_gpu_parts(multi, &sorted);
    let want = reference(&all[..n], order);
    Case {
        key_bytes: std::mem::size_of::<K>(),
        job: sort_job(Arc::new(all), lens.to_vec(), order, what.clone()),
        what,
        want_keys: bytemuck::cast_slice(&want).to_vec(),
        want_values: Vec::new(),
        multi: (bytes, Vec::new(), sizes),
    }
}

/// Pairs whose values are their input positions (as `V`), so that an unstable order shows.
fn pairs_case<K: TestKey, V: cudarc::driver::DeviceRepr + bytemuck::Pod + Send + Sync>(
    multi: &MultiGpu,
    lens: &[usize],
    pattern: Pattern,
    value_of: fn(usize) -> V,
) -> Case {
    let n: usize = lens.iter().sum();
    let keys = make_keys::<K>(n.max(1), pattern, n as u64 ^ 7);
    let values: Vec<V> = (0..n.max(1)).map(value_of).collect();
    let what = format!(
        "{:?} pairs of {} bytes {lens:?} {pattern:?}",
        K::DTYPE,
        std::mem::size_of::<V>()
    );
    let order = Order::Descending;
    let (kb, vb) = (
        shards_of(multi, &keys, lens, keys[0]), // at least one of each
        shards_of(multi, &values, lens, values[0]),
    );
    let kv: Vec<_> = kb.iter().zip(lens).map(|(b, &l)| b.slice(0..l)).collect();
    let vv: Vec<_> = vb.iter().zip(lens).map(|(b, &l)| b.slice(0..l)).collect();
    let (sk, sv) = multi
        .sort_pairs_shards(&kv, &vv, order, Algorithm::Partition)
        .unwrap_or_else(|e| panic!("{what}: MultiGpu: {e}"));
    let ((key_bytes, sizes), (value_bytes, _)) =
        (multi_gpu_parts(multi, &sk), multi_gpu_parts(multi, &sv));
    let mut perm: Vec<usize> = (0..n).collect();
    perm.sort_by(|&a, &b| cmp_keys(&keys[b], &keys[a]));
    let want_keys: Vec<K> = perm.iter().map(|&i| keys[i]).collect();
    let want_values: Vec<V> = perm.iter().map(|&i| values[i]).collect();
    Case {
        key_bytes: std::mem::size_of::<K>(),
        job: pairs_job(
            (Arc::new(keys), Arc::new(values)),
            lens.to_vec(),
            order,
            what.clone(),
        ),
        what,
        want_keys: bytemuck::cast_slice(&want_keys).to_vec(),
        want_values: bytemuck::cast_slice(&want_values).to_vec(),
        multi: (key_bytes, value_bytes, sizes),
    }
}

/// Runs `cases` on `p` process ranks and checks each.
fn check_cases(test: &str, p: usize, cases: Vec<Case>) {
    let jobs = cases.iter().map(|case| case.job.clone()).collect();
    let results = run_ranks(test, p, rank_from_id, jobs);
    for (case, parts) in cases.iter().zip(results) {
        let what = &case.what;
        for part in &parts {
            assert_eq!(
                part.sizes, parts[0].sizes,
                "{what}: every rank reports the same sizes"
            );
        }
        let lens: Vec<usize> = parts
            .iter()
            .map(|part| part.keys.len() / case.key_bytes)
            .collect();
        assert_eq!(parts[0].sizes, lens, "{what}: sizes against the parts");
        assert_eq!(
            parts[0].sizes, case.multi.2,
            "{what}: sizes against MultiGpu"
        );
        let keys: Vec<u8> = parts.iter().flat_map(|part| part.keys.clone()).collect();
        let values: Vec<u8> = parts.iter().flat_map(|part| part.values.clone()).collect();
        assert!(
            keys == case.want_keys,
            "{what}: keys differ from std's sort"
        );
        assert!(
            values == case.want_values,
            "{what}: values differ from std's stable sort"
        );
        assert!(keys == case.multi.0, "{what}: keys differ from MultiGpu's");
        assert!(
            values == case.multi.1,
            "{what}: values differ from MultiGpu's"
        );
    }
}

/// Every key type, pattern and order, and key-value pairs, on `p` ranks against MultiGpu.
fn check_ranks(test: &str, p: usize) {
    let multi =
        MultiGpu::new(&(0..p).collect::<Vec<_>>()).unwrap_or_else(|e| panic!("{test}: {e}"));
    let mut cases = Vec::new();
    for lens in shard_sets(p) {
        for order in [Order::Ascending, Order::Descending] {
            for pattern in PATTERNS {
                cases.push(key_case::<u32>(&multi, &lens, pattern, order));
            }
            cases.push(key_case::<f32>(&multi, &lens, Pattern::Random, order));
            cases.push(key_case::<i64>(&multi, &lens, Pattern::FewDistinct, order));
            cases.push(key_case::<u64>(&multi, &lens, Pattern::AllEqual, order));
            cases.push(key_case::<f64>(&multi, &lens, Pattern::Random, order));
            cases.push(key_case::<i32>(&multi, &lens, Pattern::Sorted, order));
        }
        cases.push(pairs_case::<u32, u32>(
            &multi,
            &lens,
            Pattern::FewDistinct,
            |i| i as u32,
        ));
        cases.push(pairs_case::<f32, u64>(
            &multi,
            &lens,
            Pattern::AllEqual,
            |i| (i as u64) << 33 | 1,
        ));
        // Two sorts, half a value each.
        cases.push(pairs_case::<u64, u64>(
            &multi,
            &lens,
            Pattern::Random,
            |i| (i as u64) << 32 | (i as u64 * 7 + 3),
        ));
        cases.push(pairs_case::<i64, u32>(
            &multi,
            &lens,
            Pattern::FewDistinct,
            |i| i as u32,
        ));
    }
    // Larger shards, different by rank: several tiles and passes in every merge.
    let large: Vec<usize> = (0..p).map(|r| (1 << 20) + r * 12_345).collect();
    cases.push(key_case::<u32>(
        &multi,
        &large,
        Pattern::Random,
        Order::Ascending,
    ));
    cases.push(key_case::<f64>(
        &multi,
        &large,
        Pattern::FewDistinct,
        Order::Descending,
    ));
    cases.push(pairs_case::<u64, u64>(
        &multi,
        &large,
        Pattern::Random,
        |i| (i as u64) << 32 | 5,
    ));
    drop(multi);
    check_cases(test, p, cases);
}

/// A world of one: the length gather alone, then the local sort (no exchange).
fn one_process_rank() {
    let _alone = one_test_at_a_time();
    if enough_gpus("one_process_rank", 1) {
        check_ranks("one_process_rank", 1);
    }
}

fn two_process_ranks() {
    let _alone = one_test_at_a_time();
    if enough_gpus("two_process_ranks", 2) {
        check_ranks("two_process_ranks", 2);
    }
}

fn four_process_ranks() {
    let _alone = one_test_at_a_time();
    if enough_gpus("four_process_ranks", 4) {
        check_ranks("four_process_ranks", 4);
    }
}

/// Asserts that `rank`'s call failed as a sort that rank `left` could not make fails: on
/// `left` with its own error (`own`), on every other rank with `PeerFailed`.
fn assert_left_by(left: usize, rank: usize, result: Result<(), Error>, own: fn(&Error) -> bool) {
    let err = result.expect_err("a rank could not make the sort");
    if rank == left {
        assert!(own(&err), "rank {rank}: {err}");
    } else {
        assert!(matches!(err, Error::PeerFailed), "rank {rank}: {err}");
    }
}

/// A rank whose shard is on another GPU fails with its error, the others with
/// `PeerFailed`, at the same gather; so does a rank whose key or value type the sorts refuse,
/// and a rank that abstains; ranks that call different sorts all fail with `RanksDisagree`;
/// the communicator still works for the next sort.
fn a_failing_rank_stops_every_rank() {
    let _alone = one_test_at_a_time();
    if !enough_gpus("a_failing_rank_stops_every_rank", 2) {
        return;
    }
    let all: Arc<Vec<u32>> = Arc::new(make_keys(50_000, Pattern::Random, 1));
    let lens = vec![30_000, 20_000];
    // Rank 1's shard, on GPU 0, made (and freed, after the ranks) here, outside any
    // collective: a rank thread that opened or closed a context of GPU 0 while rank 0's NCCL
    // kernel ran there waiting for it could deadlock both.
    let elsewhere = Gpu::new(0).unwrap();
    let foreign = Arc::new(elsewhere.stream().clone_htod(&all[30_000..]).unwrap());
    elsewhere.stream().synchronize().unwrap();
    let failing: Job = {
        let (all, lens, foreign) = (all.clone(), lens.clone(), foreign.clone());
        Arc::new(move |sorter| {
            let rank = sorter.rank();
            let uploaded;
            let input = if rank == 1 {
                &*foreign
            } else {
                uploaded = upload(sorter, &all, &lens);
                &uploaded
            };
            let result = sorter.sort(&input.slice(0..lens[rank]), Order::Ascending);
            assert_left_by(1, rank, result.map(drop), |e| {
                matches!(e, Error::WrongDevice { .. })
            });
            Part::default()
        })
    };
    // Ranks that call different sorts (rank 1 descending) all stop at the first gather.
    let disagreeing: Job = {
        let (all, lens) = (all.clone(), lens.clone());
        Arc::new(move |sorter| {
            let rank = sorter.rank();
            let input = upload(sorter, &all, &lens);
            let order = [Order::Ascending, Order::Descending][rank];
            let err = sorter
                .sort(&input.slice(0..lens[rank]), order)
                .expect_err("the ranks called different sorts");
            match err {
                Error::RanksDisagree { ref ranks } => assert_eq!(ranks, &[1], "rank {rank}"),
                other => panic!("rank {rank}: {other}"),
            }
            Part::default()
        })
    };
    // A rank whose key type the sorts refuse (16-bit) reports it at the first gather too,
    // where its peer, calling a sort it takes, learns that it failed.
    let refused: Job = {
        let (all, lens) = (all.clone(), lens.clone());
        Arc::new(move |sorter| {
            let rank = sorter.rank();
            let result = if rank == 0 {
                let narrow: Vec<half::bf16> = all
                    .iter()
                    .map(|&k| half::bf16::from_bits(k as u16))
                    .collect();
                let input = upload(sorter, &narrow, &lens);
                sorter
                    .sort(&input.slice(0..lens[rank]), Order::Ascending)
                    .map(drop)
            } else {
                let input = upload(sorter, &all, &lens);
                sorter
                    .sort(&input.slice(0..lens[rank]), Order::Ascending)
                    .map(drop)
            };
            assert_left_by(0, rank, result, |e| matches!(e, Error::Unsupported(_)));
            // The same for a key-value sort of a value width it refuses (2 bytes).
            let (input, values) = (upload(sorter, &all, &lens), upload(sorter, &all, &lens));
            let len = lens[rank];
            let result = if rank == 1 {
                let narrow = sorter
                    .gpu()
                    .stream()
                    .clone_htod(&vec![0u16; len.max(1)])
                    .unwrap();
                sorter
                    .sort_pairs(
                        &input.slice(0..len),
                        &narrow.slice(0..len),
                        Order::Ascending,
                    )
                    .map(drop)
            } else {
                sorter
                    .sort_pairs(
                        &input.slice(0..len),
                        &values.slice(0..len),
                        Order::Ascending,
                    )
                    .map(drop)
            };
            assert_left_by(1, rank, result, |e| {
                matches!(e, Error::UnsupportedKeyValue { .. })
            });
            Part::default()
        })
    };
    // A rank that failed before it could call the sort (preparing its input, say) abstains:
    // its peer's sort returns `PeerFailed` instead of waiting for it.
    let abstaining: Job = {
        let (all, lens) = (all.clone(), lens.clone());
        Arc::new(move |sorter| {
            let rank = sorter.rank();
            if rank == 1 {
                sorter
                    .abstain()
                    .unwrap_or_else(|e| panic!("rank 1 abstains: {e}"));
            } else {
                let input = upload(sorter, &all, &lens);
                let result = sorter.sort(&input.slice(0..lens[rank]), Order::Ascending);
                assert_left_by(1, rank, result.map(drop), |_| false);
            }
            Part::default()
        })
    };
    let again = sort_job(
        all.clone(),
        lens.clone(),
        Order::Ascending,
        "after a failure".into(),
    );
    let test = "a_failing_rank_stops_every_rank";
    let jobs = vec![failing, disagreeing, refused, abstaining, again];
    let results = run_ranks(test, 2, rank_from_id, jobs);
    let joined: Vec<u8> = results[4]
        .iter()
        .flat_map(|part| part.keys.clone())
        .collect();
    let joined: Vec<u32> = values_of(&joined);
    assert_same_bits(
        &joined,
        &reference(&all, Order::Ascending),
        "after a failure",
    );
}

/// The caller's communicator, on a stream of the caller's own context handle: the sorter's
/// stream and the communicator's are ordered by events.
fn a_callers_communicator() {
    let _alone = one_test_at_a_time();
    if !enough_gpus("a_callers_communicator", 2) {
        return;
    }
    let all: Arc<Vec<f64>> = Arc::new(make_keys(300_001, Pattern::FewDistinct, 2));
    let lens = vec![200_000, 100_001];
    let job = sort_job(
        all.clone(),
        lens,
        Order::Descending,
        "a caller's comm".into(),
    );
    let test = "a_callers_communicator";
    let results = run_ranks(test, 2, rank_from_callers_comm, vec![job]);
    let joined: Vec<u8> = results[0]
        .iter()
        .flat_map(|part| part.keys.clone())
        .collect();
    let joined: Vec<f64> = values_of(&joined);
    assert_same_bits(
        &joined,
        &reference(&all, Order::Descending),
        "a caller's comm",
    );
}

/// A rank on GPU `rank` from a communicator made as a caller makes one: its own context
/// handle (cudarc's event tracking on) and a stream of its own.
fn rank_from_callers_comm(id: &[u8; NCCL_ID_BYTES], rank: usize, p: usize) -> ProcessRank {
    use cudarc::nccl::safe::{Comm, Id};
    let ctx = cudarc::driver::CudaContext::new(rank).unwrap();
    let stream = ctx.new_stream().unwrap();
    ctx.bind_to_thread().unwrap();
    let id = Id::uninit(id.map(|b| b as std::ffi::c_char));
    let comm = Comm::from_rank(stream, rank, p, id).unwrap();
    let sorter = ProcessRank::from_comm(comm).unwrap_or_else(|e| panic!("rank {rank}: {e}"));
    // The communicator goes back to the caller, who may lend it again.
    let comm = sorter.into_comm().expect("not aborted");
    ProcessRank::from_comm(comm).unwrap()
}
