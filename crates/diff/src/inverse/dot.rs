//! (dot, being written)
