//! The `adjit` command-line tool: argument parsing and output formatting over the `adjit`
//! facade, which does all the work.
//!
//! Exit status: 0 on success, 1 on any error (printed as `error: ...` on standard error),
//! 2 for an invalid command line (clap's usage errors). Nothing a user types or a file holds
//! makes it panic: every failure is a [`CliError`].

mod args;
mod bench_report;
mod commands;
mod output;
mod vectors;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The facade refused (parse errors, unsupported features, evaluation failures).
    #[error("{0}")]
    Facade(#[from] adjit::Error),
    /// The arguments do not fit the file (vector lengths, function choice, unreadable
    /// vector files).
    #[error("{0}")]
    Input(String),
}

impl CliError {
    pub fn input(message: impl Into<String>) -> CliError {
        CliError::Input(message.into())
    }
}

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version exit 0; usage errors print their message and exit 2.
        Err(e) => e.exit(),
    };
    match commands::run(cli.command) {
        Ok(outcome) => {
            write_out(&outcome.stdout);
            write_err(&outcome.stderr);
            if outcome.failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            write_err(&output::error_report(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// Write to standard output; a closed pipe (`adjit ... | head`) is not an error worth a panic.
fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn write_err(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}
