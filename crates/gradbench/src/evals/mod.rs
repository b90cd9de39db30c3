//! One module per GradBench eval. Each traces its kernels once per size with adjit's tracer,
//! caches the compiled objects, and answers `evaluate` with the output shape of GradBench's
//! reference implementation (`cpp/gradbench/evals/<eval>.hpp` and `tools/manual`).

mod ba;
mod det;
mod gmm;
mod hello;
mod kmeans;
mod llsq;
mod lse;
mod ode;

use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::measure::Evaluation;

/// Compiled kernels (or anything prepared once) by size, made on first use and shared by every
/// run of that size.
pub(crate) struct Cache<Key, T>(HashMap<Key, Rc<T>>);

impl<Key, T> Default for Cache<Key, T> {
    fn default() -> Self {
        Cache(HashMap::new())
    }
}

impl<Key: Hash + Eq + Copy, T> Cache<Key, T> {
    /// The entry of `key`, made by `make(key)` the first time.
    pub(crate) fn get(&mut self, key: Key, make: impl FnOnce(Key) -> Result<T>) -> Result<Rc<T>> {
        if let Some(t) = self.0.get(&key) {
            return Ok(t.clone());
        }
        let t = Rc::new(make(key)?);
        self.0.insert(key, t.clone());
        Ok(t)
    }
}

/// A defined eval: answers `evaluate` messages for its functions.
pub trait Eval {
    /// Run `function` on `input` as often as the input's `min_runs`/`min_seconds` ask.
    fn evaluate(&mut self, function: &str, input: &Value) -> Result<Evaluation>;
}

/// Settings shared by every eval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Worker threads of mapped kernels and chunked sums (0 = every core). GradBench's C++
    /// tools run on one thread unless built multithreaded, hence the default of 1.
    pub threads: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { threads: 1 }
    }
}

impl Config {
    /// Worker threads for `items` independent pieces of work: at most one per item.
    fn threads(self, items: usize) -> usize {
        // Each item is a whole evaluation: always worth a thread.
        adjit::threads_for(self.threads, items, true)
    }

    /// How mapped kernels split their rows under this configuration.
    fn map(self) -> adjit::map::MapOptions {
        adjit::map::MapOptions {
            threads: self.threads,
            ..adjit::map::MapOptions::default()
        }
    }
}

/// Makes a fresh eval (empty kernel caches) under a configuration.
type Make = fn(Config) -> Box<dyn Eval>;

/// The evals adjit implements, by GradBench module name.
const IMPLEMENTED: &[(&str, Make)] = &[
    ("hello", |_| Box::<hello::Hello>::default()),
    ("llsq", |config| Box::new(llsq::Llsq::new(config))),
    ("lse", |config| Box::new(lse::Lse::new(config))),
    ("kmeans", |config| Box::new(kmeans::Kmeans::new(config))),
    ("gmm", |config| Box::new(gmm::Gmm::new(config))),
    ("ba", |config| Box::new(ba::Ba::new(config))),
    ("det", |_| Box::<det::Det>::default()),
    ("ode", |_| Box::<ode::Ode>::default()),
];

/// The eval named `module`, or an error naming the ones adjit implements.
pub fn define(module: &str, config: Config) -> Result<Box<dyn Eval>> {
    IMPLEMENTED
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, make)| make(config))
        .ok_or_else(|| Error::UnknownModule {
            module: module.to_string(),
            implemented: IMPLEMENTED
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The error for a function `module` does not have; `expected` lists the ones it has.
fn unknown_function(module: &str, function: &str, expected: &'static str) -> Error {
    Error::UnknownFunction {
        module: module.to_string(),
        function: function.to_string(),
        expected,
    }
}
