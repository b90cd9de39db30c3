//! The `adjit` command-line tool: argument parsing and output formatting over the `adjit`
//! facade, which does all the work.
//!
//! Exit status: 0 on success, 1 on any error (printed as `error: ...` on standard error),
//! 2 for an invalid command line (clap's usage errors). Nothing a user types or a file holds
//! makes it panic: every failure is a [`CliError`]. Output that cannot be written (a full
//! disk, `adjit ... > /dev/full`) is an error too: exit 1 with `error: writing output: ...`.
//! Only a closed pipe (`adjit ... | head`) is not, since the reader has what it wanted.

mod args;
mod bench_report;
mod commands;
mod drivers;
mod load;
mod measure;
mod output;
mod paths;
mod plot;
mod sparse;
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
    /// A command line clap accepted but that misses what the command needs (`--at` without
    /// `--rows`): a usage error, exit status 2 like clap's own.
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    pub fn input(message: impl Into<String>) -> CliError {
        CliError::Input(message.into())
    }
}

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to standard output and exit 0; usage errors print their
        // message and exit 2.
        Err(e) => {
            let printed = e.print().and_then(|()| std::io::stdout().flush());
            if !e.use_stderr() {
                if let Err(io) = ignore_broken_pipe(printed) {
                    return write_failed(&io);
                }
            }
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match commands::run(cli.command) {
        Ok(outcome) => {
            let written = write_out(&outcome.stdout);
            write_err(&outcome.stderr);
            if let Err(io) = written {
                write_failed(&io)
            } else if outcome.failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            write_err(&output::error_report(&e.to_string()));
            match e {
                CliError::Usage(_) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// Write to standard output and flush, so that a failed write is seen here and not lost
/// when the buffer is dropped at exit.
fn write_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    ignore_broken_pipe(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// A closed pipe (`adjit ... | head`) is not a failure: the reader stopped on purpose.
fn ignore_broken_pipe(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Report that standard output could not be written; the exit status for it.
fn write_failed(e: &std::io::Error) -> ExitCode {
    write_err(&output::error_report(&format!("writing output: {e}")));
    ExitCode::FAILURE
}

fn write_err(text: &str) {
    // Nowhere left to report a failure to write the report itself.
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}
