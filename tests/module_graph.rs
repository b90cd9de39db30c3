//! Architecture invariant: inside every crate of the workspace, the files form a DAG, and no
//! file imports a name that the crate root (`lib.rs`/`main.rs`) only re-exports. The root is
//! the top of its crate: a file that reaches a name through it is importing back up (the facade
//! keeps its vocabulary in `error.rs` and `options.rs` so that nothing needs to).
//!
//! Edges are read from the source text (as `crates/diff/tests/module_graph.rs` does for one
//! crate): `crate::A`, `crate::A::B`, `crate::{A, B::c}` and `super::A` paths that name another
//! file of the crate. Comments (doc links included) are not edges, and neither is a file's
//! `#[cfg(test)] mod`: a unit test module is a separate leaf module that drives its parent from
//! the outside, so it may call the top-level entry points.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use adjit_testkit::source::code_before_tests as strip;

/// Crates whose graph is not checked yet, each with the reason.
const KNOWN_EXCEPTIONS: &[(&str, &str)] = &[];

/// Crates whose files still import names through the crate root (the circle rule holds for them);
/// owned by the lead, who removes the line when the imports go straight to the defining file.
const ROOT_IMPORT_EXCEPTIONS: &[&str] = &[];

/// One crate: its module files (`a::b` -> text without comments and test modules) and its root.
struct Crate {
    files: BTreeMap<String, String>,
    /// Folders with a `mod.rs`, as module paths.
    folders: BTreeSet<String>,
    root: String,
}

fn collect(dir: &Path, prefix: &str, krate: &mut Crate) {
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
            if path.join("mod.rs").exists() {
                krate.folders.insert(name.clone());
            }
            collect(&path, &name, krate);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a readable file");
            if prefix.is_empty() && (stem == "lib" || stem == "main") {
                krate.root = strip(&text);
            } else if stem != "mod" {
                krate.files.insert(name, strip(&text));
            }
        }
    }
}

fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The paths (as segment lists, at most two deep) of a `use` tree starting at `rest`:
/// `a::b`, `{a, b::{c, d}}`.
fn tree_paths(rest: &str) -> Vec<Vec<String>> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut parts = vec![String::new()];
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            parts.last_mut().expect("one part").push(c);
        }
        return parts
            .iter()
            .filter(|p| !p.trim().is_empty())
            .flat_map(|p| tree_paths(p))
            .collect();
    }
    let first = ident(rest);
    let after = &rest.trim_start()[first.len()..];
    match after.strip_prefix("::") {
        // `a::b`, `a::{b, c}`: one path per second segment.
        Some(more) => tree_paths(more)
            .into_iter()
            .map(|sub| {
                let second = sub.into_iter().next().unwrap_or_default();
                vec![first.clone(), second]
            })
            .collect(),
        None => vec![vec![first]],
    }
}

/// Names the crate root defines itself (not re-exports).
fn defined_in_root(root: &str, name: &str) -> bool {
    [
        "fn", "struct", "enum", "type", "trait", "const", "static", "mod",
    ]
    .iter()
    .any(|kw| {
        root.match_indices(&format!("{kw} {name}"))
            .any(|(i, _)| ident(&root[i + kw.len() + 1..]) == name)
    }) || root.contains(&format!("macro_rules! {name}"))
}

/// The files each file refers to, and every `crate::NAME` that the root only re-exports.
/// `strict`: a name the root defines itself is an import back up too (the facade's `lib.rs` is
/// only `mod` and `pub use`).
fn edges(krate: &Crate, strict: bool) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let mut graph = BTreeMap::new();
    let mut through_root = Vec::new();
    let is_module = |m: &str| krate.files.contains_key(m) || krate.folders.contains(m);
    // A module path, or the file it names inside a folder (`a::b` is a file, `a` a folder).
    let file_of = |segments: &[String]| -> Option<String> {
        let two = segments.join("::");
        if segments.len() > 1 && krate.files.contains_key(&two) {
            return Some(two);
        }
        let one = segments.first()?.clone();
        krate.files.contains_key(&one).then_some(one)
    };
    for (module, text) in &krate.files {
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
        let mut out = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            for path in tree_paths(&text[i + 7..]) {
                let Some(first) = path.first().filter(|f| !f.is_empty()) else {
                    continue;
                };
                if let Some(file) = file_of(&path) {
                    out.insert(file);
                } else if !is_module(first) && (strict || !defined_in_root(&krate.root, first)) {
                    through_root.push(format!("{module}: crate::{first}"));
                }
            }
        }
        for (i, _) in text.match_indices("super::") {
            for path in tree_paths(&text[i + 7..]) {
                let mut full: Vec<String> = parent
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                full.extend(path);
                let joined = full.join("::");
                let hit = (1..=full.len())
                    .rev()
                    .map(|n| full[..n].join("::"))
                    .find(|p| krate.files.contains_key(p));
                if let Some(file) = hit.filter(|f| f != module && joined.starts_with(f.as_str())) {
                    out.insert(file);
                }
            }
        }
        out.remove(module);
        graph.insert(module.clone(), out);
    }
    (graph, through_root)
}

/// One cycle of the graph, if any, as `a -> b -> a`.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, State>,
        stack: &mut Vec<String>,
    ) -> Option<String> {
        state.insert(node.to_string(), State::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(State::New) {
                State::Open => {
                    let start = stack.iter().position(|s| s == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle.join(" -> "));
                }
                State::New => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                State::Done => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), State::Done);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node).copied().unwrap_or(State::New) == State::New {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, graph, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// Every crate's `src` directory, relative to the workspace root.
fn crate_dirs(workspace: &Path) -> Vec<String> {
    let mut dirs = vec![String::new()];
    let mut crates: Vec<String> = std::fs::read_dir(workspace.join("crates"))
        .expect("crates/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            format!(
                "crates/{}",
                p.file_name().and_then(|n| n.to_str()).expect("UTF-8")
            )
        })
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

fn read_crate(workspace: &Path, dir: &str) -> Crate {
    let mut krate = Crate {
        files: BTreeMap::new(),
        folders: BTreeSet::new(),
        root: String::new(),
    };
    collect(&workspace.join(dir).join("src"), "", &mut krate);
    krate
}

#[test]
fn every_crate_is_a_dag_of_files() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for dir in crate_dirs(workspace) {
        if KNOWN_EXCEPTIONS.iter().any(|(d, _)| *d == dir) {
            continue;
        }
        let (graph, _) = edges(&read_crate(workspace, &dir), false);
        if let Some(cycle) = find_cycle(&graph) {
            problems.push(format!("{dir}/src: file circle {cycle}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_file_imports_through_the_crate_root() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for dir in crate_dirs(workspace) {
        if KNOWN_EXCEPTIONS.iter().any(|(d, _)| *d == dir)
            || ROOT_IMPORT_EXCEPTIONS.contains(&&*dir)
        {
            continue;
        }
        let (_, through_root) = edges(&read_crate(workspace, &dir), dir.is_empty());
        let src = if dir.is_empty() {
            "src".to_string()
        } else {
            format!("{dir}/src")
        };
        problems.extend(
            through_root
                .into_iter()
                .map(|p| format!("{src}/{p} (import it from the file that defines it)")),
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker itself finds a two-file circle and a longer one, and a root import.
#[test]
fn the_checker_sees_circles_and_root_imports() {
    let files = |pairs: &[(&str, &str)]| Crate {
        files: pairs
            .iter()
            .map(|(m, t)| (m.to_string(), strip(t)))
            .collect(),
        folders: BTreeSet::new(),
        root: strip("mod a;\nmod b;\npub use a::Thing;\npub struct Here;\n"),
    };
    let two = files(&[("a", "use crate::b::f;"), ("b", "use crate::{a::g, Here};")]);
    let (graph, root) = edges(&two, false);
    assert_eq!(find_cycle(&graph).as_deref(), Some("a -> b -> a"));
    assert!(root.is_empty(), "{root:?}");

    let three = files(&[
        ("a", "use crate::b;"),
        ("b", "fn f() { crate::c::go() }"),
        ("c", "use crate::{\n    a::x,\n    Thing,\n};"),
    ]);
    let (graph, root) = edges(&three, false);
    assert_eq!(find_cycle(&graph).as_deref(), Some("a -> b -> c -> a"));
    assert_eq!(root, vec!["c: crate::Thing".to_string()]);

    let dag = files(&[
        ("a", "use crate::b::f; // crate::c::x in a comment"),
        (
            "b",
            "/// [`crate::a`]\nfn f() {}\n#[cfg(test)]\nmod tests { use crate::a; }",
        ),
    ]);
    let (graph, root) = edges(&dag, false);
    assert_eq!(find_cycle(&graph), None);
    assert!(root.is_empty());
}
