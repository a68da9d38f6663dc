//! With the `embedded-kernels` feature: every GPU kernel compiled into a pack the binary
//! embeds (src/main.rs hands it to the library at start), so that a first sort on a packed
//! architecture compiles nothing. Without the feature there is nothing to do.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "embedded-kernels")]
    bitonic::cuda::write_pack_in_build_script("sm_80,sm_90").expect("packing the kernels");
}
