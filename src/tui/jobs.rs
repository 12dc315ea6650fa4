//! Background jobs of the TUI and the messages they send back. Each job owns its
//! inputs; results carry a ticket so that a superseded request's answer is dropped.
//! llama.cpp work runs on blocking threads; lance commits on the async runtime.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::app::App;
use crate::cli::Context;
use crate::core::agreement::Bootstrap;
use crate::core::retrieval::QueryLists;
use crate::infer::generate::{GenConfig, Generator};
use crate::service::annotation::{
    AgreementRow, Disagreement, Item, Label, agreement_table, current, disagreements, items_table,
    judge_labels, labels_table, pick_reviewers,
};
use crate::service::generation::{
    AnswerRecord, Answerer, QuestionRecord, RunConfig, answers, default_template, file_sha256,
    judgements,
};
use crate::service::retrieval::{DEFAULT_DEPTH, QueryTimings, Retriever};
use crate::store::workspace::Workspace;

pub enum Msg {
    Retriever(Result<Arc<Retriever>, String>),
    Search {
        ticket: u64,
        result: Result<Box<(QueryLists, QueryTimings)>, String>,
    },
    GenPrompt {
        ticket: u64,
        prompt: String,
    },
    GenToken {
        ticket: u64,
        piece: String,
    },
    GenDone {
        ticket: u64,
        result: Result<Box<AnswerRecord>, String>,
    },
    Annotation {
        items: Vec<Item>,
        labels: Vec<Label>,
        answers: Vec<AnswerRecord>,
    },
    Saved {
        ticket: u64,
        result: Result<f64, String>,
    },
    Agreement(Result<AgreementResult, String>),
}

/// The agreement table, the two reviewers, and the selected pair's disagreements.
pub type AgreementResult = (Vec<AgreementRow>, (String, String), Vec<Disagreement>);

/// The generator and its file hash, loaded on first use.
type GenSlot = Arc<OnceLock<Result<(Arc<Generator>, String), String>>>;

pub struct Jobs {
    tx: UnboundedSender<Msg>,
    ws: Workspace,
    embed: crate::infer::embed::EmbedConfig,
    gen_cfg: GenConfig,
    abstain_below: Option<f64>,
    retriever: Option<Arc<Retriever>>,
    generator: GenSlot,
    answers: Vec<AnswerRecord>,
    /// The start-up reads of lance datasets; quitting waits for them (see `settle`).
    loads: Vec<tokio::task::JoinHandle<()>>,
}

impl Jobs {
    pub fn new(ctx: &Context) -> (Self, UnboundedReceiver<Msg>) {
        let (tx, rx) = unbounded_channel();
        // One thread for llama.cpp work in the TUI, so a core stays free for the UI.
        let embed = crate::service::retrieval::embed_config(ctx, None, Some(1));
        let mut gen_cfg = GenConfig::new(ctx.config.gen_model(&ctx.paths));
        gen_cfg.threads = (crate::infer::backend::all_cores() - 1).max(1);
        let jobs = Self {
            tx,
            ws: ctx.workspace.clone(),
            embed,
            gen_cfg,
            abstain_below: ctx.config.retrieval.abstain_below,
            retriever: None,
            generator: Arc::new(OnceLock::new()),
            answers: Vec::new(),
            loads: Vec::new(),
        };
        (jobs, rx)
    }

    /// Start loading what the panes need, after the first frame is on screen.
    pub fn load_background(&mut self) {
        let (ws, cfg, tx) = (self.ws.clone(), self.embed.clone(), self.tx.clone());
        let retriever = tokio::spawn(async move {
            let msg = match Retriever::open(&ws, Some(&cfg)).await {
                Ok(r) if !r.is_fresh() => {
                    Err("indexes out of date with the chunks: run `raglab index`".to_string())
                }
                Ok(r) => Ok(Arc::new(r)),
                Err(e) => Err(format!("{e:#}")),
            };
            let _ = tx.send(Msg::Retriever(msg));
        });
        let annotation = self.load_annotation();
        self.loads.extend([retriever, annotation]);
    }

    /// Wait (at most `limit`) for the start-up reads before the runtime shuts down:
    /// lance panics in a worker thread when its scan tasks are cancelled mid-read,
    /// which printed a panic message when quitting during start-up.
    pub async fn settle(&mut self, limit: std::time::Duration) {
        let all = futures::future::join_all(self.loads.drain(..));
        let _ = tokio::time::timeout(limit, all).await;
    }

    fn load_annotation(&self) -> tokio::task::JoinHandle<()> {
        let (ws, tx) = (self.ws.clone(), self.tx.clone());
        tokio::spawn(async move {
            let items: Vec<Item> = items_table(&ws).read_all().await.unwrap_or_default();
            let mut labels: Vec<Label> = labels_table(&ws).read_all().await.unwrap_or_default();
            let judg = judgements(&ws).read_all().await.unwrap_or_default();
            labels.extend(judge_labels(&items, &judg));
            let answers = answers(&ws).read_all().await.unwrap_or_default();
            let _ = tx.send(Msg::Annotation {
                items,
                labels,
                answers,
            });
        })
    }

    /// Start every job the app queued.
    pub fn dispatch(&mut self, app: &mut App) {
        for (ticket, text) in std::mem::take(&mut app.query.jobs) {
            match &self.retriever {
                Some(r) => {
                    let (r, tx) = (Arc::clone(r), self.tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let result = r
                            .query(&text, DEFAULT_DEPTH)
                            .map(Box::new)
                            .map_err(|e| format!("{e:#}"));
                        let _ = tx.send(Msg::Search { ticket, result });
                    });
                }
                None => app
                    .query
                    .on_result(ticket, Err("retrieval is not ready yet".into())),
            }
        }
        for job in std::mem::take(&mut app.generate.jobs) {
            app.generate.previous = self
                .answers
                .iter()
                .filter(|a| a.question_id == job.question.id)
                .cloned()
                .rev()
                .collect();
            let Some(r) = self.retriever.clone() else {
                app.generate
                    .on_done(job.ticket, Err("retrieval is not ready yet".into()));
                continue;
            };
            let (slot, cfg, tx, ws) = (
                Arc::clone(&self.generator),
                self.gen_cfg.clone(),
                self.tx.clone(),
                self.ws.clone(),
            );
            let abstain_below = self.abstain_below;
            let handle = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                let ticket = job.ticket;
                let result = (|| -> Result<AnswerRecord, String> {
                    let loaded = slot.get_or_init(|| {
                        let g = Generator::spawn(&cfg).map_err(|e| e.to_string())?;
                        let sha = file_sha256(&cfg.model).map_err(|e| format!("{e:#}"))?;
                        Ok((Arc::new(g), sha))
                    });
                    let (g, sha) = loaded.as_ref().map_err(Clone::clone)?;
                    let config = RunConfig {
                        run: "tui".into(),
                        method: job.method,
                        alpha: job.alpha,
                        k: job.k,
                        sampling: job.sampling.clone(),
                        abstain_below,
                        ..RunConfig::default()
                    };
                    let answerer = Answerer {
                        retriever: Some(&r),
                        generator: g,
                        model_sha256: sha.clone(),
                        config: &config,
                        template: default_template(),
                    };
                    let q = QuestionRecord {
                        id: job.question.id.clone(),
                        text: job.question.text.clone(),
                        answer: job.question.answer.clone(),
                        relevant: job.question.relevant.clone(),
                    };
                    let prepared = answerer.prepare(&q).map_err(|e| format!("{e:#}"))?;
                    if let Ok(p) =
                        g.chat_prompt(vec![("user".into(), prepared.user_prompt.clone())])
                    {
                        let _ = tx.send(Msg::GenPrompt { ticket, prompt: p });
                    }
                    let token_tx = tx.clone();
                    let rec = answerer
                        .answer(&q, prepared, Arc::clone(&job.stop), |piece| {
                            let _ = token_tx.send(Msg::GenToken {
                                ticket,
                                piece: piece.to_string(),
                            });
                        })
                        .map_err(|e| format!("{e:#}"))?;
                    handle
                        .block_on(answers(&ws).append(std::slice::from_ref(&rec)))
                        .map_err(|e| format!("answer not saved: {e}"))?;
                    Ok(rec)
                })();
                let _ = tx.send(Msg::GenDone {
                    ticket,
                    result: result.map(Box::new),
                });
            });
        }
        for (ticket, label) in std::mem::take(&mut app.annotate.saves) {
            let (ws, tx) = (self.ws.clone(), self.tx.clone());
            tokio::spawn(async move {
                let t = Instant::now();
                let result = labels_table(&ws)
                    .append(std::slice::from_ref(&label))
                    .await
                    .map(|_| t.elapsed().as_secs_f64() * 1e3)
                    .map_err(|e| e.to_string());
                let _ = tx.send(Msg::Saved { ticket, result });
            });
        }
        if std::mem::take(&mut app.agreement.wants_refresh) && !app.agreement.computing {
            app.agreement.computing = true;
            let (ws, tx, rubric) = (
                self.ws.clone(),
                self.tx.clone(),
                app.annotate.rubric.clone(),
            );
            let pair = app.agreement.pair;
            tokio::spawn(async move {
                let items: Vec<Item> = items_table(&ws).read_all().await.unwrap_or_default();
                let mut labels: Vec<Label> = labels_table(&ws).read_all().await.unwrap_or_default();
                labels.extend(judge_labels(
                    &items,
                    &judgements(&ws).read_all().await.unwrap_or_default(),
                ));
                let result = tokio::task::spawn_blocking(move || {
                    let cur = current(&labels);
                    let (r1, r2) = pick_reviewers(&cur, None).map_err(|e| e.to_string())?;
                    let rows = agreement_table(&rubric, &cur, (&r1, &r2), Bootstrap::default());
                    let (a, b) = match pair {
                        0 => (r1.clone(), r2.clone()),
                        1 => (crate::service::annotation::JUDGE.to_string(), r1.clone()),
                        _ => (crate::service::annotation::JUDGE.to_string(), r2.clone()),
                    };
                    Ok((rows, (r1, r2), disagreements(&cur, &a, &b)))
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                let _ = tx.send(Msg::Agreement(result));
            });
        }
    }

    /// Apply a finished job's message to the app.
    pub fn apply(&mut self, app: &mut App, msg: Msg) {
        match msg {
            Msg::Retriever(Ok(r)) => {
                app.query.status = None;
                self.retriever = Some(r);
            }
            Msg::Retriever(Err(e)) => app.query.status = Some(e),
            Msg::Search { ticket, result } => app.query.on_result(ticket, result.map(|b| *b)),
            Msg::GenPrompt { ticket, prompt } => app.generate.on_prompt(ticket, prompt),
            Msg::GenToken { ticket, piece } => app.generate.on_token(ticket, &piece),
            Msg::GenDone { ticket, result } => {
                let result = result.map(|b| *b);
                if let Ok(a) = &result {
                    self.answers.push(a.clone());
                }
                app.generate.on_done(ticket, result);
            }
            Msg::Annotation {
                items,
                labels,
                answers,
            } => {
                app.annotate.items = items;
                app.annotate.labels = labels;
                self.answers = answers;
                app.agreement.wants_refresh = true;
            }
            Msg::Saved { ticket, result } => app.annotate.on_saved(ticket, result),
            Msg::Agreement(result) => {
                app.agreement.computing = false;
                match result {
                    Ok((rows, reviewers, dis)) => {
                        app.agreement.rows = rows;
                        app.agreement.reviewers = Some(reviewers);
                        app.agreement.disagreements = dis;
                        app.agreement.status = None;
                    }
                    Err(e) => app.agreement.status = Some(e),
                }
            }
        }
    }
}
