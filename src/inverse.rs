//! Facade glue (being written).
