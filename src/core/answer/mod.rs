//! Answers: the stored answer and judgement records, prompt assembly from templates and
//! context policies, the citation marks in an answer, grounded (RAGAS-style) scores,
//! answers imported from other systems, multiple-choice scoring, abstention, frugality
//! (what an answer costs), sampling parameters and replay at recorded speed.

pub mod abstention;
pub mod citation;
pub mod context_policy;
pub mod external;
pub mod frugality;
pub mod grounded;
pub mod mcqa;
pub mod prompt;
pub mod prompt_marks;
mod record;
pub mod replay;
pub mod sampling;
pub mod template;

pub use record::*;
