//! The sampling kernel (kernels/sample.cu), launched in thread-block clusters of a plan's
//! blocks a row (a plain launch where that is one block).

use crate::cuda::driver;
use crate::cuda::exec::Exec;
use crate::plan::SamplePlan;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DriverError, SyncOnDrop,
};
use std::ffi::c_void;

/// One setting of every row: a value a row on the device, or one value for all.
pub(crate) type Setting<'a, T> = (Option<CudaView<'a, T>>, T);

/// The four settings of a sampling call, each a value a row or one for all (the "off"
/// values: temperature 1, min-p 0, top-k 0, top-p 1).
pub(crate) struct Settings<'a> {
    pub temperature: Setting<'a, f32>,
    pub min_p: Setting<'a, f32>,
    pub top_k: Setting<'a, i64>,
    pub top_p: Setting<'a, f32>,
}

/// kernels/sample.cu `sample_rows_L(logits, vocab, blocks_a_row, slice_len, resident,
/// temperatures, temperature_all, min_ps, min_p_all, top_ks, top_k_all, top_ps, top_p_all,
/// uniform, tokens)` over `plan`'s grid: a token of each of the plan's rows of `logits` into
/// `tokens`, at the row's number of `uniform`.
pub(crate) fn sample_rows<L>(
    x: &Exec,
    kernel: &CudaFunction,
    plan: &SamplePlan,
    logits: &CudaView<L>,
    settings: &Settings,
    uniform: &CudaView<f32>,
    tokens: &mut CudaViewMut<i64>,
) -> Result<(), DriverError> {
    let rows = plan.rows;
    assert!(logits.len() >= rows * plan.vocab, "rows of vocab logits");
    assert!(
        uniform.len() >= rows && tokens.len() >= rows,
        "a number and a token a row"
    );
    assert!(plan.slice_len as usize * plan.blocks_a_row as usize >= plan.vocab);
    let stream = x.stream;
    // A per-row setting's address (0: the one value), its record held across the launch.
    fn address<'a, T>(
        setting: Option<&'a CudaView<'a, T>>,
        stream: &'a cudarc::driver::CudaStream,
        rows: usize,
    ) -> (u64, Option<SyncOnDrop<'a>>) {
        match setting {
            Some(values) => {
                assert!(values.len() >= rows, "a setting a row");
                let (at, record) = values.device_ptr(stream);
                (at, Some(record))
            }
            None => (0, None),
        }
    }
    let (mut logits_at, _read_logits) = logits.device_ptr(stream);
    let (mut temperatures, _t) = address(settings.temperature.0.as_ref(), stream, rows);
    let (mut min_ps, _m) = address(settings.min_p.0.as_ref(), stream, rows);
    let (mut top_ks, _k) = address(settings.top_k.0.as_ref(), stream, rows);
    let (mut top_ps, _p) = address(settings.top_p.0.as_ref(), stream, rows);
    let (mut uniform_at, _read_uniform) = uniform.device_ptr(stream);
    let (mut tokens_at, _write_tokens) = tokens.device_ptr_mut(stream);
    let (mut vocab, mut blocks_a_row) = (plan.vocab as u32, plan.blocks_a_row);
    let (mut slice_len, mut resident) = (plan.slice_len, u32::from(plan.resident));
    let (mut temperature_all, mut min_p_all) = (settings.temperature.1, settings.min_p.1);
    let (mut top_k_all, mut top_p_all) = (settings.top_k.1, settings.top_p.1);
    let mut params: [*mut c_void; 15] = [
        &mut logits_at as *mut _ as *mut c_void,
        &mut vocab as *mut _ as *mut c_void,
        &mut blocks_a_row as *mut _ as *mut c_void,
        &mut slice_len as *mut _ as *mut c_void,
        &mut resident as *mut _ as *mut c_void,
        &mut temperatures as *mut _ as *mut c_void,
        &mut temperature_all as *mut _ as *mut c_void,
        &mut min_ps as *mut _ as *mut c_void,
        &mut min_p_all as *mut _ as *mut c_void,
        &mut top_ks as *mut _ as *mut c_void,
        &mut top_k_all as *mut _ as *mut c_void,
        &mut top_ps as *mut _ as *mut c_void,
        &mut top_p_all as *mut _ as *mut c_void,
        &mut uniform_at as *mut _ as *mut c_void,
        &mut tokens_at as *mut _ as *mut c_void,
    ];
    let cfg = crate::cuda::exec::config(plan.blocks(), SamplePlan::THREADS, plan.shared_bytes);
    x.gpu.context().bind_to_thread()?;
    let mut attribute = driver::no_attribute();
    let mut raw = driver::cluster_config(cfg, plan.blocks_a_row, stream, &mut attribute);
    if plan.blocks_a_row == 1 {
        raw.numAttrs = 0; // a plain launch: no cluster (devices before sm_90 have none)
    }
    // SAFETY: the parameters match sample_rows_L(const L *logits, u32 vocab, u32
    // blocks_a_row, u32 slice_len, u32 resident, const float *, float, const float *, float,
    // const long long *, long long, const float *, float, const float *uniform, long long
    // *tokens), with L the logits' type (the caller looked the kernel up by it), and live
    // until the call returns (the driver copies them). The kernel reads `rows × vocab` logits
    // (checked above) and, where an address is not 0, a setting a row (checked above), one
    // uniform number a row, and writes one token a row (checked above); each buffer is
    // borrowed across the launch by its record above. The grid is `rows` clusters of
    // `blocks_a_row` blocks whose slices cover a row (checked above), each with the plan's
    // dynamic shared memory, which the caller allowed the kernel; `attribute` outlives `raw`.
    unsafe { driver::launch_kernel_ex(&raw, kernel.cu_function(), &mut params) }
}
