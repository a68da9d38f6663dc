//! One rank of a sort across processes, one GPU each (`bitonic.distributed` over a torch NCCL
//! process group): the library's [`ProcessRank`] on a communicator of its own, made from an
//! NCCL unique id that the Python half makes on rank 0 and broadcasts through the group.
//!
//! A sort returns every rank's part length; this rank's part stays here, in the sorter's
//! buffers, until [`PyProcessRank::take`] copies it into tensors the Python half allocated
//! once it knew the length. The sorter works on its own stream and returns with its work
//! done: the Python half synchronizes the caller's stream before a sort, and a take returns
//! with the copy done.

use crate::dlpack::{read, Buffer};
use crate::{order, sort_error};
use bitonic::cuda::multi::{new_unique_id, DeviceShard, ProcessRank, NCCL_ID_BYTES};
use bitonic::{DType, Order, SortKey};
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::ops::Range;
use std::sync::Arc;

/// A fresh NCCL unique id, 128 bytes, for one communicator's ranks (made by one process of
/// the job, which must live until every rank has joined).
#[pyfunction]
pub fn nccl_unique_id(py: Python<'_>) -> PyResult<Bound<'_, PyBytes>> {
    let id = new_unique_id().map_err(sort_error)?;
    Ok(PyBytes::new(py, &id))
}

/// Whether this process could join a communicator of `world_size` ranks on CUDA device
/// `device` (the GPU opens, NCCL loads, the rank's buffers can be allocated): every rank
/// checks, and the ranks agree, before any joins, since a rank that failed to join would leave
/// the others waiting in NCCL's join.
#[pyfunction]
pub fn check_can_join(py: Python<'_>, device: usize, world_size: usize) -> PyResult<()> {
    py.detach(|| ProcessRank::check_can_join(device, world_size))
        .map_err(sort_error)
}

/// A part of a sort's result held until it is taken: a buffer of the sorter's and where the
/// part lies in it, whatever its element type.
trait HeldPart: Send {
    /// Elements in the part.
    fn len(&self) -> usize;
    /// Bytes an element.
    fn width(&self) -> usize;
    /// Copies the part into `to` (as long, as wide) on `stream`, queued.
    fn copy_to(&self, stream: &Arc<CudaStream>, to: Buffer) -> bitonic::Result<()>;
}

impl<T: DeviceRepr> HeldPart for (CudaSlice<T>, Range<usize>) {
    fn len(&self) -> usize {
        self.1.len()
    }

    fn width(&self) -> usize {
        std::mem::size_of::<T>()
    }

    fn copy_to(&self, stream: &Arc<CudaStream>, to: Buffer) -> bitonic::Result<()> {
        if self.1.is_empty() {
            return Ok(());
        }
        // SAFETY: `to` describes a live C-contiguous tensor of the caller's on this device,
        // as long as the part and as wide (checked by `take`).
        let mut to = unsafe { to.slice::<T>(stream) };
        stream
            .memcpy_dtod(&self.0.slice(self.1.clone()), &mut *to.0)
            .map_err(|cause| bitonic::Error::Cuda {
                context: "copying a distributed sort's part out".into(),
                cause,
            })
    }
}

/// A sort's part: its keys, and its values when the sort moved values.
type HeldParts = (Box<dyn HeldPart>, Option<Box<dyn HeldPart>>);

fn held<T: DeviceRepr + bytemuck::Pod + 'static>(part: DeviceShard<T>) -> Box<dyn HeldPart> {
    Box::new(part.into_parts())
}

/// A value that does not leave its thread but must pass through `Python::detach`'s `Send`
/// bound: `detach` runs its closure on the calling thread, so the sorter (which is neither
/// `Send` nor `Sync`, as NCCL's communicator handle is not) stays on the thread that made it.
struct SameThread<T>(T);
// SAFETY: only ever given to `Python::detach`, which runs the closure on this same thread.
unsafe impl<T> Send for SameThread<T> {}

/// `bitonic._native.ProcessRank`: this process's rank of sorts across processes.
#[pyclass(unsendable, module = "bitonic._native", name = "ProcessRank")]
pub struct PyProcessRank {
    rank: ProcessRank,
    /// The last sort's keys and values (or none), until taken.
    held: Option<HeldParts>,
    /// Whether the last sort call reached the library's sort (its checks here passed).
    reached: bool,
}

#[pymethods]
impl PyProcessRank {
    /// Joins the communicator of `unique_id` ([`nccl_unique_id`]'s bytes) as `rank` of
    /// `world_size` on CUDA device `device`; blocks (the GIL released) until every rank has
    /// joined.
    #[new]
    fn new(
        py: Python<'_>,
        unique_id: &[u8],
        rank: usize,
        world_size: usize,
        device: usize,
    ) -> PyResult<Self> {
        let id: [u8; NCCL_ID_BYTES] = unique_id.try_into().map_err(|_| {
            PyValueError::new_err(format!(
                "an NCCL unique id is {NCCL_ID_BYTES} bytes, not {}",
                unique_id.len()
            ))
        })?;
        let rank = py
            .detach(|| SameThread(ProcessRank::from_unique_id(&id, rank, world_size, device)))
            .0
            .map_err(sort_error)?;
        Ok(PyProcessRank {
            rank,
            held: None,
            reached: false,
        })
    }

    /// This rank, from 0.
    #[getter]
    fn rank(&self) -> usize {
        self.rank.rank()
    }

    /// How many ranks sort together.
    #[getter]
    fn world_size(&self) -> usize {
        self.rank.world_size()
    }

    /// Whether the last sort failed on this rank alone, after its exchange: the other ranks
    /// have their parts and go on (a failure of this binding's checks, before the sort, is
    /// not one: those are the same on every rank, whose calls agree).
    #[getter]
    fn failed_alone(&self) -> bool {
        self.reached && self.rank.failed_alone()
    }

    /// Lets this GPU's memory pool keep up to `bytes` that sorts free, instead of mapping a
    /// large sort's buffers afresh each call (process-wide for the device's default pool).
    fn keep_freed_memory(&self, bytes: usize) -> PyResult<()> {
        self.rank.gpu().keep_freed_memory(bytes).map_err(sort_error)
    }

    /// Sorts this rank's 1-D CUDA shard `keys` (a description or capsule, left as it is) with
    /// the other ranks' (collective): floats in total order. Returns every rank's part
    /// length; this rank's part waits for [`PyProcessRank::take`].
    fn sort(
        &mut self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        descending: bool,
    ) -> PyResult<Vec<usize>> {
        self.reached = false;
        let (dtype, kb) = self.shard(keys, "keys")?;
        let order = order(descending);
        self.run(py, move |rank, stream| {
            bitonic::with_key_type!(dtype, K => {
                // SAFETY: a live C-contiguous tensor of the caller's on this device.
                let keys = unsafe { kb.slice::<K>(stream) };
                rank.sort(&keys.0.slice(0..kb.len), order)
                    .map(|r| ((held(r.keys), None), r.sizes))
            })
        })
    }

    /// Sorts (key, value) pairs, this rank's 1-D CUDA shards of each, with the other ranks',
    /// stably (equal keys keep their global input order); values of 4 or 8 bytes. Returns
    /// every rank's part length; the part waits for [`PyProcessRank::take`].
    fn sort_pairs(
        &mut self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        descending: bool,
    ) -> PyResult<Vec<usize>> {
        self.reached = false;
        let (dtype, kb) = self.shard(keys, "keys")?;
        let vb = read(values)?.on_cuda("values")?;
        self.check_device(vb, "values")?;
        if vb.len != kb.len || !(vb.bytes == 4 || vb.bytes == 8) {
            return Err(PyValueError::new_err(format!(
                "values must be {} elements of 4 or 8 bytes on the GPU",
                kb.len
            )));
        }
        let order = order(descending);
        self.run(py, move |rank, stream| {
            bitonic::with_key_type!(dtype, K => {
                if vb.bytes == 4 {
                    sort_pairs_of::<K, u32>(rank, stream, (kb, vb), order)
                } else {
                    sort_pairs_of::<K, u64>(rank, stream, (kb, vb), order)
                }
            })
        })
    }

    /// Stands out of the sort the other ranks are calling now, because this rank failed
    /// before it could call it: they return an error instead of waiting for it (collective,
    /// in place of one sort call). Returns once they know; the caller then raises its own
    /// error.
    fn abstain(&mut self, py: Python<'_>) -> PyResult<()> {
        self.held = None;
        self.reached = false;
        let rank = SameThread(&self.rank);
        py.detach(move || {
            let rank = rank;
            SameThread(rank.0.abstain())
        })
        .0
        .map_err(sort_error)
    }

    /// Copies the last sort's part into `keys` (and its values into `values`), CUDA tensors
    /// of this device as long as the part and as wide as its elements, and lets the part go;
    /// returns when the copies are done. `None` skips a copy.
    #[pyo3(signature = (keys, values=None))]
    fn take(
        &mut self,
        py: Python<'_>,
        keys: Option<&Bound<'_, PyAny>>,
        values: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (held_keys, held_values) = self
            .held
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("no sort's part is waiting to be taken"))?;
        let mut copies: Vec<(Box<dyn HeldPart>, Buffer)> = Vec::new();
        for (part, to, what) in [
            (Some(held_keys), keys, "keys"),
            (held_values, values, "values"),
        ] {
            if let (Some(part), Some(to)) = (part, to) {
                let b = read(to)?.on_cuda(what)?;
                if b.len != part.len() || b.bytes != part.width() || b.ordinal != self.ordinal() {
                    return Err(PyValueError::new_err(format!(
                        "{what}: the part is {} elements of {} bytes on CUDA device {}, not {} \
                         of {} on {}",
                        part.len(),
                        part.width(),
                        self.ordinal(),
                        b.len,
                        b.bytes,
                        b.ordinal
                    )));
                }
                copies.push((part, b));
            }
        }
        let stream = self.rank.gpu().stream().clone();
        py.detach(move || {
            // Every copy queued is waited for, also after one failed to queue: the caller may
            // free the tensors as soon as this returns.
            let queued = copies
                .iter()
                .try_for_each(|(part, to)| part.copy_to(&stream, *to));
            let done = stream.synchronize().map_err(|cause| bitonic::Error::Cuda {
                context: "waiting for a distributed sort's part to be copied".into(),
                cause,
            });
            queued.and(done)
        })
        .map_err(sort_error)
    }
}

impl PyProcessRank {
    /// Runs one collective sort, `sort(rank, its stream)`, with the GIL released, and keeps
    /// its part for [`PyProcessRank::take`]: every rank's part length.
    fn run(
        &mut self,
        py: Python<'_>,
        sort: impl FnOnce(&ProcessRank, &Arc<CudaStream>) -> bitonic::Result<(HeldParts, Vec<usize>)>,
    ) -> PyResult<Vec<usize>> {
        self.held = None; // a failed sort leaves no earlier part to take
        self.reached = true;
        let (rank, sort) = (SameThread(&self.rank), SameThread(sort));
        let (parts, sizes) = py
            .detach(move || {
                let (rank, sort) = (rank, sort);
                let stream = rank.0.gpu().stream().clone();
                SameThread((sort.0)(rank.0, &stream))
            })
            .0
            .map_err(sort_error)?;
        self.held = Some(parts);
        Ok(sizes)
    }

    fn ordinal(&self) -> usize {
        self.rank.gpu().info().ordinal
    }

    /// The key type and buffer of a shard, which must be on this rank's device.
    fn shard(&self, keys: &Bound<'_, PyAny>, what: &str) -> PyResult<(DType, Buffer)> {
        let t = read(keys)?;
        let (dtype, b) = (t.key_dtype()?, t.on_cuda(what)?);
        self.check_device(b, what)?;
        Ok((dtype, b))
    }

    /// A `ValueError` unless `b` is on this rank's device: the kernels would read another
    /// GPU's memory through the sorter's stream.
    fn check_device(&self, b: Buffer, what: &str) -> PyResult<()> {
        if b.ordinal != self.ordinal() {
            return Err(PyValueError::new_err(format!(
                "{what} on CUDA device {}, but this rank sorts on device {}",
                b.ordinal,
                self.ordinal()
            )));
        }
        Ok(())
    }
}

/// `rank`'s pair sort of the described keys and values (`V` of the values' width).
fn sort_pairs_of<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
    rank: &ProcessRank,
    stream: &Arc<CudaStream>,
    (kb, vb): (Buffer, Buffer),
    order: Order,
) -> bitonic::Result<(HeldParts, Vec<usize>)> {
    // SAFETY: live C-contiguous tensors of the caller's on this device (checked by the
    // caller), the values of `V`'s width.
    let (keys, values) = unsafe { (kb.slice::<K>(stream), vb.slice::<V>(stream)) };
    rank.sort_pairs(&keys.0.slice(0..kb.len), &values.0.slice(0..vb.len), order)
        .map(|r| ((held(r.keys), Some(held(r.values))), r.sizes))
}
