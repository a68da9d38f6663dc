//! Compiles every GPU kernel into a pack that the extension module embeds (src/lib.rs hands it
//! to `bitonic::cuda::use_pack` at import), so that a first call on a packed architecture loads
//! kernels instead of compiling them for seconds.
//!
//! The architectures are `BITONIC_PACK_ARCHS` (comma-separated), by default sm_80 and sm_90: a
//! CUBIN also runs on the later minors of its major, so these cover A100, A10, A40, L4, L40,
//! H100 and H200. Compiling needs NVRTC, not a GPU, and reads and fills the kernel disk cache.
//! Without NVRTC the pack is empty and the build warns: the kernels then compile at first use.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    bitonic::cuda::write_pack_in_build_script("sm_80,sm_90").expect("packing the kernels");
}
