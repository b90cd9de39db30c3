//! The tracing front end: ordinary Rust over a traced scalar records a `Function`.
//! (Being written.)
