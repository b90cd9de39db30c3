//! `hello`: `square` is x², `double` its derivative 2x, by adjit's gradient of the traced x².

use adjit::{Compiled, Gradient, Mode};
use serde_json::{json, Value};

use super::{unknown_function, Eval};
use crate::error::Result;
use crate::input::Source;
use crate::measure::{evaluate, Evaluation, Runs};

/// The compiled square and its gradient, made on first use.
#[derive(Default)]
pub struct Hello {
    square: Option<std::rc::Rc<Compiled>>,
    double: Option<std::rc::Rc<Gradient>>,
}

fn square() -> adjit::Function {
    adjit::trace(1, |x| x[0] * x[0])
}

impl Eval for Hello {
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation> {
        let source = Source {
            module: "hello",
            function,
        };
        let runs = Runs::of(input, source)?;
        let x: f64 = source.decode(input)?;
        match function {
            "square" => evaluate(
                runs,
                || match &self.square {
                    Some(c) => Ok(c.clone()),
                    None => {
                        let c = std::rc::Rc::new(Compiled::new(&square(), Mode::Primal)?);
                        Ok(self.square.insert(c).clone())
                    }
                },
                |c| {
                    let mut y = [0.0];
                    c.call(&[x], &mut y)?;
                    Ok(y[0])
                },
                |y| json!(y),
            ),
            "double" => evaluate(
                runs,
                || match &self.double {
                    Some(g) => Ok(g.clone()),
                    None => {
                        let g = std::rc::Rc::new(Gradient::new(&square())?);
                        Ok(self.double.insert(g).clone())
                    }
                },
                |g| {
                    let mut dy = [0.0];
                    g.call(&[x], &mut dy)?;
                    Ok(dy[0])
                },
                |dy| json!(dy),
            ),
            _ => Err(unknown_function("hello", function, "square, double")),
        }
    }
}
