//! Configuration and paths.
//!
//! Paths: `RAGLAB_CONFIG_DIR` / `RAGLAB_DATA_DIR` override; otherwise XDG locations via
//! `directories` (`~/.config/raglab`, `~/.local/share/raglab` on Linux). The config file
//! is `CONFIG_DIR/config.toml`; every field is optional and falls back to a default.
//! The defaults live in [`defaults`], stated once; `raglab config init` writes
//! [`Config::template`], the commented file that shows every setting with that default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Where raglab keeps its files.
#[derive(Debug, Clone)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    pub fn discover() -> Result<Self> {
        let dirs = directories::ProjectDirs::from("", "", "raglab");
        let pick = |var: &str, fallback: Option<&Path>| -> Result<PathBuf> {
            match std::env::var_os(var) {
                Some(v) if !v.is_empty() => Ok(PathBuf::from(v)),
                _ => fallback
                    .map(Path::to_path_buf)
                    .with_context(|| format!("cannot determine a home directory; set {var}")),
            }
        };
        Ok(Self {
            config_dir: pick("RAGLAB_CONFIG_DIR", dirs.as_ref().map(|d| d.config_dir()))?,
            data_dir: pick("RAGLAB_DATA_DIR", dirs.as_ref().map(|d| d.data_dir()))?,
        })
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }
    pub fn keymap_file(&self) -> PathBuf {
        self.config_dir.join("keymap.toml")
    }
    pub fn themes_dir(&self) -> PathBuf {
        self.config_dir.join("themes")
    }
    /// `RAGLAB_MODELS_DIR`, else DATA_DIR/models.
    pub fn models_dir(&self) -> PathBuf {
        match std::env::var_os("RAGLAB_MODELS_DIR") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => self.data_dir.join("models"),
        }
    }
    pub fn default_workspace(&self) -> PathBuf {
        self.data_dir.join("workspaces").join("default")
    }
    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join("logs").join("raglab.log")
    }
}

/// The built-in value of each setting left unset, stated once: the code that resolves a
/// setting (flag, then config, then default) and the commented config that
/// `raglab config init` writes both read them from here.
pub mod defaults {
    use crate::core::retrieval::Method;

    /// TUI theme.
    pub const THEME: &str = "dark";
    /// Retrieval method of `search`, `generate`, `eval mcqa` and the TUI.
    pub const METHOD: Method = Method::Hybrid;
    /// Chunks shown and given to the generator.
    pub const K: usize = 15;
    /// Seed of each reviewer's own item order.
    pub const ORDER_SEED: u64 = 1;
    /// Characters per window of the window chunker.
    pub const WINDOW_SIZE: usize = 500;
    /// Characters two neighbouring windows share.
    pub const WINDOW_OVERLAP: usize = 50;
    /// Requests in flight at once on one endpoint.
    pub const MAX_CONCURRENT: usize = 1;
    /// Seconds without a byte from an endpoint before its request is retried.
    pub const TIMEOUT_S: u64 = 120;
    /// Seconds one endpoint request may take in all.
    pub const REQUEST_TIMEOUT_S: u64 = 600;
    /// Context window of a served model, in tokens.
    pub const CONTEXT_TOKENS: usize = 8192;
}

/// The commented config file, `{placeholders}` for the machine's own paths.
const TEMPLATE: &str = include_str!("../assets/config.toml");

/// File name of the embedding model that `scripts/setup.sh` converts.
pub const DEFAULT_EMBED_MODEL: &str = "all-MiniLM-L6-v2.F16.gguf";
/// File name of the generator that `scripts/setup.sh` installs.
pub const DEFAULT_GEN_MODEL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Workspace folder (default: DATA_DIR/workspaces/default).
    pub workspace: Option<PathBuf>,
    /// Theme name (`dark`, `light`, `high-contrast`) or a file in CONFIG_DIR/themes.
    pub theme: Option<String>,
    /// Questions JSONL listed in the TUI's query pane.
    pub questions: Option<PathBuf>,
    pub models: ModelConfig,
    pub chunking: ChunkingConfig,
    pub retrieval: RetrievalConfig,
    pub annotation: AnnotationConfig,
    pub prompts: PromptsConfig,
    pub rerank: RerankConfig,
    /// OpenAI-compatible model servers (`[[endpoints]]`): when any chat endpoint is
    /// listed, `raglab generate`, `judge` and the TUI's Generate pane answer through them
    /// instead of loading the local generator (unless `--model` or `--local` is given);
    /// one marked `embeddings = true` computes the embeddings.
    pub endpoints: Vec<EndpointConfig>,
    /// The S3-compatible store of an `s3://` workspace.
    pub object_store: ObjectStoreConfig,
}

/// Connection to an S3-compatible object store (`[object_store]`). Every field is
/// optional: what is unset comes from the usual environment variables (`AWS_ENDPOINT`,
/// `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectStoreConfig {
    /// Endpoint URL of a non-AWS server (MinIO, moto, Ceph): `http://127.0.0.1:9000`.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    /// Environment variable holding the secret key (keeps the secret out of the file).
    pub secret_access_key_env: Option<String>,
    /// Allow plain `http://` endpoints (a server on the local network).
    pub allow_http: Option<bool>,
}

impl ObjectStoreConfig {
    /// The lance storage options these settings stand for.
    pub fn lance_options(&self) -> std::collections::HashMap<String, String> {
        let mut out = std::collections::HashMap::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.insert(k.to_string(), v);
            }
        };
        put("aws_endpoint", self.endpoint.clone());
        put("aws_region", self.region.clone());
        put("aws_access_key_id", self.access_key_id.clone());
        put(
            "aws_secret_access_key",
            self.secret_access_key_env
                .as_ref()
                .and_then(|var| std::env::var(var).ok()),
        );
        put("allow_http", self.allow_http.map(|b| b.to_string()));
        out
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnnotationConfig {
    /// Rubric TOML of the Annotate pane, `judge`, `agree` and `labels` (default: the
    /// embedded pass/fail rubric of the paper).
    pub rubric: Option<PathBuf>,
    /// Seed of each reviewer's own item order (default 1).
    pub order_seed: Option<u64>,
}

/// One OpenAI-compatible model server: llama.cpp's `llama-server`, vLLM, a hosted API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Base URL of the API, the part before `/chat/completions`
    /// (e.g. `http://127.0.0.1:8080/v1`).
    pub url: String,
    /// Model name sent with every request (servers of one model ignore it).
    #[serde(default)]
    pub model: Option<String>,
    /// Environment variable that holds the API key (sent as `Authorization: Bearer`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Requests in flight at once on this endpoint (default 1).
    #[serde(default = "one")]
    pub max_concurrent: usize,
    /// Seconds without any byte from the server before a request counts as failed and
    /// is retried (default 120).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Seconds one request may take in all, from sending it to the reply's last byte
    /// (default 600): a server that trickles bytes never trips `timeout_s`.
    #[serde(default)]
    pub request_timeout_s: Option<u64>,
    /// Send the API key over plain `http://` to a host that is not this machine. Off
    /// by default: anyone on the network path could read the key.
    #[serde(default)]
    pub allow_plain_http_key: bool,
    /// Context window of the served model in tokens, for the prompt budget (default
    /// 8192).
    #[serde(default)]
    pub context_tokens: Option<usize>,
    /// Send only OpenAI's standard sampling fields (hosted APIs that refuse llama.cpp's
    /// `top_k`, `min_p` and `repeat_penalty`).
    #[serde(default)]
    pub standard_sampling: bool,
    /// Send a llama-server the messages on `/chat/completions`, as other servers get
    /// them, instead of prompt token ids in which untrusted text stays plain text. Off
    /// by default: on the chat route llama-server parses control tokens inside chunks,
    /// questions and answers.
    #[serde(default)]
    pub chat_route: bool,
    /// This server computes embeddings (`/v1/embeddings`, llama-server with
    /// `--embeddings`): `index`, `search`, `eval retrieval` and the TUI embed with it
    /// unless `--embed-model` names a GGUF. It takes no chat requests.
    #[serde(default)]
    pub embeddings: bool,
    /// This server reranks (`/v1/rerank`, the Jina and llama-server shape): a rerank
    /// stage (`--rerank`) scores with it unless `--rerank-model` names a GGUF. It
    /// takes no chat requests.
    #[serde(default)]
    pub rerank: bool,
}

fn one() -> usize {
    defaults::MAX_CONCURRENT
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Retrieval method of `search`, `generate`, `eval mcqa` and the TUI (default
    /// hybrid).
    pub method: Option<crate::core::retrieval::Method>,
    /// Dense weight of hybrid and linear fusion, in [0, 1] (default 0.7).
    pub alpha: Option<crate::core::retrieval::Alpha>,
    /// Chunks shown by `search` and the TUI's Query pane, and given to the generator
    /// (default 15).
    pub k: Option<usize>,
    /// Abstain ("no relevant guidance") when the best dense cosine similarity is below
    /// this; unset: never abstain. Choose it with `raglab eval abstention`.
    pub abstain_below: Option<f64>,
}

/// Prompt template files (`[prompts]`), one per kind; unset: the shipped text. A
/// command's `--prompt` wins.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptsConfig {
    /// Free-form answers from retrieved context (`generate`, the Generate pane).
    pub free_form: Option<PathBuf>,
    /// Free-form answers without retrieval (`generate --no-retrieval`).
    pub no_retrieval: Option<PathBuf>,
    /// Multiple-choice answers from retrieved context (`eval mcqa`, k > 0).
    pub multiple_choice: Option<PathBuf>,
    /// Multiple-choice answers without context (`eval mcqa`, k = 0).
    pub multiple_choice_no_context: Option<PathBuf>,
    /// The rubric judge (`judge`, the TUI's `J`); its judgements carry the template in
    /// the judge's name (`model.gguf+prompt-NAME@HASH12`).
    pub judge: Option<PathBuf>,
    /// Chunk summaries (`summarise`, the corpus variants C_S and C_R); a summary made
    /// with another template's text is made again.
    pub summary: Option<PathBuf>,
    /// More free-form templates the Generate pane's `t` switches to, in this order
    /// after `free_form` (or the shipped text). Each is read and checked when the
    /// TUI starts, and read again at every generation, so an edit shows at the next `g`.
    pub free_form_alternatives: Vec<PathBuf>,
    /// Grounded metrics (`answers ground`): splitting a text into statements.
    pub grounded_statements: Option<PathBuf>,
    /// Grounded metrics: judging numbered statements against numbered passages.
    pub grounded_verify: Option<PathBuf>,
    /// Grounded metrics: whether each context was useful for the reference answer.
    pub grounded_useful: Option<PathBuf>,
    /// The evaluation set (`evalset generate`): a fact question from one chunk.
    pub evalset_fact: Option<PathBuf>,
    /// The evaluation set: a reasoning question from two chunks.
    pub evalset_reasoning: Option<PathBuf>,
    /// The evaluation set's critic (`evalset critique`).
    pub evalset_critique: Option<PathBuf>,
}

impl PromptsConfig {
    /// The configured file of `kind`, if any.
    pub fn file(&self, kind: crate::core::template::TemplateKind) -> Option<&Path> {
        use crate::core::template::TemplateKind as K;
        match kind {
            K::FreeForm => self.free_form.as_deref(),
            K::NoRetrieval => self.no_retrieval.as_deref(),
            K::MultipleChoice => self.multiple_choice.as_deref(),
            K::MultipleChoiceNoContext => self.multiple_choice_no_context.as_deref(),
            K::Judge => self.judge.as_deref(),
            K::Summary => self.summary.as_deref(),
            K::GroundedStatements => self.grounded_statements.as_deref(),
            K::GroundedVerify => self.grounded_verify.as_deref(),
            K::GroundedUseful => self.grounded_useful.as_deref(),
            K::EvalsetFact => self.evalset_fact.as_deref(),
            K::EvalsetReasoning => self.evalset_reasoning.as_deref(),
            K::EvalsetCritique => self.evalset_critique.as_deref(),
            _ => None,
        }
    }
}

/// The rerank stage (`[rerank]`), used where a command is given `--rerank`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankConfig {
    /// A causal GGUF scored pointwise by P(yes) (default: the generator). An
    /// `[[endpoints]]` entry with `rerank = true` wins over it.
    pub model: Option<PathBuf>,
    /// The pointwise prompt (slots `{question}` and `{document}`; default: shipped).
    pub prompt: Option<PathBuf>,
    /// Chunks of the first-stage ranking scored (default 10).
    pub depth: Option<usize>,
    /// Chunks kept after reranking (default 5).
    pub keep: Option<usize>,
    /// A GGUF scorer decodes a question's candidates in one call with their common
    /// prefix once, instead of each prompt whole as llama-server does: fewer tokens,
    /// but scores that differ from the server's (`raglab bench rerank` measures
    /// both). Cached apart from whole-prompt scores. Default false.
    pub share_prefix: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// GGUF embedding model (default: MODELS_DIR/all-MiniLM-L6-v2.F16.gguf).
    pub embed: Option<PathBuf>,
    /// GGUF generator (default: MODELS_DIR/SmolLM2-135M-Instruct.Q4_1.gguf).
    pub generate: Option<PathBuf>,
    /// GGUF judge model (default: the generator).
    pub judge: Option<PathBuf>,
    /// Layers of every in-process model (generator, judge, embedder) offloaded to the
    /// GPU; `--gpu-layers` wins. Default: all of them in a CUDA build, none otherwise.
    pub gpu_layers: Option<u32>,
    /// Prefix prepended to queries before embedding (e5: "query: ").
    pub query_prefix: Option<String>,
    /// Prefix prepended to documents before embedding (e5: "passage: ").
    pub document_prefix: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkingConfig {
    pub window_size: usize,
    pub window_overlap: usize,
}

impl Default for ChunkingConfig {
    fn default() -> Self {
        Self {
            window_size: defaults::WINDOW_SIZE,
            window_overlap: defaults::WINDOW_OVERLAP,
        }
    }
}

impl Config {
    /// The commented config `raglab config init` writes: every setting commented out
    /// with its default, the default paths spelled out for this machine.
    pub fn template(paths: &Paths) -> String {
        let config = Self::default();
        TEMPLATE
            .replace("{workspace}", &toml_path(&config.workspace_dir(paths)))
            .replace("{models_dir}", &toml_path(&paths.models_dir()))
            .replace("{themes_dir}", &paths.themes_dir().display().to_string())
    }

    /// Load the config file if present; a malformed file is an error naming the file.
    pub fn load(paths: &Paths) -> Result<Self> {
        let file = paths.config_file();
        match std::fs::read_to_string(&file) {
            Ok(s) => {
                toml::from_str(&s).with_context(|| format!("invalid config {}", file.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
        }
    }

    pub fn workspace_dir(&self, paths: &Paths) -> PathBuf {
        self.workspace
            .clone()
            .unwrap_or_else(|| paths.default_workspace())
    }

    pub fn embed_model(&self, paths: &Paths) -> PathBuf {
        self.models
            .embed
            .clone()
            .unwrap_or_else(|| paths.models_dir().join(DEFAULT_EMBED_MODEL))
    }

    /// The endpoints that answer chat requests (all but the embedding ones).
    pub fn chat_endpoints(&self) -> Vec<EndpointConfig> {
        self.endpoints
            .iter()
            .filter(|e| !e.embeddings && !e.rerank)
            .cloned()
            .collect()
    }

    /// The first endpoint that reranks.
    pub fn rerank_endpoint(&self) -> Option<&EndpointConfig> {
        self.endpoints.iter().find(|e| e.rerank)
    }

    /// The first endpoint that serves embeddings.
    pub fn embed_endpoint(&self) -> Option<&EndpointConfig> {
        self.endpoints.iter().find(|e| e.embeddings)
    }

    pub fn gen_model(&self, paths: &Paths) -> PathBuf {
        self.models
            .generate
            .clone()
            .unwrap_or_else(|| paths.models_dir().join(DEFAULT_GEN_MODEL))
    }
}

/// A path as it goes between a TOML string's quotes.
fn toml_path(p: &Path) -> String {
    p.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retrieval_settings_are_read_and_alpha_is_checked() {
        let c: Config = toml::from_str("[retrieval]\nmethod = \"bm25\"\nalpha = 0.4\nk = 5\n")
            .expect("valid config");
        assert_eq!(
            c.retrieval.method,
            Some(crate::core::retrieval::Method::Bm25)
        );
        assert_eq!(
            c.retrieval.alpha.map(crate::core::retrieval::Alpha::get),
            Some(0.4)
        );
        assert_eq!(c.retrieval.k, Some(5));
        assert!(toml::from_str::<Config>("[retrieval]\nalpha = 1.5\n").is_err());
        assert!(toml::from_str::<Config>("[retrieval]\nmetod = \"bm25\"\n").is_err());
    }

    #[test]
    fn endpoints_are_a_list_with_defaults() {
        let c: Config = toml::from_str(
            "[[endpoints]]\nurl = \"http://a:1/v1\"\n\n[[endpoints]]\nurl = \"http://b:2/v1\"\nmodel = \"m\"\napi_key_env = \"KEY\"\nmax_concurrent = 4\n",
        )
        .expect("valid config");
        assert_eq!(c.endpoints.len(), 2);
        assert_eq!(c.endpoints[0].max_concurrent, 1);
        assert_eq!(c.endpoints[0].model, None);
        assert_eq!(c.endpoints[1].max_concurrent, 4);
        assert_eq!(c.endpoints[1].api_key_env.as_deref(), Some("KEY"));
        assert!(toml::from_str::<Config>("[[endpoints]]\nmodel = \"m\"\n").is_err());
        let c: Config = toml::from_str(
            "[models]\ngpu_layers = 12\n\n[[endpoints]]\nurl = \"http://a:1/v1\"\n\n[[endpoints]]\nurl = \"http://e:3/v1\"\nembeddings = true\n",
        )
        .expect("valid config");
        assert_eq!(c.models.gpu_layers, Some(12));
        assert_eq!(c.chat_endpoints().len(), 1);
        assert_eq!(
            c.embed_endpoint().map(|e| e.url.as_str()),
            Some("http://e:3/v1")
        );
        assert!(toml::from_str::<Config>("[[endpoints]]\nurl = \"u\"\nurll = 1\n").is_err());
    }
}

#[cfg(test)]
mod template_tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::core::retrieval::{Alpha, Method};

    fn paths() -> Paths {
        Paths {
            config_dir: PathBuf::from("/home/ann/.config/raglab"),
            data_dir: PathBuf::from("/home/ann/.local/share/raglab"),
        }
    }

    /// The template with every commented setting and section header uncommented, and
    /// the `section.key` name of each setting.
    fn uncommented(template: &str) -> (String, BTreeSet<String>) {
        let mut text = String::new();
        let mut names = BTreeSet::new();
        let mut section = String::new();
        for line in template.lines() {
            // Section headers are written uncommented; settings commented out.
            let Some(rest) = line
                .strip_prefix("# ")
                .or_else(|| line.starts_with('[').then_some(line))
            else {
                continue;
            };
            let header = rest.trim_matches(|c| c == '[' || c == ']');
            if rest.starts_with('[') && header.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                section = format!("{header}.");
                text.push_str(rest);
                text.push('\n');
            } else if let Some((key, _)) = rest.split_once(" = ")
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            {
                names.insert(format!("{section}{key}"));
                text.push_str(rest);
                text.push('\n');
            }
        }
        (text, names)
    }

    #[test]
    fn the_template_as_written_changes_nothing() {
        let c: Config = toml::from_str(&Config::template(&paths())).expect("template parses");
        assert_eq!(
            serde_json::to_value(&c).expect("serialise"),
            serde_json::to_value(Config::default()).expect("serialise")
        );
    }

    #[test]
    fn every_default_the_template_shows_is_the_default() {
        let p = paths();
        let (text, _) = uncommented(&Config::template(&p));
        let c: Config = toml::from_str(&text)
            .unwrap_or_else(|e| panic!("uncommented template is not a config: {e}\n{text}"));
        let empty = Config::default();
        assert_eq!(c.workspace_dir(&p), empty.workspace_dir(&p));
        assert_eq!(c.theme.as_deref(), Some(defaults::THEME));
        assert_eq!(c.embed_model(&p), empty.embed_model(&p));
        assert_eq!(c.gen_model(&p), empty.gen_model(&p));
        // Unset, the judge is the generator.
        assert_eq!(c.models.judge, Some(empty.gen_model(&p)));
        assert_eq!(c.models.query_prefix.as_deref(), Some(""));
        assert_eq!(c.models.document_prefix.as_deref(), Some(""));
        // The CPU build offloads nothing: the value shown is this build's default.
        assert_eq!(c.models.gpu_layers, Some(0));
        assert_eq!(c.chunking.window_size, defaults::WINDOW_SIZE);
        assert_eq!(c.chunking.window_overlap, defaults::WINDOW_OVERLAP);
        assert_eq!(c.retrieval.method, Some(defaults::METHOD));
        assert_eq!(c.retrieval.method, Some(Method::Hybrid));
        assert_eq!(
            c.retrieval.alpha.map(Alpha::get),
            Some(Alpha::DEFAULT.get())
        );
        assert_eq!(c.retrieval.k, Some(defaults::K));
        assert_eq!(c.annotation.order_seed, Some(defaults::ORDER_SEED));
        let [e] = c.endpoints.as_slice() else {
            panic!(
                "the template shows one endpoint block, not {}",
                c.endpoints.len()
            )
        };
        assert_eq!(e.max_concurrent, defaults::MAX_CONCURRENT);
        assert_eq!(e.timeout_s, Some(defaults::TIMEOUT_S));
        assert_eq!(e.request_timeout_s, Some(defaults::REQUEST_TIMEOUT_S));
        assert_eq!(e.context_tokens, Some(defaults::CONTEXT_TOKENS));
        let bare: EndpointConfig = toml::from_str(&format!("url = {:?}", e.url)).expect("bare");
        assert_eq!(
            (
                e.allow_plain_http_key,
                e.standard_sampling,
                e.chat_route,
                e.embeddings
            ),
            (
                bare.allow_plain_http_key,
                bare.standard_sampling,
                bare.chat_route,
                bare.embeddings
            )
        );
        assert_eq!(c.object_store.allow_http, Some(false));
    }

    /// Every setting the config accepts is in the template. The literal below names
    /// every field without `..`, so a new setting does not compile here until it is
    /// added, and then fails until the template shows it.
    #[test]
    fn the_template_shows_every_setting() {
        let s = || Some(String::from("x"));
        let path = || Some(PathBuf::from("x"));
        let full = Config {
            workspace: path(),
            theme: s(),
            questions: path(),
            models: ModelConfig {
                embed: path(),
                generate: path(),
                judge: path(),
                gpu_layers: Some(1),
                query_prefix: s(),
                document_prefix: s(),
            },
            chunking: ChunkingConfig {
                window_size: 1,
                window_overlap: 1,
            },
            retrieval: RetrievalConfig {
                method: Some(Method::Bm25),
                alpha: Some(Alpha::DEFAULT),
                k: Some(1),
                abstain_below: Some(0.5),
            },
            annotation: AnnotationConfig {
                rubric: path(),
                order_seed: Some(1),
            },
            prompts: PromptsConfig {
                free_form: path(),
                no_retrieval: path(),
                multiple_choice: path(),
                multiple_choice_no_context: path(),
                judge: path(),
                summary: path(),
                free_form_alternatives: vec![PathBuf::from("p")],
                grounded_statements: path(),
                grounded_verify: path(),
                grounded_useful: path(),
                evalset_fact: path(),
                evalset_reasoning: path(),
                evalset_critique: path(),
            },
            rerank: RerankConfig {
                model: path(),
                prompt: path(),
                depth: Some(10),
                keep: Some(5),
                share_prefix: true,
            },
            endpoints: vec![EndpointConfig {
                url: "u".into(),
                model: s(),
                api_key_env: s(),
                max_concurrent: 1,
                timeout_s: Some(1),
                request_timeout_s: Some(1),
                allow_plain_http_key: true,
                context_tokens: Some(1),
                standard_sampling: true,
                chat_route: true,
                embeddings: true,
                rerank: true,
            }],
            object_store: ObjectStoreConfig {
                endpoint: s(),
                region: s(),
                access_key_id: s(),
                secret_access_key_env: s(),
                allow_http: Some(true),
            },
        };
        let value = toml::Value::try_from(&full).expect("serialise");
        let mut settings = BTreeSet::new();
        let toml::Value::Table(top) = value else {
            panic!("a config is a table")
        };
        for (key, v) in top {
            let inner = match v {
                toml::Value::Table(t) => Some(t),
                toml::Value::Array(a) => a.into_iter().find_map(|e| match e {
                    toml::Value::Table(t) => Some(t),
                    _ => None,
                }),
                _ => None,
            };
            match inner {
                Some(t) => settings.extend(t.keys().map(|k| format!("{key}.{k}"))),
                None => {
                    settings.insert(key);
                }
            }
        }
        let (_, shown) = uncommented(&Config::template(&paths()));
        assert_eq!(shown, settings, "settings shown (left) vs accepted (right)");
    }

    #[test]
    fn paths_in_the_template_are_quoted_for_toml() {
        let p = Paths {
            config_dir: PathBuf::from("/c"),
            data_dir: PathBuf::from(r#"/odd "name" \ dir"#),
        };
        let (text, _) = uncommented(&Config::template(&p));
        let c: Config = toml::from_str(&text).expect("parses");
        assert_eq!(c.workspace_dir(&p), Config::default().workspace_dir(&p));
    }
}
