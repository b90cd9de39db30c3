//! House rules that a reader of the repository relies on: no absolute path of a developer's
//! machine in any committed text file (scripts take a variable or a relative path).

use std::path::{Path, PathBuf};

/// Text files under `dir`, skipping build output and hidden folders.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            text_files(&path, out);
        } else if [
            "rs", "md", "toml", "sh", "py", "ir", "txt", "c", "h", "yml", "json",
        ]
        .iter()
        .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn no_absolute_machine_paths() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    text_files(root, &mut files);
    assert!(
        files.len() > 50,
        "the walk found the repository: {}",
        files.len()
    );
    // Spelled in pieces so this file does not match itself.
    let patterns = [
        ["/wo", "rk/"].concat(),
        ["/ro", "ot/"].concat(),
        ["/ho", "me/"].concat(),
    ];
    let mut found = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if patterns.iter().any(|p| line.contains(p.as_str())) {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "absolute machine paths:\n{}",
        found.join("\n")
    );
}
