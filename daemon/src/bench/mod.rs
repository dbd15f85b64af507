//! Benchmarks that give figures people can put beside the standard tools'.

pub mod disk;
pub mod net;
