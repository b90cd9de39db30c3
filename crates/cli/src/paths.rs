//! The files a command reads and writes, checked before any work: no output may be one of the
//! command's inputs or another of its outputs. Every command that writes files goes through
//! [`check_files`].
//!
//! Two paths are one file when both exist and have the same (device, inode) — which sees hard
//! links, symbolic links and `./f.ir` vs `f.ir` alike — or, when one does not exist yet, when
//! their normalised absolute paths agree (the parent directory resolved through its links).
//! Paths that are no regular file (`/dev/null`, a pipe) hold nothing to destroy and are not
//! compared.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

use crate::CliError;

/// A path given on the command line, with the option that gave it (`FILE`, `--mtx`, `-o`).
pub struct Named<'a> {
    pub option: String,
    pub path: &'a Path,
}

impl<'a> Named<'a> {
    pub fn new(option: impl Into<String>, path: &'a Path) -> Named<'a> {
        Named {
            option: option.into(),
            path,
        }
    }
}

/// The file a vector argument reads (`@PATH`; not `@-`, standard input), as an input.
pub fn vector_file<'a>(option: &str, arg: Option<&'a str>) -> Option<Named<'a>> {
    let path = arg?.strip_prefix('@')?;
    (path != "-").then(|| Named::new(option, Path::new(path)))
}

/// The file `--rows` reads (`FILE` or `@FILE`; not `-` or `@-`, standard input).
pub fn rows_file<'a>(rows: Option<&'a Path>) -> Option<Named<'a>> {
    let rows = rows?;
    let spelled = rows.to_str().unwrap_or_default();
    let path = match spelled.strip_prefix('@') {
        Some(rest) => Path::new(rest),
        None => rows,
    };
    (path != Path::new("-")).then(|| Named::new("--rows", path))
}

/// What identifies a file: (device, inode) when it exists, else its normalised path. `None` for
/// an existing file that is not a regular file (a device or a pipe).
#[derive(PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Some(Identity::Inode(meta.dev(), meta.ino())),
        Ok(_) => None,
        Err(_) => Some(Identity::Path(normalised(path))),
    }
}

/// `path` absolute, its parent directory resolved through links where it exists, `.` and `..`
/// removed.
fn normalised(path: &Path) -> PathBuf {
    let absolute = match std::env::current_dir() {
        Ok(dir) => dir.join(path),
        Err(_) => path.to_path_buf(),
    };
    let mut lexical = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other.as_os_str()),
        }
    }
    match (lexical.parent(), lexical.file_name()) {
        (Some(parent), Some(name)) => match parent.canonicalize() {
            Ok(parent) => parent.join(name),
            Err(_) => lexical,
        },
        _ => lexical,
    }
}

/// Refuse any output that is one of `inputs` or an earlier output, naming both options.
pub fn check_files(inputs: &[Named<'_>], outputs: &[Named<'_>]) -> Result<(), CliError> {
    let inputs: Vec<(&Named<'_>, Option<Identity>)> =
        inputs.iter().map(|i| (i, identity(i.path))).collect();
    let mut earlier: Vec<(&Named<'_>, Option<Identity>)> = Vec::new();
    for out in outputs {
        let id = identity(out.path);
        if id.is_some() {
            if let Some((input, _)) = inputs.iter().find(|(_, other)| *other == id) {
                return Err(CliError::input(format!(
                    "{} {} is the input {} {}: writing it would destroy the input; choose \
                     another path for {}",
                    out.option,
                    out.path.display(),
                    input.option,
                    input.path.display(),
                    out.option
                )));
            }
            if let Some((other, _)) = earlier.iter().find(|(_, other)| *other == id) {
                return Err(CliError::input(format!(
                    "{} {} and {} {} are the same file: one output would replace the other; \
                     give them different paths",
                    other.option,
                    other.path.display(),
                    out.option,
                    out.path.display()
                )));
            }
        }
        earlier.push((out, id));
    }
    Ok(())
}
