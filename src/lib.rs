//! adjit: straight-line numeric programs to fast native derivative code.
pub use adjit_ir as ir;
