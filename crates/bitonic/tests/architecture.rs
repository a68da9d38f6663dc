//! The rules of docs/architecture.md that a program can check, on the library's own source:
//!
//! 1. Layers import downward only: a module uses modules of its own layer or of layers below
//!    it ([`LAYERS`]), and no two modules of one layer use each other in a circle.
//! 2. `unsafe` appears only in the driver, memory, NVRTC, graph, staging and launch layers
//!    ([`UNSAFE_PLACES`]), each block with a `SAFETY` comment (clippy's
//!    `undocumented_unsafe_blocks` checks that part in CI).
//! 3. No library source file (Rust, `.cu`, `.cuh`) is over [`MOST_LINES`] lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first: a module is in the first layer that names it or a module above
/// it (`cuda::launch` holds `cuda::launch::keys`). Paths are module paths under `crate`.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation: options, errors, keys, device facts, kernel catalog, policies",
        &[
            "options", "error", "key", "device", "network", "kernels", "policy",
        ],
    ),
    ("plans", &["plan"]),
    (
        "CPU backend; CUDA driver layer",
        &[
            "cpu",
            "cuda::driver",
            "cuda::memory",
            "cuda::nvrtc",
            "cuda::precompiled",
            "cuda::graph",
            "cuda::staging",
        ],
    ),
    (
        "CUDA device and execution context",
        &["cuda::device", "cuda::exec", "cuda::transfer"],
    ),
    ("kernel launches", &["cuda::launch"]),
    (
        "runners of plan steps",
        &[
            "cuda::passes",
            "cuda::levels",
            "cuda::keymap",
            "cuda::seed",
            "cuda::rows",
            "cuda::merge",
            "cuda::kv",
            "cuda::radix",
            "cuda::topk",
            "cuda::sample",
        ],
    ),
    ("the runner of a plan", &["cuda::run"]),
    ("across GPUs", &["cuda::multi", "multi"]),
    ("the sorter and the sampler", &["sorter", "sample"]),
    ("the public face", &["cuda", ""]),
];

/// The only modules with `unsafe` code.
const UNSAFE_PLACES: &[&str] = &[
    "cuda::driver",
    "cuda::memory",
    "cuda::nvrtc",
    "cuda::graph",
    "cuda::staging",
    "cuda::launch",
];

/// The most lines a library source file may have.
const MOST_LINES: usize = 700;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends in one of `extensions`.
fn files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, extensions, out);
        } else if extensions
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            out.push(path);
        }
    }
    out.sort();
}

/// The module path of a source file: src/cuda/launch/keys.rs is `cuda::launch::keys`,
/// src/plan/mod.rs is `plan`, src/lib.rs is ``.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(crate_dir().join("src")).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a Rust file without comments, string literals' contents, and its unit tests
/// (a `#[cfg(test)]` item and everything after it: the tests come last).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let line = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// `path` (`crate::a::b`, `super::c`, `self::d`, or `child::e` for a child module `child` of
/// `me`) as an absolute path from the crate root, for code of the module `me`; `None` for
/// paths outside the crate, and for the crate root itself.
fn resolve(path: &str, me: &[String]) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").map(str::trim).collect();
    let mut base: Vec<String> = match *segments.first()? {
        "crate" => Vec::new(),
        child
            if MODULES.with(|m| {
                let mut p = me.to_vec();
                p.push(child.to_string());
                m.borrow().contains(&p)
            }) =>
        {
            segments.insert(0, "self");
            me.to_vec()
        }
        "self" => me.to_vec(),
        "super" => {
            let mut base = me.to_vec();
            while segments.get(1) == Some(&"super") {
                segments.remove(0);
                base.pop()?;
            }
            base.pop()?;
            base
        }
        _ => return None,
    };
    segments.remove(0);
    base.extend(
        segments
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.to_string()),
    );
    (!base.is_empty()).then_some(base)
}

thread_local! {
    /// The crate's modules, for [`resolve`]'s paths relative to a module (`use cuda::Gpu` in
    /// lib.rs); filled by [`sources`].
    static MODULES: std::cell::RefCell<BTreeSet<Vec<String>>> = Default::default();
}

/// The `use` declarations of `code` (of the module `me`): (whether `pub`, the absolute path,
/// the name it binds), one level of braces expanded.
fn uses(code: &str, me: &[String]) -> Vec<(bool, Vec<String>, String)> {
    let mut out = Vec::new();
    for statement in code.split(';') {
        let Some(start) = statement.find("use ") else {
            continue;
        };
        let visibility = statement[..start].trim_end();
        let public = visibility.ends_with("pub") || visibility.ends_with(')');
        let body: String = statement[start + 4..]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let mut bind = |path: &str| {
            let (path, name) = match path.split_once(" as ") {
                Some((p, n)) => (p.trim(), n.trim().to_string()),
                None => (
                    path.trim(),
                    path.trim().rsplit("::").next().unwrap_or("").to_string(),
                ),
            };
            if let Some(resolved) = resolve(path, me) {
                out.push((public, resolved, name));
            }
        };
        if let Some(open) = body.find('{') {
            let prefix = body[..open].replace(' ', "");
            let inner = body[open + 1..].trim_end().trim_end_matches('}');
            let mut depth = 0;
            let mut item = String::new();
            for c in inner.chars().chain(std::iter::once(',')) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let head = item.split("::{").next().unwrap_or("").trim().to_string();
                        if !head.is_empty() && head != "self" {
                            bind(&format!("{prefix}{head}"));
                        }
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            bind(&body);
        }
    }
    out
}

/// The paths that `code` of the module `me` names: each `use`, and `crate::…` and `super::…`
/// written out in the code, as absolute paths (possibly with item names at the end).
fn named_paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = uses(code, me)
        .into_iter()
        .map(|(_, path, _)| path)
        .collect();
    for root in ["crate::", "super::"] {
        for (i, _) in code.match_indices(root) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if code[i + path.len()..].starts_with('{') {
                continue; // a `use` list, read by `uses`
            }
            out.extend(resolve(path.trim_end_matches(':'), me));
        }
    }
    out
}

/// Re-exports: the path of a `pub use` (`crate::SortKey`) to the path it names
/// (`key::SortKey`), so that an import through a parent's re-export counts as the import of
/// the module that defines the item.
type Aliases = BTreeMap<Vec<String>, Vec<String>>;

fn aliases(sources: &[Source]) -> Aliases {
    let mut aliases = Aliases::new();
    for source in sources {
        for (public, path, name) in uses(&source.code, &source.module) {
            if public && !name.is_empty() && name != "*" {
                let mut alias = source.module.clone();
                alias.push(name);
                if alias != path {
                    aliases.insert(alias, path);
                }
            }
        }
    }
    aliases
}

/// `path` with re-exports followed to where they lead.
fn through_aliases(mut path: Vec<String>, aliases: &Aliases) -> Vec<String> {
    for _ in 0..8 {
        let Some(n) = (1..=path.len())
            .rev()
            .find(|&n| aliases.contains_key(&path[..n]))
        else {
            break;
        };
        let mut real = aliases[&path[..n]].clone();
        real.extend_from_slice(&path[n..]);
        path = real;
    }
    path
}

/// The known module a path names: its longest prefix that is a module of the crate, other than
/// the root (what remains at the root, re-exports of other crates such as `crate::half`, is not
/// this crate's).
fn module_named<'a>(
    path: &[String],
    modules: &'a BTreeSet<Vec<String>>,
) -> Option<&'a Vec<String>> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n].to_vec()))
}

/// The layer of a module: the first whose entries name it or a module above it.
fn layer_of(module: &[String]) -> usize {
    let name = module.join("::");
    let mut best: Option<(usize, usize)> = None; // (layer, length of the entry that matched)
    for (layer, (_, entries)) in LAYERS.iter().enumerate() {
        for entry in *entries {
            let matches =
                entry.is_empty() || name == *entry || name.starts_with(&format!("{entry}::"));
            let len = entry.len();
            if matches && best.map_or(true, |(_, l)| len > l) {
                best = Some((layer, len));
            }
        }
    }
    best.unwrap_or_else(|| panic!("module `{name}` is in no layer: add it to LAYERS"))
        .0
}

struct Source {
    module: Vec<String>,
    file: PathBuf,
    code: String,
    is_mod_file: bool,
}

fn sources() -> Vec<Source> {
    let mut paths = Vec::new();
    files(&crate_dir().join("src"), &["rs"], &mut paths);
    MODULES.with(|m| *m.borrow_mut() = paths.iter().map(|p| module_of(p)).collect());
    paths
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            Source {
                module: module_of(&file),
                code: code_of(&text),
                is_mod_file: name == "mod.rs" || name == "lib.rs",
                file,
            }
        })
        .collect()
}

/// Test files (`tests.rs`, `*/tests/*.rs`) are the unit tests of their parent module.
fn is_test_file(module: &[String]) -> bool {
    module.iter().any(|m| m == "tests")
}

#[test]
fn layers_import_downward_only() {
    let sources = sources();
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let aliases = aliases(&sources);
    let mut upward = Vec::new();
    // Same-layer edges, for the circle check.
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for source in sources.iter().filter(|s| !is_test_file(&s.module)) {
        let mine = layer_of(&source.module);
        for path in named_paths(&source.code, &source.module) {
            let path = through_aliases(path, &aliases);
            let Some(target) = module_named(&path, &modules) else {
                continue;
            };
            if target == &source.module || target.starts_with(&source.module) && source.is_mod_file
            {
                continue; // itself, or a parent's own children (its `mod` and `pub use`)
            }
            let theirs = layer_of(target);
            if theirs > mine {
                upward.push(format!(
                    "{} ({}) uses {} ({})",
                    source.file.display(),
                    LAYERS[mine].0,
                    path.join("::"),
                    LAYERS[theirs].0
                ));
            } else if theirs == mine {
                edges
                    .entry(source.module.clone())
                    .or_default()
                    .insert(target.clone());
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that go up a layer:\n{}",
        upward.join("\n")
    );
    // No circle within a layer: a depth-first search finds no back edge.
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|m| m == next).unwrap();
                    let mut circle: Vec<String> =
                        stack[from..].iter().map(|m| m.join("::")).collect();
                    circle.push(next.join("::"));
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            let circle = visit(node, &edges, &mut state, &mut Vec::new());
            assert!(
                circle.is_none(),
                "modules that use each other in a circle: {}",
                circle.unwrap().join(" -> ")
            );
        }
    }
}

#[test]
fn unsafe_lives_in_the_low_layers() {
    let mut misplaced = Vec::new();
    for source in sources() {
        let name = source.module.join("::");
        let allowed = UNSAFE_PLACES
            .iter()
            .any(|p| name == *p || name.starts_with(&format!("{p}::")));
        let code = source
            .code
            .replace("unsafe_code", "")
            .replace("undocumented_unsafe", "");
        let uses_unsafe = code
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|word| word == "unsafe");
        if uses_unsafe && !allowed {
            misplaced.push(source.file.display().to_string());
        }
    }
    assert!(
        misplaced.is_empty(),
        "unsafe code outside {UNSAFE_PLACES:?}: {misplaced:#?}"
    );
}

#[test]
fn no_source_file_is_over_the_limit() {
    let mut paths = Vec::new();
    files(&crate_dir().join("src"), &["rs"], &mut paths);
    files(&crate_dir().join("kernels"), &["cu", "cuh"], &mut paths);
    assert!(paths.len() > 20, "the walk found the sources");
    let long: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p).unwrap().lines().count();
            (lines > MOST_LINES).then(|| format!("{}: {lines} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MOST_LINES} lines: {long:#?}");
}

#[test]
fn the_checks_see_what_they_check() {
    // The rules cannot pass by reading nothing: the parser finds known imports.
    let me = vec!["cuda".to_string(), "run".to_string()];
    let code = code_of("use super::{kv, merge::Levels};\nuse crate::plan::Plan;\n// use crate::sorter;\nfn f() { crate::cuda::launch::topk::x(); }\n#[cfg(test)]\nmod tests { use crate::sorter; }\n");
    let paths: Vec<String> = named_paths(&code, &me)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    for want in [
        "cuda::kv",
        "cuda::merge::Levels",
        "plan::Plan",
        "cuda::launch::topk::x",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
    }
    assert!(
        !paths.iter().any(|p| p.starts_with("sorter")),
        "comments and tests are skipped"
    );
    assert_eq!(
        layer_of(&["cuda".into(), "launch".into(), "keys".into()]),
        4
    );
    assert_eq!(layer_of(&["sorter".into(), "host".into()]), 8);
    assert_eq!(layer_of(&["cuda".into()]), 9);
    let sources = sources();
    let aliases = aliases(&sources);
    let sort_key = through_aliases(vec!["SortKey".into()], &aliases);
    assert_eq!(
        sort_key.join("::"),
        "key::SortKey",
        "the crate root's re-export followed"
    );
}
