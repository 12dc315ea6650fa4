//! The corpus: guidance documents as they arrive (markdown, HTML, text, BEIR passages),
//! the checks an input passes, chunking at markdown headers with each chunk's header
//! path, corpus variants (the paper's C_R and its cut-downs), text made safe for the
//! terminal, and the stored summaries of chunks.

pub mod chunk;
pub mod html;
mod source;
pub mod summary;
pub mod text;
pub mod variant;

pub use source::*;
