//! Decoding the `input` object of an `evaluate` message into the numbers an eval needs, with
//! errors that say which field is wrong.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// Where an input comes from, for error messages.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    pub module: &'static str,
    pub function: &'a str,
}

impl Source<'_> {
    /// An input error of this eval and function.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Input {
            module: self.module,
            function: self.function.to_string(),
            message: message.into(),
        }
    }

    /// Deserialize the whole input as `T` (extra fields such as `min_runs` are ignored).
    pub fn decode<T: DeserializeOwned>(&self, input: &Value) -> Result<T> {
        T::deserialize(input).map_err(|e| self.error(e.to_string()))
    }

    /// Flatten a matrix given as a list of rows, checking that every row has `cols` numbers.
    pub fn rows(&self, what: &str, rows: &[Vec<f64>], cols: usize) -> Result<Vec<f64>> {
        let mut flat = Vec::with_capacity(rows.len() * cols);
        for (i, row) in rows.iter().enumerate() {
            if row.len() != cols {
                return Err(self.error(format!(
                    "{what}[{i}] has {} numbers, expected {cols} like {what}[0]",
                    row.len()
                )));
            }
            flat.extend_from_slice(row);
        }
        Ok(flat)
    }
}
