//! What many concepts of the domain use: questions and their targets, the seeded random
//! generator every resampling draws from, summary statistics (percentiles, means), time
//! per item, sharding batch work by id, and the source paper's published values. It
//! imports no other folder of the core, as `service/base` sits under the use cases.

pub mod paper;
pub mod question;
pub mod rng;
pub mod shard;
pub mod stats;
pub mod timing;
