//! Calls in a caller's hot loop (issue 50): device buffers on the caller's own stream, with the
//! caller's workspace (so the calls allocate nothing), indices of every width, and the calls
//! captured into a CUDA graph on that stream and replayed on new keys copied into the same
//! buffers: each replay gives the CPU's answers.

mod common;

use bitonic::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use bitonic::cudarc::driver::{CudaSlice, CudaStream};
use bitonic::plan::{Layout, Operation};
use bitonic::{DType, DeviceWorkspace, Gpu, Order, Sorter};
use common::harness::{self, tests, Needs};
use common::{make_keys, Pattern};
use std::sync::Arc;

fn main() {
    harness::run(tests![
        Needs::Gpu => calls_on_the_callers_stream_with_its_workspace, calls_captured_into_a_graph;
    ]);
}

/// The shapes of one round: (rows, row length, k).
const SHAPES: [(usize, usize, usize); 3] = [(1, 1 << 21, 50), (64, 1000, 8), (16, 32_768, 100)];

/// The device buffers of one shape: keys sorted in place (a copy per operation) and outputs.
struct Buffers {
    rows: usize,
    row_len: usize,
    k: usize,
    sorted: CudaSlice<f32>,
    argsorted: CudaSlice<f32>,
    indices: CudaSlice<i64>,
    keys: CudaSlice<f32>,
    best: CudaSlice<f32>,
    best_at: CudaSlice<u64>,
}

impl Buffers {
    fn new(stream: &Arc<CudaStream>, (rows, row_len, k): (usize, usize, usize)) -> Buffers {
        let n = rows * row_len;
        Buffers {
            rows,
            row_len,
            k,
            sorted: stream.alloc_zeros(n).unwrap(),
            argsorted: stream.alloc_zeros(n).unwrap(),
            indices: stream.alloc_zeros(n).unwrap(),
            keys: stream.alloc_zeros(n).unwrap(),
            best: stream.alloc_zeros(rows * k).unwrap(),
            best_at: stream.alloc_zeros(rows * k).unwrap(),
        }
    }

    /// Copies `keys` into the three key buffers, on `stream`.
    fn fill(&mut self, stream: &Arc<CudaStream>, keys: &[f32]) {
        stream.memcpy_htod(keys, &mut self.sorted).unwrap();
        stream.memcpy_htod(keys, &mut self.argsorted).unwrap();
        stream.memcpy_htod(keys, &mut self.keys).unwrap();
    }

    /// Queues the three calls with `sorter` (its stream and workspace).
    fn queue(&mut self, sorter: &Sorter<'_>) {
        let (row_len, k) = (self.row_len, self.k);
        sorter.sort_rows_device(&mut self.sorted, row_len).unwrap();
        sorter
            .argsort_rows_device(&mut self.argsorted, &mut self.indices, row_len)
            .unwrap();
        sorter
            .clone()
            .order(Order::Descending)
            .topk_rows_device(&self.keys, &mut self.best, &mut self.best_at, row_len, k)
            .unwrap();
    }

    /// Checks the results against the CPU's for `keys`, after `stream` has finished.
    fn check(&self, stream: &Arc<CudaStream>, keys: &[f32], what: &str) {
        stream.synchronize().unwrap();
        let cpu = Sorter::new().backend(bitonic::Backend::Cpu);
        let (rows, row_len, k) = (self.rows, self.row_len, self.k);
        let mut want = keys.to_vec();
        cpu.sort_rows(&mut want, row_len).unwrap();
        common::assert_same_bits(&stream.clone_dtoh(&self.sorted).unwrap(), &want, what);
        let mut want_at = vec![0i64; keys.len()];
        cpu.argsort_rows(keys, &mut want_at, row_len).unwrap();
        assert_eq!(
            stream.clone_dtoh(&self.indices).unwrap(),
            want_at,
            "{what}: argsort"
        );
        let (mut best, mut best_at) = (vec![0f32; rows * k], vec![0u64; rows * k]);
        cpu.order(Order::Descending)
            .topk_rows(keys, &mut best, &mut best_at, row_len, k)
            .unwrap();
        assert_eq!(
            stream.clone_dtoh(&self.best_at).unwrap(),
            best_at,
            "{what}: top-k"
        );
        common::assert_same_bits(&stream.clone_dtoh(&self.best).unwrap(), &best, what);
    }
}

/// The caller's workspace: the most any call below plans for.
fn workspace(gpu: &Gpu, stream: &Arc<CudaStream>) -> DeviceWorkspace {
    let sorter = Sorter::new().gpu(gpu);
    let mut bytes = 0;
    for (rows, row_len, k) in SHAPES {
        let n = rows * row_len;
        let layout = Layout::Rows { row_len };
        for operation in [
            Operation::Sort,
            Operation::Argsort { index_bytes: 8 },
            Operation::Topk { k, index_bytes: 8 },
        ] {
            let sorter = match operation {
                Operation::Topk { .. } => sorter.clone().order(Order::Descending),
                _ => sorter.clone(),
            };
            let plan = sorter
                .prepare(operation, DType::F32, n, layout.clone())
                .unwrap();
            bytes = bytes.max(plan.workspace_bytes());
        }
    }
    DeviceWorkspace::new(stream.alloc_zeros::<u8>(bytes.max(1)).unwrap())
}

fn calls_on_the_callers_stream_with_its_workspace() {
    let gpu = common::gpu("calls_on_the_callers_stream_with_its_workspace");
    let stream = gpu.context().new_stream().unwrap();
    let ws = workspace(gpu, &stream);
    let sorter = Sorter::new().gpu(gpu).stream(&stream).workspace(&ws);
    for (j, shape) in SHAPES.into_iter().enumerate() {
        let mut b = Buffers::new(&stream, shape);
        let keys: Vec<f32> = make_keys(shape.0 * shape.1, Pattern::FewDistinct, j as u64);
        b.fill(&stream, &keys);
        b.queue(&sorter);
        b.check(&stream, &keys, &format!("{shape:?} on the caller's stream"));
    }
}

fn calls_captured_into_a_graph() {
    let gpu = common::gpu("calls_captured_into_a_graph");
    let stream = gpu.context().new_stream().unwrap();
    let ws = workspace(gpu, &stream);
    let sorter = Sorter::new().gpu(gpu).stream(&stream).workspace(&ws);
    for (j, shape) in SHAPES.into_iter().enumerate() {
        let mut b = Buffers::new(&stream, shape);
        // Warm up outside the capture (the kernels are loaded by `workspace`'s prepare).
        stream.synchronize().unwrap();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        b.queue(&sorter);
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("the capture holds the calls");
        for round in 0..3u64 {
            let pattern =
                [Pattern::Random, Pattern::FewDistinct, Pattern::Reversed][round as usize];
            let keys: Vec<f32> = make_keys(shape.0 * shape.1, pattern, 100 + j as u64 * 10 + round);
            b.fill(&stream, &keys);
            graph.launch().unwrap();
            b.check(&stream, &keys, &format!("{shape:?} replay {round}"));
        }
    }
}
