//! What every use case needs: resolved paths, the configuration and the workspace.
//!
//! Configuration is resolved here and nowhere else: a flag given by a front wins, then
//! the config file, then the built-in default. Fronts build one [`Context`] and pass it
//! to the service functions.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::config::{Config, Paths};
use crate::core::retrieval::{Alpha, Method};
use crate::infer::device::default_gpu_layers;
use crate::infer::embed::EmbedConfig;
use crate::infer::generate::GenConfig;
use crate::store::workspace::Workspace;

/// Resolved paths, configuration and the open workspace.
#[derive(Debug, Clone)]
pub struct Context {
    pub paths: Paths,
    pub config: Config,
    pub workspace: Workspace,
}

/// Which model to load and how, as a front asks for it (every field optional).
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// A GGUF file given on the command line (wins over the config).
    pub model: Option<PathBuf>,
    pub threads: Option<i32>,
}

/// Open the workspace at `location`: a folder, or `s3://bucket/prefix` (datasets on
/// the object store, configured by `[object_store]` and the `AWS_*` environment; its
/// derived data in [`remote_cache_dir`]).
fn open_workspace(location: &std::path::Path, paths: &Paths, config: &Config) -> Result<Workspace> {
    let text = location.to_string_lossy();
    if crate::store::workspace::is_object_store(&text) {
        let local = remote_cache_dir(&paths.data_dir, &text);
        return Workspace::open_remote(&text, local, config.object_store.lance_options())
            .with_context(|| format!("cannot open workspace {text}"));
    }
    Workspace::open(location).with_context(|| format!("cannot open workspace {text}"))
}

/// The local folder of an object-store workspace's derived data (its BM25 index):
/// `DATA_DIR/remote/SLUG-HASH`, the slug for people, the first 16 hex digits of the
/// URI's SHA-256 to tell workspaces apart. A slug alone is not enough: `s3://a/b_c` and
/// `s3://a_b/c` read the same once `/` becomes `_`, and two workspaces would share one
/// index.
pub fn remote_cache_dir(data_dir: &std::path::Path, uri: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let uri = uri.trim_end_matches('/');
    let slug: String = uri
        .strip_prefix("s3://")
        .unwrap_or(uri)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let hash = Sha256::digest(uri.as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    data_dir.join("remote").join(format!("{slug}-{hex}"))
}

impl Context {
    /// Discover the paths, load the config and open the workspace (`workspace` wins
    /// over the config's).
    pub fn new(workspace: Option<PathBuf>) -> Result<Self> {
        let paths = Paths::discover()?;
        let config = Config::load(&paths)?;
        let dir = workspace.unwrap_or_else(|| config.workspace_dir(&paths));
        let workspace = open_workspace(&dir, &paths, &config)?;
        Ok(Self {
            paths,
            config,
            workspace,
        })
    }

    /// A context over explicit paths and config (embedding raglab, tests).
    pub fn with(paths: Paths, config: Config, workspace: &std::path::Path) -> Result<Self> {
        let workspace = open_workspace(workspace, &paths, &config)?;
        Ok(Self {
            paths,
            config,
            workspace,
        })
    }

    /// Layers of every in-process model offloaded to the GPU: `--gpu-layers` (the
    /// entry point writes the flag into the config), then `[models] gpu_layers`, then
    /// [`default_gpu_layers`] (all in a CUDA build, none in a CPU build).
    pub fn gpu_layers(&self) -> u32 {
        self.config
            .models
            .gpu_layers
            .unwrap_or_else(default_gpu_layers)
    }

    /// The embedding model: flag, then an `[[endpoints]]` entry with `embeddings =
    /// true`, then config `[models] embed`, then the MiniLM GGUF from setup.
    pub fn embed_config(&self, choice: &ModelChoice) -> Result<EmbedConfig> {
        let endpoint = match (&choice.model, self.config.embed_endpoint()) {
            (None, Some(e)) => Some(super::pool::spec_of(e)?),
            _ => None,
        };
        let model = choice
            .model
            .clone()
            .unwrap_or_else(|| self.config.embed_model(&self.paths));
        let mut cfg = EmbedConfig::new(model);
        cfg.endpoint = endpoint;
        cfg.n_gpu_layers = self.gpu_layers();
        cfg.query_prefix = self.config.models.query_prefix.clone().unwrap_or_default();
        cfg.document_prefix = self
            .config
            .models
            .document_prefix
            .clone()
            .unwrap_or_default();
        if let Some(t) = choice.threads {
            cfg.threads = t;
        }
        Ok(cfg)
    }

    /// The chat endpoints a use case answers on, or None for the local model: the
    /// `[[endpoints]]` when any are configured, unless a GGUF is named (`--model`, or
    /// for a `critic` (judge, critique) `[models] judge`) or `--local` is given. The
    /// one rule of `generate`, `judge`, `summarise`, `evalset` and `eval mcqa`.
    pub fn chat_pool_config(
        &self,
        choice: &ModelChoice,
        local: bool,
        critic: bool,
    ) -> Option<Vec<crate::config::EndpointConfig>> {
        let named = choice.model.is_some() || (critic && self.config.models.judge.is_some());
        let chat = self.config.chat_endpoints();
        (!local && !named && !chat.is_empty()).then_some(chat)
    }

    /// The generator: flag, then config, then SmolLM2 from setup.
    pub fn gen_config(&self, choice: &ModelChoice) -> GenConfig {
        let model = choice
            .model
            .clone()
            .unwrap_or_else(|| self.config.gen_model(&self.paths));
        self.model_config(model, choice)
    }

    /// The judge: flag, then config `models.judge`, then the generator.
    pub fn judge_config(&self, choice: &ModelChoice) -> GenConfig {
        let model = choice
            .model
            .clone()
            .or_else(|| self.config.models.judge.clone())
            .unwrap_or_else(|| self.config.gen_model(&self.paths));
        self.model_config(model, choice)
    }

    fn model_config(&self, model: PathBuf, choice: &ModelChoice) -> GenConfig {
        let mut cfg = GenConfig::new(model);
        cfg.n_gpu_layers = self.gpu_layers();
        if let Some(t) = choice.threads {
            cfg.threads = t;
        }
        cfg
    }

    /// Short name of the configured generator (its file name without `.gguf`).
    pub fn gen_model_name(&self) -> String {
        crate::infer::backend::model_name(&self.config.gen_model(&self.paths))
    }

    /// The retrieval method: flag, then config `[retrieval] method`, then hybrid.
    pub fn method(&self, flag: Option<Method>) -> Method {
        flag.or(self.config.retrieval.method)
            .unwrap_or(crate::config::defaults::METHOD)
    }

    /// The fusion weight set by the flag or the config, if either sets one.
    pub fn alpha_set(&self, flag: Option<Alpha>) -> Option<Alpha> {
        flag.or(self.config.retrieval.alpha)
    }

    /// The fusion weight of `method`: flag, then config, then the method's default
    /// (0.7 for hybrid, equal weights for linear fusion). The one rule of every
    /// command and pane, so an analyst sees the ranking that was evaluated.
    pub fn alpha_for(&self, method: Method, flag: Option<Alpha>) -> Alpha {
        self.alpha_set(flag)
            .unwrap_or_else(|| method.default_alpha())
    }

    /// Chunks shown and given to the generator: flag, then config `[retrieval] k`,
    /// then 15.
    /// The prompt template of `kind`: the flag's file, else `[prompts]`'s, else the
    /// shipped text; a file's slots are checked here, before any model loads.
    pub fn template(
        &self,
        kind: crate::core::template::TemplateKind,
        flag: Option<&std::path::Path>,
    ) -> Result<crate::core::template::Template> {
        use crate::core::template::Template;
        let Some(path) = flag.or_else(|| self.config.prompts.file(kind)) else {
            return Ok(Template::shipped(kind));
        };
        let text = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read the {kind} prompt template {}", path.display())
        })?;
        let name = path
            .file_stem()
            .map_or_else(|| "template".into(), |s| s.to_string_lossy().into_owned());
        Template::new(kind, &name, &text).with_context(|| format!("in {}", path.display()))
    }

    /// The free-form templates a presenter switches between: the one `generate` uses
    /// (`[prompts] free_form`, else the shipped text), then each of `[prompts]
    /// free_form_alternatives` in order, each read and its slots checked now. A file
    /// that fails is left out and its error returned beside the list (a demo starts
    /// with the templates that work and says which did not); one whose text repeats
    /// an earlier choice's is left out silently.
    pub fn free_form_choices(
        &self,
    ) -> (
        Vec<crate::core::template::TemplateChoice>,
        Vec<anyhow::Error>,
    ) {
        use crate::core::template::{TemplateChoice, TemplateKind};
        let (mut choices, mut hashes, mut errors) = (Vec::new(), Vec::new(), Vec::new());
        let files = std::iter::once(None).chain(
            self.config
                .prompts
                .free_form_alternatives
                .iter()
                .map(|p| Some(p.as_path())),
        );
        for file in files {
            match self.template(TemplateKind::FreeForm, file) {
                Ok(t) if hashes.contains(&t.sha256) => {}
                Ok(t) => {
                    hashes.push(t.sha256);
                    choices.push(TemplateChoice {
                        name: t.name,
                        file: file.map(std::path::Path::to_path_buf),
                    });
                }
                Err(e) => errors.push(e),
            }
        }
        (choices, errors)
    }

    /// The rubric: the flag's file, else `[annotation] rubric`, else the embedded one.
    /// A study's commands take the study's rubric instead (the study use case's
    /// `study_rubric`): the rubric its lead pinned wins, and a differing one named here
    /// is refused.
    pub fn rubric(&self, flag: Option<&std::path::Path>) -> Result<crate::core::rubric::Rubric> {
        super::rubric::load_rubric(flag.or(self.config.annotation.rubric.as_deref()))
    }

    pub fn k(&self, flag: Option<usize>) -> usize {
        flag.or(self.config.retrieval.k)
            .unwrap_or(crate::config::defaults::K)
    }

    /// Threads for llama.cpp work inside the TUI: one core stays free for the UI.
    pub fn tui_threads() -> i32 {
        crate::infer::backend::tui_threads()
    }
}

/// The log file's filter where `RAGLAB_LOG` is unset. `llama-cpp-2` is llama.cpp's own
/// log; `llama_cpp_2` the binding's, whose warnings are about its log plumbing (a
/// continued line whose start was filtered out).
pub const DEFAULT_LOG_FILTER: &str =
    "info,lance=warn,tantivy=warn,llama-cpp-2=warn,llama_cpp_2=error";

/// Send logs to DATA_DIR/logs/raglab.log: stdout and stderr belong to the user (and
/// to the TUI's screen). `RAGLAB_LOG` sets the filter (default: `info`, with lance,
/// tantivy and llama.cpp at `warn`: llama.cpp logs hundreds of lines per model load
/// at `info`, and its warnings say what a load or a device did wrong).
pub fn init_logging(paths: &Paths) {
    use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
    use tracing_subscriber::util::SubscriberInitExt as _;
    let file = paths.log_file();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let to_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .ok()
        .map(|f| {
            let filter = tracing_subscriber::EnvFilter::try_from_env("RAGLAB_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .with_filter(filter)
        });
    // Kept whatever the file's filter: a failed model load's error quotes llama.cpp.
    let _ = tracing_subscriber::registry()
        .with(to_file)
        .with(crate::infer::llama_log::layer())
        .try_init();
}

/// The async runtime both fronts run on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_workspaces_never_share_a_local_folder() {
        let d = std::path::Path::new("/data");
        let a = remote_cache_dir(d, "s3://a/b_c");
        let b = remote_cache_dir(d, "s3://a_b/c");
        assert_ne!(a, b);
        assert_eq!(
            a,
            remote_cache_dir(d, "s3://a/b_c/"),
            "a trailing / is the same place"
        );
        assert!(a.starts_with("/data/remote"));
        assert!(a.to_string_lossy().contains("a_b_c-"), "{}", a.display());
    }

    /// The choices are the configured template then the alternatives in order; a file
    /// that fails its slot check or cannot be read is left out with its error named,
    /// and a text already offered is offered once.
    #[test]
    fn free_form_choices_keep_the_good_files_in_order_and_name_the_bad() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p
        };
        let brief = file("brief.txt", "Answer briefly.\n{context}\n{question}");
        let again = file("again.txt", "Answer briefly.\n{context}\n{question}");
        let broken = file("broken.txt", "{context} {question} {answer}");
        let mut config = Config::default();
        config.prompts.free_form_alternatives =
            vec![brief.clone(), broken, again, dir.path().join("missing.txt")];
        let paths = Paths {
            config_dir: dir.path().join("config"),
            data_dir: dir.path().join("data"),
        };
        let ctx = Context::with(paths, config, &dir.path().join("ws")).expect("context");
        let (choices, errors) = ctx.free_form_choices();
        let names: Vec<(&str, Option<&std::path::Path>)> = choices
            .iter()
            .map(|c| (c.name.as_str(), c.file.as_deref()))
            .collect();
        assert_eq!(names, [("shipped", None), ("brief", Some(brief.as_path()))]);
        let errors: Vec<String> = errors.iter().map(|e| format!("{e:#}")).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("{answer}") && errors[0].contains("broken.txt"),
            "{errors:?}"
        );
        assert!(errors[1].contains("missing.txt"), "{errors:?}");
    }
}
