//! The text forms of a checkpointing [`Strategy`]: `tape`, `checkpoint:S`, `bytes:N`,
//! `uniform` (`FromStr` and `Display`, inverse of each other).

use std::fmt;
use std::num::IntErrorKind;
use std::str::FromStr;

/// How reverse mode obtains the primal values its adjoint lines read.
///
/// Text forms (`FromStr`/`Display`): `tape`, `checkpoint:S`, `bytes:N`, `uniform`.
///
/// ```
/// use adjit_diff::checkpoint::Strategy;
/// let s: Strategy = "checkpoint:4".parse().unwrap();
/// assert_eq!(s, Strategy::Checkpoint { snapshots: 4 });
/// assert_eq!(s.to_string(), "checkpoint:4");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Store every needed intermediate.
    #[default]
    Tape,
    /// Binomial (Revolve) checkpointing with `snapshots` stored states.
    Checkpoint { snapshots: usize },
    /// The cheapest checkpointing schedule whose peak memory fits the budget (bytes).
    CheckpointBytes(u64),
    /// About √N stages, every stage boundary stored.
    Uniform,
}

impl fmt::Display for Strategy {
    /// The text form; width and alignment apply (`{:<14}` pads it like a string).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Strategy::Tape => "tape".to_string(),
            Strategy::Checkpoint { snapshots } => format!("checkpoint:{snapshots}"),
            Strategy::CheckpointBytes(bytes) => format!("bytes:{bytes}"),
            Strategy::Uniform => "uniform".to_string(),
        };
        f.pad(&text)
    }
}

/// A strategy string that does not parse; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseStrategyError(pub String);

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    /// Parses `tape`, `checkpoint:S` (S ≥ 1), `bytes:N` or `uniform`.
    fn from_str(text: &str) -> Result<Strategy, ParseStrategyError> {
        let text = text.trim();
        let count = |what: &str, n: &str| -> Result<u64, ParseStrategyError> {
            n.trim().parse::<u64>().map_err(|e| {
                ParseStrategyError(match e.kind() {
                    IntErrorKind::PosOverflow => {
                        format!(
                            "`{text}`: {what} `{n}` is out of range (at most {})",
                            u64::MAX
                        )
                    }
                    _ => format!("`{text}`: {what} must be a whole number, found `{n}`"),
                })
            })
        };
        match text.split_once(':') {
            None if text == "tape" => Ok(Strategy::Tape),
            None if text == "uniform" => Ok(Strategy::Uniform),
            Some(("checkpoint", n)) => {
                let snapshots = count("the snapshot count", n)?;
                if snapshots == 0 {
                    return Err(ParseStrategyError(format!(
                        "`{text}`: checkpointing needs at least 1 snapshot"
                    )));
                }
                let snapshots = usize::try_from(snapshots)
                    .map_err(|_| ParseStrategyError(format!("`{text}`: too many snapshots")))?;
                Ok(Strategy::Checkpoint { snapshots })
            }
            Some(("bytes", n)) => Ok(Strategy::CheckpointBytes(count("the byte budget", n)?)),
            _ => Err(ParseStrategyError(format!(
                "unknown strategy `{text}`; expected tape, checkpoint:S, bytes:N or uniform"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_text_round_trips() {
        for s in [
            Strategy::Tape,
            Strategy::Uniform,
            Strategy::Checkpoint { snapshots: 3 },
            Strategy::CheckpointBytes(123456),
        ] {
            assert_eq!(s.to_string().parse::<Strategy>(), Ok(s));
        }
        for bad in [
            "",
            "tapes",
            "checkpoint:",
            "checkpoint:x",
            "bytes:-1",
            "uniform:2",
        ] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
    }

    #[test]
    fn display_honours_width() {
        assert_eq!(format!("[{:<12}]", Strategy::Uniform), "[uniform     ]");
        assert_eq!(
            format!("[{:>14}]", Strategy::Checkpoint { snapshots: 4 }),
            "[  checkpoint:4]"
        );
    }

    #[test]
    fn a_count_too_large_is_out_of_range_not_malformed() {
        let e = "checkpoint:99999999999999999999"
            .parse::<Strategy>()
            .unwrap_err();
        assert!(e.0.contains("out of range"), "{e}");
        let e = "bytes:99999999999999999999"
            .parse::<Strategy>()
            .unwrap_err();
        assert!(e.0.contains("out of range"), "{e}");
        let e = "bytes:12x".parse::<Strategy>().unwrap_err();
        assert!(e.0.contains("whole number"), "{e}");
    }
}
