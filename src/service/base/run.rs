//! How a use case runs: on the local chat model or on the endpoint pool (the one
//! rule every use case that generates follows), and how it reports progress.

use anyhow::{Result, bail};

use super::context::{Context, ModelChoice};
use super::pool::Pool;
use super::provenance::model_sha256;
use crate::infer::generate::{GenConfig, Generator};

/// Progress of a long indexing step: (done, total).
pub type Progress<'a> = &'a dyn Fn(usize, usize);

/// The split every resumable batch makes of its work: how many items are done
/// already (their records are stored), and the items still to do, at most `limit` of
/// them, in their order. A killed batch, run again, continues with what it lacks.
pub fn split_done<T>(
    items: Vec<T>,
    limit: Option<usize>,
    is_done: impl Fn(&T) -> bool,
) -> (usize, Vec<T>) {
    let (done, open): (Vec<T>, Vec<T>) = items.into_iter().partition(|t| is_done(t));
    let todo = open.into_iter().take(limit.unwrap_or(usize::MAX)).collect();
    (done.len(), todo)
}

/// The work of a resumable batch, split once when the batch is prepared: the items
/// still to do (in order, at most the limit), how many an earlier run already did,
/// and the back end that will do the rest. Every batch kind that generates (answers,
/// summaries, evaluation-set candidates and critiques) holds one, so what `--limit`,
/// a rerun and the "N to do, M already done, on MODEL" line mean is decided here.
pub struct Resumable<T> {
    pub todo: Vec<T>,
    pub already_done: usize,
    pub backend: Backend,
}

impl<T> Resumable<T> {
    /// Split `items` with [`split_done`] and keep the back end beside them.
    pub fn split(
        items: Vec<T>,
        limit: Option<usize>,
        is_done: impl Fn(&T) -> bool,
        backend: Backend,
    ) -> Self {
        let (already_done, todo) = split_done(items, limit, is_done);
        Self {
            todo,
            already_done,
            backend,
        }
    }

    /// How many items this run will do.
    pub fn todo(&self) -> usize {
        self.todo.len()
    }

    /// How many items an earlier run did (their records are stored).
    pub fn already_done(&self) -> usize {
        self.already_done
    }

    /// The model file, or the endpoints, that will do the work.
    pub fn model(&self) -> String {
        self.backend.describe()
    }
}

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

/// Which local model a back end loads when no endpoint pool serves the use case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The generator (`--model`, then `[models] gen`); `reuse_prefix` keeps the KV
    /// cache of a prompt prefix shared with the previous prompt.
    Generator { reuse_prefix: bool },
    /// A critic of generated text (`--model`, then `[models] judge`, then the
    /// generator).
    Critic,
}

/// Where a use case's model runs.
pub enum Backend {
    /// The local llama.cpp model and its file's SHA-256 (stored as provenance).
    Local(Generator, String),
    /// The `[[endpoints]]` pool, and the model it serves once asked
    /// ([`Backend::open_named`]).
    Pool(Pool, Option<String>),
}

impl Backend {
    /// The endpoint pool when `[[endpoints]]` are configured, unless a GGUF is named
    /// or `local` is set ([`Context::chat_pool_config`]); else the local model of
    /// `role`, refused when it has no chat template.
    pub fn open(ctx: &Context, choice: &ModelChoice, local: bool, role: Role) -> Result<Self> {
        if let Some(chat) = ctx.chat_pool_config(choice, local, role == Role::Critic) {
            return Ok(Self::Pool(Pool::from_config(&chat)?, None));
        }
        let cfg = match role {
            Role::Generator { reuse_prefix } => {
                let mut cfg = ctx.gen_config(choice);
                cfg.reuse_prefix = reuse_prefix;
                cfg
            }
            Role::Critic => ctx.judge_config(choice),
        };
        let generator = load_generator(&cfg)?;
        let sha = model_sha256(&ctx.paths.data_dir, &cfg.model)?;
        Ok(Self::Local(generator, sha))
    }

    /// [`Backend::open`], and an endpoint pool asked which model it serves: records
    /// that store the model's name get the served one.
    pub async fn open_named(
        ctx: &Context,
        choice: &ModelChoice,
        local: bool,
        role: Role,
    ) -> Result<Self> {
        let mut backend = Self::open(ctx, choice, local, role)?;
        if let Self::Pool(pool, name) = &mut backend {
            *name = Some(pool.model_name().await?);
        }
        Ok(backend)
    }

    /// The model's name as records store it: the GGUF file, or the model the pool
    /// serves (its endpoints when it was not asked).
    pub fn model_name(&self) -> String {
        match self {
            Self::Local(g, _) => g.info.file.clone(),
            Self::Pool(_, Some(name)) => name.clone(),
            Self::Pool(p, None) => format!("endpoints {}", p.describe()),
        }
    }

    /// What will run, for the user: the GGUF file, or the model on its endpoints.
    pub fn describe(&self) -> String {
        match self {
            Self::Local(g, _) => g.info.file.clone(),
            Self::Pool(p, Some(name)) => format!("{name} on endpoints {}", p.describe()),
            Self::Pool(p, None) => format!("endpoints {}", p.describe()),
        }
    }
}
