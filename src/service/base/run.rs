//! How a use case runs: loading the local chat model and reporting progress.

use anyhow::{Result, bail};

use crate::infer::generate::{GenConfig, Generator};

/// Progress of a long indexing step: (done, total).
pub type Progress<'a> = &'a dyn Fn(usize, usize);

/// Load a generator and refuse models that cannot chat.
pub fn load_generator(cfg: &GenConfig) -> Result<Generator> {
    let g = Generator::spawn(cfg)?;
    if !g.info.has_chat_template {
        bail!(
            "{} has no chat template; choose an instruction-tuned GGUF",
            cfg.model.display()
        );
    }
    Ok(g)
}
