//! The domain, pure and synchronous: corpus and chunking, fusion, metrics, agreement
//! statistics, rubric, prompt assembly, frugality. Depends on serde/thiserror only —
//! no async runtime, no UI, no storage, no inference crates.

pub mod abstention;
pub mod agreement;
pub mod annotation;
pub mod answer;
pub mod assignment;
pub mod beir;
pub mod blinding;
pub mod calibration;
pub mod candidates;
pub mod chunk;
pub mod citation;
pub mod compare;
pub mod context_policy;
pub mod corpus;
pub mod evalset;
pub mod external;
pub mod frugality;
pub mod fusion;
pub mod gold;
pub mod html;
pub mod mcqa;
pub mod metrics;
pub mod paper;
pub mod per_query;
pub mod preference;
pub mod prompt;
pub mod prompt_marks;
pub mod question;
pub mod replay;
pub mod retrieval;
pub mod rng;
pub mod rubric;
pub mod sampling;
pub mod shard;
pub mod significance;
pub mod signing;
pub mod stats;
pub mod summary;
pub mod synthetic;
pub mod template;
pub mod text;
pub mod timing;
pub mod trec;
pub mod variant;
