//! The `bitonic` command line: every subcommand, and every bad input gets a clear message, a
//! non-zero exit and no output file.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// The binary under test: `BITONIC_BIN`, else `../bin/bitonic` beside this test executable (the
/// layout of a `.gpu/` bundle on a GPU host), else the one cargo built.
fn bitonic() -> Command {
    let bundled = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin/bitonic")));
    let mut cmd = match std::env::var_os("BITONIC_BIN")
        .map(PathBuf::from)
        .or(bundled.filter(|p| p.exists()))
    {
        Some(path) => Command::new(path),
        None => Command::cargo_bin("bitonic").unwrap(),
    };
    // Keep the tests on the CPU unless a test asks otherwise, and NVRTC's cache private.
    cmd.env("BITONIC_CACHE_DIR", "");
    cmd
}

fn write_raw_u32(path: &Path, keys: &[u32]) {
    std::fs::write(path, bytemuck::cast_slice::<u32, u8>(keys)).unwrap();
}

fn read_raw_u32(path: &Path) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(&std::fs::read(path).unwrap())
}

struct Dir(tempfile::TempDir);
impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

#[test]
fn sorts_a_raw_file() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.u32"), dir.path("out.u32"));
    write_raw_u32(&input, &[5, 3, 9, 1, 1, 0, 7]);
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success()
        .stderr(predicate::str::contains("sorted 7 u32 keys"));
    assert_eq!(read_raw_u32(&output), [0, 1, 1, 3, 5, 7, 9]);
    assert_eq!(
        read_raw_u32(&input),
        [5, 3, 9, 1, 1, 0, 7],
        "the input must not change"
    );
}

#[test]
fn sorts_descending_with_every_cpu_backend_and_dtype() {
    let dir = Dir::new();
    for dtype in ["u32", "i32", "u64", "i64", "f32", "f64"] {
        for backend in ["cpu", "cpu-network", "cpu-network-serial", "auto"] {
            let (input, output) = (
                dir.path(&format!("{dtype}.npy")),
                dir.path(&format!("{dtype}-{backend}.npy")),
            );
            bitonic()
                .args(["gen", "-n", "3001", "--dtype", dtype, "--force"])
                .arg(&input)
                .assert()
                .success();
            bitonic()
                .args(["sort", "--desc", "--backend", backend])
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .assert()
                .success();
            bitonic()
                .args(["verify", "--desc"])
                .arg(&output)
                .arg("--permutation-of")
                .arg(&input)
                .assert()
                .success()
                .stdout(predicate::str::contains("sorted, a permutation"));
        }
    }
}

#[test]
fn npy_output_is_readable_npy() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.npy"), dir.path("out.npy"));
    bitonic()
        .args([
            "gen",
            "-n",
            "2^10",
            "--dtype",
            "f64",
            "--pattern",
            "reversed",
        ])
        .arg(&input)
        .assert()
        .success();
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    let bytes = std::fs::read(&output).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!(
        (10 + header_len) % 64,
        0,
        "NumPy aligns the data to 64 bytes"
    );
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'descr': '<f8'") && header.contains("'shape': (1024,)"),
        "{header}"
    );
    assert_eq!(bytes.len(), 10 + header_len + 1024 * 8);
    bitonic().arg("verify").arg(&output).assert().success();
}

#[test]
fn stdin_to_stdout() {
    let keys: Vec<u8> = bytemuck::cast_slice::<i64, u8>(&[3, -1, 2]).to_vec();
    let out = bitonic()
        .args(["sort", "-", "-o", "-", "--dtype", "i64", "--quiet"])
        .write_stdin(keys)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(bytemuck::pod_collect_to_vec::<u8, i64>(&out), [-1, 2, 3]);
}

#[test]
fn verify_rejects_unsorted_and_non_permutations() {
    let dir = Dir::new();
    let (a, b) = (dir.path("a.u32"), dir.path("b.u32"));
    write_raw_u32(&a, &[1, 3, 2]);
    bitonic()
        .arg("verify")
        .arg(&a)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not sorted: key 1"));
    write_raw_u32(&b, &[1, 2, 4]);
    bitonic()
        .arg("verify")
        .arg(&b)
        .arg("--permutation-of")
        .arg(&a)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not a permutation"));
}

#[test]
fn gen_patterns_are_reproducible() {
    let dir = Dir::new();
    for pattern in ["random", "sorted", "reversed", "few-distinct", "all-equal"] {
        let (x, y) = (
            dir.path(&format!("{pattern}1")),
            dir.path(&format!("{pattern}2")),
        );
        for path in [&x, &y] {
            bitonic()
                .args(["gen", "-n", "5000", "--seed", "9", "--pattern", pattern])
                .arg(path)
                .assert()
                .success();
        }
        assert_eq!(std::fs::read(&x).unwrap(), std::fs::read(&y).unwrap());
        assert_eq!(std::fs::metadata(&x).unwrap().len(), 20_000);
    }
    bitonic()
        .args(["verify"])
        .arg(dir.path("sorted1"))
        .assert()
        .success();
    bitonic()
        .args(["verify", "--desc"])
        .arg(dir.path("reversed1"))
        .assert()
        .success();
}

#[test]
fn demo_and_info_run_anywhere() {
    bitonic()
        .args(["demo", "-n", "50000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("sorted and verified on"));
    bitonic()
        .args([
            "demo",
            "-n",
            "4097",
            "--dtype",
            "f64",
            "--desc",
            "--backend",
            "cpu-network-serial",
        ])
        .assert()
        .success();
    bitonic()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("cuda: "));
}

// ---- bad input: a clear message, a non-zero exit, nothing written ----

fn fails_without_output(args: &[&str], input: Option<&Path>, output: &Path, message: &str) {
    let mut cmd = bitonic();
    cmd.args(args);
    if let Some(input) = input {
        cmd.arg(input);
    }
    cmd.arg("-o").arg(output);
    cmd.assert()
        .failure()
        .stderr(predicate::str::contains(message));
    assert!(!output.exists(), "{} must not be written", output.display());
}

#[test]
fn missing_input() {
    let dir = Dir::new();
    fails_without_output(
        &["sort"],
        Some(&dir.path("nope.bin")),
        &dir.path("out"),
        "nope.bin: no such file",
    );
}

#[test]
fn ragged_raw_length() {
    let dir = Dir::new();
    let input = dir.path("odd.bin");
    std::fs::write(&input, [1u8, 2, 3, 4, 5, 6]).unwrap();
    fails_without_output(
        &["sort", "--dtype", "u32"],
        Some(&input),
        &dir.path("out"),
        "6 bytes is not a whole number of u32 keys",
    );
    fails_without_output(
        &["sort", "--dtype", "f64"],
        Some(&input),
        &dir.path("out"),
        "6 bytes is not a whole number of f64 keys",
    );
}

#[test]
fn malformed_npy_header() {
    let dir = Dir::new();
    let input = dir.path("bad.npy");
    std::fs::write(
        &input,
        b"\x93NUMPY\x01\x00\x20\x00{'descr': '<u4', 'fortran_or",
    )
    .unwrap();
    fails_without_output(
        &["sort"],
        Some(&input),
        &dir.path("out.npy"),
        "not a valid .npy file",
    );
}

#[test]
fn npy_with_wrong_length() {
    let dir = Dir::new();
    let (good, bad) = (dir.path("good.npy"), dir.path("short.npy"));
    bitonic()
        .args(["gen", "-n", "100"])
        .arg(&good)
        .assert()
        .success();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() - 8]).unwrap();
    fails_without_output(
        &["sort"],
        Some(&bad),
        &dir.path("out.npy"),
        "promises 100 keys but the file holds 98",
    );
}

fn npy_with_descr(descr: &str, shape: &str) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.bytes());
    out.extend([0u8; 16]);
    out
}

#[test]
fn unsupported_npy_dtypes_and_shapes() {
    let dir = Dir::new();
    for (descr, shape, message) in [
        ("<f2", "(8,)", "dtype \"<f2\" is not supported"),
        (">u4", "(4,)", "dtype \">u4\" is not supported"),
        ("|u1", "(16,)", "dtype \"|u1\" is not supported"),
        (
            "<u4",
            "(2, 2, 2)",
            "is not supported (one or two dimensions)",
        ),
    ] {
        let input = dir.path("x.npy");
        std::fs::write(&input, npy_with_descr(descr, shape)).unwrap();
        fails_without_output(&["sort"], Some(&input), &dir.path("out.npy"), message);
    }
}

#[test]
fn unknown_dtype() {
    let dir = Dir::new();
    let input = dir.path("in.bin");
    write_raw_u32(&input, &[1, 2]);
    fails_without_output(
        &["sort", "--dtype", "u16"],
        Some(&input),
        &dir.path("out"),
        "invalid value 'u16'",
    );
}

#[test]
fn dtype_disagreeing_with_npy_header() {
    let dir = Dir::new();
    let input = dir.path("in.npy");
    bitonic()
        .args(["gen", "-n", "10", "--dtype", "f32"])
        .arg(&input)
        .assert()
        .success();
    fails_without_output(
        &["sort", "--dtype", "u32"],
        Some(&input),
        &dir.path("out.npy"),
        "holds f32 keys but --dtype u32 was given",
    );
}

#[test]
fn output_equal_to_input_needs_force() {
    let dir = Dir::new();
    let input = dir.path("same.u32");
    write_raw_u32(&input, &[2, 1]);
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .assert()
        .failure()
        .stderr(predicate::str::contains("is the input file; pass --force"));
    assert_eq!(read_raw_u32(&input), [2, 1], "the input must be untouched");
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .arg("--force")
        .assert()
        .success();
    assert_eq!(read_raw_u32(&input), [1, 2]);
}

#[test]
fn existing_output_needs_force() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in"), dir.path("out"));
    write_raw_u32(&input, &[2, 1]);
    write_raw_u32(&output, &[42]);
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("exists; pass --force"));
    assert_eq!(read_raw_u32(&output), [42]);
    bitonic()
        .arg("gen")
        .arg(&output)
        .args(["-n", "3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("exists; pass --force"));
}

#[test]
fn cuda_backend_without_gpu_says_why() {
    if bitonic::cuda::Gpu::get().is_ok() {
        return; // on a GPU host the request succeeds; gpu_cli_reaches_every_version covers it
    }
    let dir = Dir::new();
    let input = dir.path("in");
    write_raw_u32(&input, &[2, 1]);
    fails_without_output(
        &["sort", "--backend", "cuda"],
        Some(&input),
        &dir.path("out"),
        "the CUDA backend is unavailable: no ",
    );
}

fn read_npy_u32(path: &Path) -> (String, Vec<u32>) {
    let bytes = std::fs::read(path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8(bytes[10..10 + header_len].to_vec()).unwrap();
    (
        header,
        bytemuck::pod_collect_to_vec(&bytes[10 + header_len..]),
    )
}

#[test]
fn rows_and_two_dimensional_npy() {
    let dir = Dir::new();
    let (flat, by_rows) = (dir.path("flat.u32"), dir.path("rows.npy"));
    write_raw_u32(&flat, &[3, 1, 2, 9, 7, 8]);
    bitonic()
        .args(["sort", "--rows", "2"])
        .arg(&flat)
        .arg("-o")
        .arg(&by_rows)
        .assert()
        .success();
    let (header, keys) = read_npy_u32(&by_rows);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [1, 2, 3, 7, 8, 9]);
    // A 2-D .npy input sorts along its last axis and keeps its shape.
    let again = dir.path("again.npy");
    bitonic()
        .args(["sort", "--desc"])
        .arg(&by_rows)
        .arg("-o")
        .arg(&again)
        .assert()
        .success();
    let (header, keys) = read_npy_u32(&again);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [3, 2, 1, 9, 8, 7]);
    fails_without_output(
        &["sort", "--rows", "4"],
        Some(&flat),
        &dir.path("bad"),
        "6 keys do not split into 4 equal rows",
    );
}

#[test]
fn argsort_writes_the_permutation() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.u32"), dir.path("perm.npy"));
    write_raw_u32(&input, &[30, 10, 20, 10, 5, 6]);
    bitonic()
        .args(["sort", "--argsort"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    let (header, perm) = read_npy_u32(&output);
    assert!(header.contains("'descr': '<u4'"), "{header}");
    assert_eq!(perm, [4, 5, 1, 3, 2, 0], "ties keep their original order");
    let per_row = dir.path("per_row.npy");
    bitonic()
        .args(["sort", "--argsort", "--rows", "2", "--desc"])
        .arg(&input)
        .arg("-o")
        .arg(&per_row)
        .assert()
        .success();
    assert_eq!(read_npy_u32(&per_row).1, [0, 2, 1, 0, 2, 1]);
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A new output gets 0666 less the umask, as any new file; a file written over with --force
/// keeps its own mode. (The umask of the test process: 022 on the machines we run on.)
#[cfg(unix)]
#[test]
fn outputs_get_the_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    let (input, output) = (dir.path("in.raw"), dir.path("out.raw"));
    write_raw_u32(&input, &[3, 1, 2]);
    // The umask, read off a file made the ordinary way.
    let probe = dir.path("probe");
    std::fs::write(&probe, b"").unwrap();
    let usual = mode(&probe);
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    assert_eq!(mode(&output), usual, "a new output");
    std::fs::set_permissions(&output, std::fs::Permissions::from_mode(0o640)).unwrap();
    bitonic()
        .args(["sort", "--backend", "cpu", "--force"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    assert_eq!(
        mode(&output),
        0o640,
        "an output written over keeps its mode"
    );
    assert_eq!(read_raw_u32(&output), [1, 2, 3]);
}

/// A missing or unwritable destination folder is found before the sort, and the message
/// names the user's path once (not a temporary file's).
#[test]
fn a_bad_destination_fails_before_the_work() {
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2]);
    let output = dir.path("no-such-folder").join("out.raw");
    let assert = bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("does not exist"))
        .stderr(predicate::str::contains(".bitonic-").not());
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert_eq!(stderr.matches("out.raw").count(), 1, "{stderr}");
    // gen checks too, before generating.
    bitonic()
        .args(["gen", "-n", "10"])
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("does not exist"));
    // A folder as the output.
    bitonic()
        .args(["sort", "--backend", "cpu", "--force"])
        .arg(&input)
        .arg("-o")
        .arg(dir.0.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("is a folder"));
}

/// SIGTERM while the output is being written leaves no partial file behind.
#[cfg(unix)]
#[test]
fn an_interrupted_write_leaves_nothing() {
    let dir = Dir::new();
    let output = dir.path("big.raw");
    // 2^28 u32 keys: 1 GiB, written for long enough to be interrupted.
    let bin = bitonic().get_program().to_owned();
    let mut child = std::process::Command::new(bin)
        .args(["gen", "-n", "2^28"])
        .arg(&output)
        .env("BITONIC_CACHE_DIR", "")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the partial file to appear, then interrupt.
    let partial = || {
        std::fs::read_dir(dir.0.path()).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".bitonic-")
        })
    };
    let started = std::time::Instant::now();
    while !partial() && started.elapsed().as_secs() < 60 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(dir.0.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    if status.success() {
        // It finished before the signal: then the whole file is there and nothing else.
        assert_eq!(left, ["big.raw"]);
    } else {
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
