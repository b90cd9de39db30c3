//! The GradBench tool protocol: one JSON message per line in, one JSON answer per line out.
//!
//! `start` → `{"id", "tool": "adjit"}`; `define` → `{"id", "success"}` (with `"error"` for
//! an eval adjit does not implement); `evaluate` → `{"id", "success", "output", "timings"}`
//! or `{"id", "success": false, "error"}`; `analysis` → `{"id"}`. A line that is not a
//! message gets `{"id": null, "success": false, "error"}` (with its `id` when it has one)
//! and an echo on stderr, so the eval is never left waiting for an answer.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::evals::{self, Config, Eval};

/// A message from the eval (the fields the tool reads).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Message {
    Start {
        id: Value,
    },
    Define {
        id: Value,
        module: String,
    },
    Evaluate {
        id: Value,
        module: String,
        function: String,
        #[serde(default)]
        input: Value,
    },
    Analysis {
        id: Value,
    },
}

/// Answer every line of `input` on `output` until the end of the input.
pub fn serve(config: Config, mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut tool = Tool {
        config,
        modules: HashMap::new(),
    };
    let mut bytes = Vec::new();
    let mut line = 0;
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            return Ok(());
        }
        line += 1;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        let answer = tool.answer(&text, line);
        serde_json::to_writer(&mut output, &answer)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}

/// The session: the modules defined so far.
struct Tool {
    config: Config,
    modules: HashMap<String, Box<dyn Eval>>,
}

impl Tool {
    /// The answer to one line.
    fn answer(&mut self, text: &str, line: usize) -> Value {
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => return malformed(Value::Null, &e.to_string(), line),
        };
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        let message = match Message::deserialize(&value) {
            Ok(message) => message,
            Err(e) => return malformed(id, &e.to_string(), line),
        };
        match message {
            Message::Start { id } => json!({ "id": id, "tool": "adjit" }),
            Message::Define { id, module } => match evals::define(&module, self.config) {
                Ok(eval) => {
                    self.modules.insert(module, eval);
                    json!({ "id": id, "success": true })
                }
                Err(e) => failure(id, &e),
            },
            Message::Evaluate {
                id,
                module,
                function,
                input,
            } => match self.evaluate(&module, &function, &input) {
                Ok(evaluation) => json!({
                    "id": id,
                    "success": true,
                    "output": evaluation.output,
                    "timings": evaluation.timings,
                }),
                Err(e) => failure(id, &e),
            },
            Message::Analysis { id } => json!({ "id": id }),
        }
    }

    fn evaluate(
        &mut self,
        module: &str,
        function: &str,
        input: &Value,
    ) -> Result<crate::measure::Evaluation> {
        let eval = self
            .modules
            .get_mut(module)
            .ok_or_else(|| Error::Undefined(module.to_string()))?;
        eval.evaluate(function, input)
    }
}

fn failure(id: Value, error: &Error) -> Value {
    json!({ "id": id, "success": false, "error": error.to_string() })
}

fn malformed(id: Value, message: &str, line: usize) -> Value {
    let error = Error::Message {
        line,
        message: message.to_string(),
    };
    eprintln!("gradbench-adjit: {error}");
    failure(id, &error)
}
