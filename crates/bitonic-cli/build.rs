//! With the `embedded-kernels` feature: every GPU kernel compiled into a pack the binary
//! embeds (src/main.rs hands it to the library at start), so that a first sort on a packed
//! architecture compiles nothing. The architectures and the NVRTC requirement are chosen as
//! for the Python module (python/build.rs: `BITONIC_PACK_ARCHS`, `BITONIC_REQUIRE_NVRTC`).
//! Without the feature there is nothing to do.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "embedded-kernels")]
    {
        println!("cargo:rerun-if-env-changed=BITONIC_PACK_ARCHS");
        println!("cargo:rerun-if-env-changed=BITONIC_REQUIRE_NVRTC");
        let archs = std::env::var("BITONIC_PACK_ARCHS").unwrap_or_else(|_| "sm_80,sm_90".into());
        let required = std::env::var("BITONIC_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
        bitonic::cuda::write_pack_in_build_script(&archs, required).expect("packing the kernels");
    }
}
