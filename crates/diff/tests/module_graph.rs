//! Architecture invariant: the modules of adjit-diff form a DAG (analysis → emission →
//! transforms → rendering). A file that needs a helper from a sibling it also feeds is telling
//! us the helper belongs lower down.
//!
//! Edges are read from the source text: `super::NAME` and `crate::A::B` paths that name another
//! file of the crate. `mod.rs`/`lib.rs` files only declare and re-export, so they are left out
//! (children naming an item defined in their `mod.rs`, such as an error type, is not a cycle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`inverse::lumps`) of every non-`mod.rs` file under `dir`, with its text.
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name")
            .to_string();
        let name = if prefix.is_empty() {
            stem.clone()
        } else {
            format!("{prefix}::{stem}")
        };
        if path.is_dir() {
            modules(&path, &name, out);
        } else if path.extension().is_some_and(|e| e == "rs") && stem != "mod" && stem != "lib" {
            out.insert(
                name,
                std::fs::read_to_string(&path).expect("a readable file"),
            );
        }
    }
}

/// Items that a folder's `mod.rs` re-exports (`pub use file::{a, b};`), as `folder::item` →
/// `folder::file`, so that `super::item` in a sibling counts as an edge to the file defining it.
fn reexports(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let folder = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}::{name}")
            };
            if let Ok(text) = std::fs::read_to_string(path.join("mod.rs")) {
                for line in text.lines().map(str::trim) {
                    let Some(rest) = line.strip_prefix("pub use ") else {
                        continue;
                    };
                    let Some((file, items)) = rest.split_once("::") else {
                        continue;
                    };
                    let items = items
                        .trim_end_matches(';')
                        .trim_matches(|c| c == '{' || c == '}');
                    for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                        out.insert(format!("{folder}::{item}"), format!("{folder}::{file}"));
                    }
                }
            }
            reexports(&path, &folder, out);
        }
    }
}

/// The sibling and crate modules a file refers to.
fn references(
    module: &str,
    text: &str,
    all: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        for (i, _) in line.match_indices("super::") {
            let rest = &line[i + 7..];
            // `super::name` or a group `super::{a, b}`.
            let names: Vec<String> = match rest.strip_prefix('{') {
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|n| ident(n.trim()))
                    .collect(),
                None => vec![ident(rest)],
            };
            for name in names {
                let target = if parent.is_empty() {
                    name
                } else {
                    format!("{parent}::{name}")
                };
                // A file, or an item its folder's `mod.rs` re-exports from a file.
                let file = if all.contains_key(&target) {
                    Some(target)
                } else {
                    reexports.get(&target).cloned()
                };
                if let Some(file) = file.filter(|f| f != module) {
                    out.insert(file);
                }
            }
        }
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + 7..];
            let first = ident(rest);
            let second = rest
                .get(first.len() + 2..)
                .filter(|_| rest[first.len()..].starts_with("::"))
                .map(ident)
                .unwrap_or_default();
            for target in [format!("{first}::{second}"), first] {
                if all.contains_key(&target) && target != module {
                    out.insert(target);
                    break;
                }
            }
        }
    }
    out
}

#[test]
fn diff_modules_form_a_dag() {
    let mut all = BTreeMap::new();
    modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut all,
    );
    assert!(all.contains_key("inverse::lumps"), "the walk found {all:?}");
    let mut reexported = BTreeMap::new();
    reexports(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut reexported,
    );
    assert_eq!(
        reexported.get("inverse::greedy_order").map(String::as_str),
        Some("inverse::order"),
        "re-exports are resolved to their files"
    );
    let graph: BTreeMap<&String, BTreeSet<String>> = all
        .iter()
        .map(|(m, text)| (m, references(m, text, &all, &reexported)))
        .collect();
    // Depth-first search for a back edge; report the cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: BTreeMap<&str, Mark> = all.keys().map(|m| (m.as_str(), Mark::New)).collect();
    for start in all.keys() {
        if mark[start.as_str()] != Mark::New {
            continue;
        }
        let mut stack: Vec<(&str, Vec<String>)> =
            vec![(start, graph[start].iter().cloned().collect())];
        mark.insert(start, Mark::Open);
        while let Some((node, mut rest)) = stack.pop() {
            match rest.pop() {
                None => {
                    mark.insert(node, Mark::Done);
                }
                Some(next) => {
                    stack.push((node, rest));
                    let key = all.get_key_value(&next).expect("a module").0.as_str();
                    match mark[key] {
                        Mark::Open => {
                            let path: Vec<&str> = stack.iter().map(|(n, _)| *n).collect();
                            panic!("import cycle: {} -> {key}", path.join(" -> "));
                        }
                        Mark::New => {
                            mark.insert(key, Mark::Open);
                            stack.push((key, graph[&next].iter().cloned().collect()));
                        }
                        Mark::Done => {}
                    }
                }
            }
        }
    }
}

/// Architecture invariant: one rulebook. The local partials of every opcode are written once,
/// in `crates/diff/src/rules.rs`; every mode reads them through an emitter. A second table
/// shows itself by restating a rule: `sin`'s derivative (`UnaryOp::Sin =>` … `Cos` on one
/// line) or `erf`'s constant 2/√π, anywhere in the workspace's library sources. (That the
/// inverse modes' J *equals* jvp's J, opcode by opcode, is checked numerically by
/// `tests/rulebook.rs` at the top of the workspace.)
#[test]
fn derivative_rules_are_written_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates/ir/src", "crates/diff/src", "crates/jit/src", "src"] {
        let mut found = BTreeMap::new();
        modules(&root.join(dir), dir, &mut found);
        files.extend(found);
    }
    assert!(
        files.len() > 20,
        "the walk found only {} files",
        files.len()
    );
    let mut restated = Vec::new();
    for (module, text) in &files {
        if module.ends_with("rules") || module.ends_with("math") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let sin_rule = line.contains("UnaryOp::Sin =>") && line.contains("Cos");
            if sin_rule || line.contains("FRAC_2_SQRT_PI") {
                restated.push(format!("{module}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        restated.is_empty(),
        "derivative rules restated outside rules.rs:\n{}",
        restated.join("\n")
    );
}
