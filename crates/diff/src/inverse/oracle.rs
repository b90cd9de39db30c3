//! (oracle, being written)
