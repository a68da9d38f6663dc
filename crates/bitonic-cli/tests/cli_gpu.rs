//! The `bitonic` command on a GPU: every version through `sort --backend cuda`, and a sort in
//! runs merged on the GPU (`--gpu-memory` smaller than the keys' sort). Ignored without
//! a GPU (the summary line counts it), run under `BITONIC_REQUIRE_GPU=1`, where no GPU fails it.
//! Its own harness (`harness = false`): libtest's flags through libtest-mimic, with the GPU
//! looked for when the test runs.

mod common;

use common::{bitonic, Dir};
use libtest_mimic::{Arguments, Trial};
use predicates::prelude::*;

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("BITONIC_REQUIRE_GPU").as_deref() == Ok("1");
    let missing = bitonic::Gpu::get().err().filter(|_| !required);
    let trials = vec![
        Trial::test("gpu_cli_reaches_every_version", || {
            gpu_cli_reaches_every_version();
            Ok(())
        })
        .with_ignored_flag(missing.is_some()),
        Trial::test("gpu_cli_sorts_in_runs", || {
            gpu_cli_sorts_in_runs();
            Ok(())
        })
        .with_ignored_flag(missing.is_some()),
        Trial::test("gpu_cli_argsorts_in_runs", || {
            gpu_cli_argsorts_in_runs();
            Ok(())
        })
        .with_ignored_flag(missing.is_some()),
    ];
    if let Some(why) = missing.filter(|_| !args.list && !args.ignored && !args.include_ignored) {
        eprintln!("note: 3 tests ignored, no GPU ({why}); BITONIC_REQUIRE_GPU=1 runs them");
    }
    libtest_mimic::run(&args, trials).exit()
}

fn gpu_cli_reaches_every_version() {
    // The harness runs this without a GPU only under BITONIC_REQUIRE_GPU=1 or when ignored
    // tests are asked for: then no GPU is a failure.
    if let Err(why) = bitonic::Gpu::get() {
        panic!("there is no GPU: {why}");
    }
    let dir = Dir::new();
    let input = dir.path("in.npy");
    bitonic()
        .args(["gen", "-n", "100003", "--dtype", "i64"])
        .arg(&input)
        .assert()
        .success();
    bitonic()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("cuda: available"));
    for version in ["v0", "v1", "v2", "v3", "v4", "v5", "tuned"] {
        let output = dir.path(&format!("{version}.npy"));
        bitonic()
            .args(["sort", "--backend", "cuda", "--algo", version])
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .assert()
            .success()
            // "with cuda (v3) on …", "with cuda (tuned network passes) on …"
            .stderr(predicate::str::contains(format!("cuda ({version}")));
        bitonic()
            .arg("verify")
            .arg(&output)
            .arg("--permutation-of")
            .arg(&input)
            .assert()
            .success();
    }
}

fn gpu_cli_sorts_in_runs() {
    if let Err(why) = bitonic::Gpu::get() {
        panic!("there is no GPU: {why}");
    }
    let dir = Dir::new();
    let input = dir.path("in.npy");
    bitonic()
        .args(["gen", "-n", "4194307", "--dtype", "f32"])
        .arg(&input)
        .assert()
        .success();
    // 16 MiB of keys: 28 MiB of GPU memory holds them but not their sort, 8 MiB not even them.
    // Into a .npy file, then a raw one.
    for (budget, desc, name) in [("28M", false, "sorted.npy"), ("8M", true, "sorted.f32")] {
        let output = dir.path(name);
        let mut sort = bitonic();
        sort.args(["sort", "--backend", "cuda", "--gpu-memory", budget]);
        if desc {
            sort.arg("--desc");
        }
        sort.arg(&input)
            .arg("-o")
            .arg(&output)
            .assert()
            .success()
            .stderr(predicate::str::contains(" runs, merged "));
        let mut verify = bitonic();
        verify.arg("verify").arg(&output).args(["--dtype", "f32"]);
        if desc {
            verify.arg("--desc");
        }
        verify
            .arg("--permutation-of")
            .arg(&input)
            .assert()
            .success();
    }
    // No keys at all, raw: nothing to sort, an empty output.
    let empty = dir.path("empty.u32");
    std::fs::write(&empty, b"").unwrap();
    let output = dir.path("empty-sorted.u32");
    bitonic()
        .args(["sort", "--backend", "cuda", "--dtype", "u32"])
        .arg(&empty)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    assert_eq!(std::fs::read(&output).unwrap(), b"");
    // In runs, to standard output: every key's bytes.
    bitonic()
        .args(["sort", "--backend", "cuda", "--gpu-memory", "8M", "-o", "-"])
        .arg(&input)
        .assert()
        .success()
        .stdout(predicate::function(|out: &[u8]| out.len() == 4 * 4194307));
}

fn gpu_cli_argsorts_in_runs() {
    if let Err(why) = bitonic::Gpu::get() {
        panic!("there is no GPU: {why}");
    }
    // A thousand distinct keys (ties across every run and block), raw u32.
    let len = (3 << 20) + 5;
    let keys: Vec<u32> = (0..len as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 1000)
        .collect();
    let dir = Dir::new();
    let input = dir.path("in.u32");
    let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
    std::fs::write(&input, bytes).unwrap();
    // 8 MiB of GPU memory for 24 MiB of keys and indices: runs merged in blocks, then all
    // the memory the GPU has: one sort.
    for (budget, desc, merged) in [("8M", true, true), ("64G", false, false)] {
        let output = dir.path("perm.u32");
        let mut argsort = bitonic();
        argsort.args([
            "sort",
            "--argsort",
            "--backend",
            "cuda",
            "--gpu-memory",
            budget,
        ]);
        if desc {
            argsort.arg("--desc");
        }
        let ran = argsort
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .arg("--force")
            .assert()
            .success();
        let runs = predicate::str::contains(" runs, merged in blocks");
        match merged {
            true => ran.stderr(runs),
            false => ran.stderr(runs.not()),
        };
        let written = std::fs::read(&output).unwrap();
        let got: Vec<u32> = written
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let mut want: Vec<u32> = (0..len as u32).collect();
        match desc {
            true => want.sort_by_key(|&i| std::cmp::Reverse(keys[i as usize])),
            false => want.sort_by_key(|&i| keys[i as usize]),
        }
        assert!(got == want, "{budget}: the stable permutation");
    }
}
