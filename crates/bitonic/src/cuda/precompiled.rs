//! Kernels compiled ahead of time and shipped with a program: a *pack* of CUBINs that a build
//! step makes ([`build_pack`]: NVRTC, no GPU) and the program hands to the library at start-up
//! ([`use_pack`]), so that a first use on a listed architecture compiles nothing.
//!
//! A pack entry is found by the same things that make a CUBIN what it is: the module's source,
//! every header, the compile options (the architecture and the policy's defines among them).
//! Its key is the disk cache's without NVRTC's version ([`super::nvrtc::cache_key`]), so a
//! pack needs no NVRTC to be read, and a pack made from other sources or another policy is
//! simply not found: the module then compiles at run time as it would without a pack.
//!
//! A device of architecture `sm_XY` takes the pack's CUBIN of `sm_XY`, else of the closest
//! lower `sm_XZ` of the same major (a CUBIN runs on later minors of its major: sm_80's on an
//! sm_86 or sm_89).
//!
//! The format, all integers little-endian:
//!
//! ```text
//! "BTNPACK1"  u32 entries
//! entries × { u16 arch length, arch, u16 name length, name, u64 key, u64 CUBIN length, CUBIN }
//! ```
//!
//! The module's name is for people and tools reading a pack; the lookup uses the key.

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::RwLock;

const PACK_MAGIC: &[u8; 8] = b"BTNPACK1";

/// One CUBIN to put in a pack: the module's name (for people), the architecture, the key.
pub(crate) struct PackEntry<'a> {
    pub name: String,
    pub arch: &'a str,
    pub key: u64,
    pub cubin: Vec<u8>,
}

/// The bytes of a pack of `entries`.
pub(crate) fn write_pack(entries: &[PackEntry<'_>]) -> Vec<u8> {
    let size: usize = entries
        .iter()
        .map(|e| 2 + e.arch.len() + 2 + e.name.len() + 16 + e.cubin.len())
        .sum();
    let mut pack = Vec::with_capacity(12 + size);
    pack.extend_from_slice(PACK_MAGIC);
    pack.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        pack.extend_from_slice(&(e.arch.len() as u16).to_le_bytes());
        pack.extend_from_slice(e.arch.as_bytes());
        pack.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        pack.extend_from_slice(e.name.as_bytes());
        pack.extend_from_slice(&e.key.to_le_bytes());
        pack.extend_from_slice(&(e.cubin.len() as u64).to_le_bytes());
        pack.extend_from_slice(&e.cubin);
    }
    pack
}

/// A pack read and indexed: where each (architecture, key)'s CUBIN lies in its bytes.
struct Pack {
    bytes: Cow<'static, [u8]>,
    cubins: HashMap<(String, u64), Range<usize>>,
    /// The architectures it holds CUBINs for, sorted.
    archs: Vec<String>,
}

/// What [`crate::cuda::use_pack`] found in a pack.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackSummary {
    /// How many CUBINs it holds.
    pub cubin_count: usize,
    /// The architectures it holds CUBINs for, sorted, such as `["sm_80", "sm_90"]`.
    pub archs: Vec<String>,
}

fn read_pack(bytes: Cow<'static, [u8]>) -> Result<Pack> {
    let bad = Error::BadKernelPack;
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<Range<usize>> {
        let end = at
            .checked_add(n)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| bad("cut short"))?;
        let range = at..end;
        at = end;
        Ok(range)
    };
    let magic = take(8)?;
    if &bytes[magic] != PACK_MAGIC {
        return Err(bad("no BTNPACK1 tag"));
    }
    let le = |r: Range<usize>| -> u64 {
        let mut word = [0u8; 8];
        word[..r.len()].copy_from_slice(&bytes[r]);
        u64::from_le_bytes(word)
    };
    let count = le(take(4)?);
    let mut cubins = HashMap::new();
    for _ in 0..count {
        let arch_len = le(take(2)?) as usize;
        let arch = std::str::from_utf8(&bytes[take(arch_len)?])
            .map_err(|_| bad("an architecture that is not text"))?
            .to_string();
        let name_len = le(take(2)?) as usize;
        take(name_len)?;
        let key = le(take(8)?);
        let cubin_len = usize::try_from(le(take(8)?)).map_err(|_| bad("a CUBIN too long"))?;
        let cubin = take(cubin_len)?;
        if !bytes[cubin.clone()].starts_with(b"\x7fELF") {
            return Err(bad("an entry that is not a CUBIN"));
        }
        cubins.insert((arch, key), cubin);
    }
    if take(1).is_ok() {
        return Err(bad("bytes after the last entry"));
    }
    let mut archs: Vec<String> = cubins.keys().map(|(arch, _)| arch.clone()).collect();
    archs.sort();
    archs.dedup();
    Ok(Pack {
        bytes,
        cubins,
        archs,
    })
}

/// The packs this process was given, searched in the order given.
static PACKS: RwLock<Vec<Pack>> = RwLock::new(Vec::new());

/// Reads `pack` and adds it to those searched before compiling; what it holds.
pub(crate) fn add(pack: Cow<'static, [u8]>) -> Result<PackSummary> {
    let pack = read_pack(pack)?;
    let summary = PackSummary {
        cubin_count: pack.cubins.len(),
        archs: pack.archs.clone(),
    };
    PACKS.write().unwrap_or_else(|e| e.into_inner()).push(pack);
    Ok(summary)
}

/// The CUBIN of the packs for a device of `arch`, where `key_for(candidate)` is the module's
/// key for a candidate architecture: `arch` first, then the lower minors of its major (only
/// those some pack holds: a key hashes the module's source and headers).
pub(crate) fn find(arch: &str, key_for: impl Fn(&str) -> u64) -> Option<Vec<u8>> {
    let packs = PACKS.read().unwrap_or_else(|e| e.into_inner());
    let held = |candidate: &String| packs.iter().any(|p| p.archs.contains(candidate));
    runs_cubins_of(arch)
        .into_iter()
        .filter(held)
        .find_map(|candidate| {
            let key = (candidate.clone(), key_for(&candidate));
            packs
                .iter()
                .find_map(|pack| Some(pack.bytes[pack.cubins.get(&key)?.clone()].to_vec()))
        })
}

/// The architectures whose CUBINs a device of `arch` runs, nearest first: `sm_86` runs
/// `sm_86`, `sm_85`, …, `sm_80`. An architecture with a suffix (`sm_90a`, whose code runs
/// only on its own architecture) is only itself.
pub(crate) fn runs_cubins_of(arch: &str) -> Vec<String> {
    match crate::device::parse_arch(arch) {
        Some((major, minor)) if format!("sm_{major}{minor}") == arch => (0..=minor)
            .rev()
            .map(|m| format!("sm_{major}{m}"))
            .collect(),
        _ => vec![arch.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubin(tag: u8) -> Vec<u8> {
        let mut c = b"\x7fELF".to_vec();
        c.extend_from_slice(&[tag; 12]);
        c
    }

    #[test]
    fn a_device_runs_the_cubins_of_its_major_up_to_its_minor() {
        assert_eq!(runs_cubins_of("sm_90"), ["sm_90"]);
        assert_eq!(
            runs_cubins_of("sm_86"),
            ["sm_86", "sm_85", "sm_84", "sm_83", "sm_82", "sm_81", "sm_80"]
        );
        assert_eq!(runs_cubins_of("sm_120"), ["sm_120"]);
        assert_eq!(runs_cubins_of("sm_121"), ["sm_121", "sm_120"]);
        assert_eq!(runs_cubins_of("sm_90a"), ["sm_90a"]);
        assert_eq!(crate::parse_arch("sm_90a"), Some((9, 0)));
        for bad in ["sm_9", "90", "sm_x0", "compute_90", "sm_"] {
            assert_eq!(crate::parse_arch(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_pack_reads_back_what_was_written() {
        let (a, b) = (cubin(1), cubin(2));
        let bytes = write_pack(&[
            PackEntry {
                name: "x.cu".into(),
                arch: "sm_80",
                key: 7,
                cubin: a.clone(),
            },
            PackEntry {
                name: "y.cu[u32]".into(),
                arch: "sm_90",
                key: 9,
                cubin: b.clone(),
            },
        ]);
        let pack = read_pack(Cow::Owned(bytes)).unwrap();
        assert_eq!(pack.cubins.len(), 2);
        assert_eq!(pack.archs, ["sm_80", "sm_90"]);
        let at = |arch: &str, key| pack.cubins.get(&(arch.to_string(), key)).cloned();
        assert_eq!(&pack.bytes[at("sm_80", 7).unwrap()], a.as_slice());
        assert_eq!(&pack.bytes[at("sm_90", 9).unwrap()], b.as_slice());
        assert_eq!(at("sm_90", 7), None);
    }

    #[test]
    fn a_pack_cut_short_or_changed_is_refused() {
        let c = cubin(3);
        let whole = write_pack(&[PackEntry {
            name: "x.cu".into(),
            arch: "sm_90",
            key: 1,
            cubin: c.clone(),
        }]);
        for cut in [0, 5, 11, 20, whole.len() - 1] {
            assert!(
                read_pack(Cow::Owned(whole[..cut].to_vec())).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = whole.clone();
        longer.push(0);
        assert!(read_pack(Cow::Owned(longer)).is_err());
        let mut not_elf = whole.clone();
        let at = whole.len() - c.len();
        not_elf[at] = b'X';
        assert!(read_pack(Cow::Owned(not_elf)).is_err());
        let mut bad_magic = whole;
        bad_magic[0] = b'X';
        assert!(read_pack(Cow::Owned(bad_magic)).is_err());
        assert!(
            read_pack(Cow::Owned(write_pack(&[]))).is_ok(),
            "an empty pack is a pack"
        );
    }
}
