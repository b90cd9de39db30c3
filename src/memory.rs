//! Memory checked before it is taken.
//!
//! Every result or work array whose size follows from the inputs (dense matrices, batches,
//! colourings, stored states) is checked here before it is allocated: a size beyond what the
//! machine has is an [`Error::Memory`] that names the array, its size and what to do instead,
//! never an allocation failure that aborts the process. The check compares with the memory the
//! system reports as available (Linux `MemAvailable`), since an allocation that overcommits
//! would be killed later, when its pages are touched.

pub use crate::error::human_bytes;
use crate::error::{Error, Result};

/// Beyond this many bytes an array is refused even where the available memory is unknown.
pub(crate) const MAX_BYTES: u128 = 1 << 40;

/// The memory the system says is available (Linux `MemAvailable`), in bytes; `None` elsewhere.
fn available_memory() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The most bytes one array may take now: the available memory, at most [`MAX_BYTES`].
pub(crate) fn limit() -> u128 {
    available_memory().map_or(MAX_BYTES, |m| m.min(MAX_BYTES))
}

/// Checks that `count` numbers of 8 bytes (the array `what` of `@func`) fit in memory.
/// `alternative` says what to do instead ("use the sparse Jacobian (--sparse)", …).
pub fn check_f64s(func: &str, what: &str, count: u128, alternative: &str) -> Result<()> {
    check_bytes(func, what, count.saturating_mul(8), alternative)
}

/// Checks that `bytes` (the array `what` of `@func`) fit in memory.
pub fn check_bytes(func: &str, what: &str, bytes: u128, alternative: &str) -> Result<()> {
    let available = limit();
    if bytes <= available {
        return Ok(());
    }
    Err(Error::Memory {
        func: func.to_string(),
        what: what.to_string(),
        bytes,
        available,
        alternative: alternative.to_string(),
    })
}

/// A vector of `count` zeros, allocated fallibly after [`check_f64s`]: never an abort.
pub fn zeros(func: &str, what: &str, count: usize, alternative: &str) -> Result<Vec<f64>> {
    check_f64s(func, what, count as u128, alternative)?;
    let mut v = Vec::new();
    v.try_reserve_exact(count).map_err(|_| Error::Memory {
        func: func.to_string(),
        what: what.to_string(),
        bytes: count as u128 * 8,
        available: limit(),
        alternative: alternative.to_string(),
    })?;
    v.resize(count, 0.0);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_error_naming_size_and_alternative() {
        let e = check_f64s(
            "f",
            "the dense Jacobian (100000 × 100000)",
            10_000_000_000,
            "use --sparse",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::Memory { .. }), "{text}");
        assert!(
            text.contains("80 GB") && text.contains("use --sparse"),
            "{text}"
        );
        assert!(zeros("f", "a batch", usize::MAX / 8, "smaller batches").is_err());
        assert_eq!(zeros("f", "a batch", 3, "").unwrap(), vec![0.0; 3]);
    }

    #[test]
    fn bytes_read_in_decimal_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(80_000_000_000), "80 GB");
        assert_eq!(human_bytes(1_250_000), "1.250 MB");
    }
}
