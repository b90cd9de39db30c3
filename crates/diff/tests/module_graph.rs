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

/// The sibling and crate modules a file refers to.
fn references(module: &str, text: &str, all: &BTreeMap<String, String>) -> BTreeSet<String> {
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
            let name = ident(&line[i + 7..]);
            let target = if parent.is_empty() {
                name
            } else {
                format!("{parent}::{name}")
            };
            if all.contains_key(&target) && target != module {
                out.insert(target);
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
    let graph: BTreeMap<&String, BTreeSet<String>> = all
        .iter()
        .map(|(m, text)| (m, references(m, text, &all)))
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
