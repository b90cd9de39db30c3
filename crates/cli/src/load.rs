//! Loading what a command works on: the program file and the function chosen in it, and the
//! point `--at`. Both the subcommands (`commands.rs`) and the drivers (`drivers.rs`) load
//! programs, so this sits below both.

use std::path::Path;

use adjit::Function;

use crate::args::{FunctionArgs, PointArgs};
use crate::vectors::{expect_inputs, read_vector};
use crate::CliError;

/// A load error that names the file: parse and I/O errors already do; other errors (the
/// verifier's) get a `FILE: ` prefix on their first line.
pub fn describe_load_error(file: &Path, e: &adjit::Error) -> String {
    match e {
        adjit::Error::Parse(_) | adjit::Error::Invalid(_) | adjit::Error::Io { .. } => {
            e.to_string()
        }
        other => format!("{}: {other}", file.display()),
    }
}

/// Load `args.file` and choose the function: `--func`, or the only one.
pub fn load_function(args: &FunctionArgs) -> Result<Function, CliError> {
    let funcs = adjit::load(&args.file)
        .map_err(|e| CliError::input(describe_load_error(&args.file, &e)))?;
    select_function(funcs, args.func.as_deref(), &args.file)
}

fn name_list(funcs: &[Function]) -> String {
    funcs
        .iter()
        .map(|f| format!("@{}", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The function named `wanted` (with or without `@`), or the only one.
pub fn select_function(
    mut funcs: Vec<Function>,
    wanted: Option<&str>,
    file: &Path,
) -> Result<Function, CliError> {
    match wanted {
        Some(name) => {
            let name = name.strip_prefix('@').unwrap_or(name);
            match funcs.iter().position(|f| f.name == name) {
                Some(i) => Ok(funcs.swap_remove(i)),
                None => Err(CliError::input(format!(
                    "{} has no function @{name}; it defines {}",
                    file.display(),
                    if funcs.is_empty() {
                        "none".into()
                    } else {
                        name_list(&funcs)
                    }
                ))),
            }
        }
        None => match funcs.len() {
            1 => Ok(funcs.swap_remove(0)),
            0 => Err(CliError::input(format!(
                "{} defines no functions",
                file.display()
            ))),
            n => Err(CliError::input(format!(
                "{} defines {n} functions ({}); choose one with --func NAME",
                file.display(),
                name_list(&funcs)
            ))),
        },
    }
}

/// `--at`, checked against the function's inputs.
pub fn read_point(func: &Function, point: &PointArgs) -> Result<Vec<f64>, CliError> {
    let x = read_vector("--at", point.at()?)?;
    expect_inputs("--at", x.len(), func, false)?;
    crate::vectors::expect_f32_range("--at", &x, func)?;
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(name: &str) -> Function {
        let mut b = adjit::Builder::new(name);
        let x = b.param(adjit::Type::F64, "x");
        b.finish(&[x])
    }

    #[test]
    fn function_selection() {
        let file = Path::new("f.ir");
        let one = select_function(vec![func("a")], None, file).unwrap();
        assert_eq!(one.name, "a");
        let two = || vec![func("a"), func("b")];
        assert_eq!(select_function(two(), Some("@b"), file).unwrap().name, "b");
        assert_eq!(select_function(two(), Some("b"), file).unwrap().name, "b");
        let e = select_function(two(), None, file).unwrap_err().to_string();
        assert_eq!(
            e,
            "f.ir defines 2 functions (@a, @b); choose one with --func NAME"
        );
        let e = select_function(two(), Some("c"), file)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "f.ir has no function @c; it defines @a, @b");
    }
}
