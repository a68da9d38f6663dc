//! The key map on the GPU (kernels/map_keys.cu): keys to the words that sort ascending and
//! back, in place (around the seed versions and the multi-GPU sort), and 16-bit keys widened
//! to u32 words and narrowed back.

use super::exec::Exec;
use super::launch::keys::{convert_16, map_keys, map_keys_into};
use crate::error::{CudaContext as _, Result};
use crate::kernels;
use crate::kernels::kernel_width;
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Turns keys into ascending-sortable words with the key map `map` (`inverse` false), or back.
pub(crate) fn map_words<B: DeviceRepr>(
    x: &Exec,
    words: &mut CudaViewMut<B>,
    map: u32,
    inverse: bool,
) -> Result<()> {
    let name = format!("map_keys_{}", kernel_width::<B>());
    let f = x.function(&kernels::MAP_KEYS, &name)?;
    let cfg = x.elementwise(words.len());
    map_keys(x, &f, cfg, words, (map, inverse)).during(|| format!("launching {name}"))
}

/// Writes `keys` into `words` (as many) mapped with the key map `map`: a copy and
/// [`map_words`] in one pass.
pub(crate) fn map_words_into<B: DeviceRepr>(
    x: &Exec,
    keys: &CudaView<B>,
    words: &mut CudaViewMut<B>,
    map: u32,
) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let name = format!("map_keys_into_{}", kernel_width::<B>());
    let f = x.function(&kernels::MAP_KEYS, &name)?;
    let cfg = x.elementwise(keys.len());
    map_keys_into(x, &f, cfg, keys, words, map).during(|| format!("launching {name}"))
}

/// Widens 16-bit keys into their words, or narrows words back into keys (`widen_16`,
/// `narrow_16`) with the float map `map`: `S` is one of the two, `D` the other.
pub(crate) fn convert<S: DeviceRepr, D: DeviceRepr>(
    x: &Exec,
    src: &CudaView<S>,
    dst: &mut CudaViewMut<D>,
    map: u32,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let name = if std::mem::size_of::<S>() == 2 {
        "widen_16"
    } else {
        "narrow_16"
    };
    let f = x.function(&kernels::MAP_KEYS, name)?;
    convert_16(x, &f, x.elementwise(src.len()), src, dst, map)
        .during(|| format!("launching {name}"))
}
