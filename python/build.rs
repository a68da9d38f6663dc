//! Compiles every GPU kernel into a pack that the extension module embeds (src/lib.rs hands it
//! to `bitonic::cuda::use_pack` at import), so that a first call on a packed architecture loads
//! kernels instead of compiling them for seconds.
//!
//! The architectures are `BITONIC_PACK_ARCHS` (comma-separated), by default sm_80 and sm_90: a
//! CUBIN also runs on the later minors of its major, so these cover A100, A10, A40, L4, L40,
//! H100 and H200. Compiling needs NVRTC, not a GPU, and reads and fills the kernel disk cache.
//! Without NVRTC the pack is empty and the build warns (the kernels then compile at first use),
//! or fails under `BITONIC_REQUIRE_NVRTC=1`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BITONIC_PACK_ARCHS");
    println!("cargo:rerun-if-env-changed=BITONIC_REQUIRE_NVRTC");
    let archs = std::env::var("BITONIC_PACK_ARCHS").unwrap_or_else(|_| "sm_80,sm_90".into());
    let required = std::env::var("BITONIC_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    bitonic::cuda::write_pack_in_build_script(&archs, required).expect("packing the kernels");
}
