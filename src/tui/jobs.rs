//! Background jobs of the TUI and the messages they send back. Each job owns its
//! inputs; results carry a ticket so that a superseded request's answer is dropped.
//! Every job calls one service function: llama.cpp work runs on blocking threads,
//! lance reads and commits on the async runtime.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::app::App;
use super::effect::{Effect, GenJob, ReplayJob};
use crate::core::agreement::Bootstrap;
use crate::core::compare::WholePlaces;
use crate::core::retrieval::QueryLists;
use crate::service::Context;
use crate::service::answer::save_answer;
use crate::service::answer::{AnswerRecord, RunConfig};
use crate::service::answer::{GeneratorSlot, answer_live, answer_live_endpoint, live_on_endpoints};
use crate::service::retrieval::{DEFAULT_DEPTH, QueryTimings, Retriever};
use crate::service::study::{self, Agreement, Study};

pub enum Msg {
    /// The retrieval state, and why dense retrieval is off if it is.
    Retriever(Result<(Arc<Retriever>, Option<String>), String>),
    /// A search's lists, with the places they give their own chunks.
    Search {
        ticket: u64,
        result: Result<Box<(QueryLists, WholePlaces, QueryTimings)>, String>,
    },
    /// Rerank scores of the Query pane's chunks, with the stage described.
    Reranked {
        ticket: u64,
        result: Result<(Vec<crate::core::fusion::Scored>, String), String>,
    },
    /// The same search's whole-corpus places (the second step of ranking on demand).
    Placed {
        ticket: u64,
        result: Result<Box<(WholePlaces, QueryTimings)>, String>,
    },
    /// The exact prompt, and where the answer is generated (CPU or the GPU with its
    /// layers offloaded, or the endpoint).
    GenPrompt {
        ticket: u64,
        prompt: String,
        backend: String,
    },
    GenToken {
        ticket: u64,
        piece: String,
    },
    GenDone {
        ticket: u64,
        result: Result<Box<AnswerRecord>, String>,
    },
    Annotation(Result<Box<Study>, String>),
    /// One group commit finished: each label's ticket with its result.
    Saved(Vec<(u64, Result<f64, String>)>),
    Agreement {
        ticket: u64,
        result: Result<Box<Agreement>, String>,
    },
    /// The lead's ranking of a pairwise study (`None`: no pair items).
    Preferences {
        ticket: u64,
        result: Result<Option<Box<study::Preferences>>, String>,
    },
    /// The study's datasets changed on disk (another process, or our own commits).
    StudyChanged(Vec<Option<String>>),
    Exported(Result<String, String>),
    ItemAdded(Result<bool, String>),
    /// A live judgement finished (and was committed), or failed.
    Judged {
        ticket: u64,
        result: Result<Box<crate::service::answer::JudgementRecord>, String>,
    },
    /// The last evaluations, for the Evaluation pane, with the fingerprint of the
    /// reports taken before they were read.
    Evaluation(
        Box<crate::service::evaluate::EvalOverview>,
        Vec<Option<String>>,
    ),
    /// The evaluation reports' fingerprint (a new one means a new evaluation).
    EvalChanged(Vec<Option<String>>),
    /// The evaluation-set candidates, for the Evalset pane.
    Evalset(Result<Vec<crate::service::evalset::CandidateView>, String>),
    /// A decision on a candidate was stored (what to say), or not.
    Decided(Result<String, String>),
    /// Two answer runs compared (`report answers --compare`), or why not.
    AnswerRunsCompared {
        ticket: u64,
        result: Result<Box<crate::service::evaluate::AnswerRunsComparison>, String>,
    },
    /// A replay showed all its text, or was stopped.
    ReplayDone {
        ticket: u64,
        stopped: bool,
    },
}

/// The newest request of one kind: starting another aborts the older task (whose
/// answer, had it come, would have been dropped by its ticket anyway). Only for work
/// that holds no lance scan: lance panics in a worker thread when a scan it runs is
/// cancelled, so tasks that read datasets finish and are dropped by ticket instead.
#[derive(Default)]
struct Latest {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Latest {
    fn start(&mut self, job: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(old) = self.task.take() {
            old.abort();
        }
        self.task = Some(tokio::spawn(job));
    }
}

pub struct Jobs {
    tx: UnboundedSender<Msg>,
    ctx: Arc<Context>,
    retriever: Option<Arc<Retriever>>,
    /// Why the retriever could not be opened (an empty workspace, a stale index): what
    /// a search or a generation says instead of waiting for it.
    retriever_failed: Option<String>,
    generator: GeneratorSlot,
    /// The judge model, loaded on the first live judgement.
    judge: GeneratorSlot,
    searching: Latest,
    answers: Vec<AnswerRecord>,
    /// Tasks that read or commit lance datasets (start-up reads, agreement reads,
    /// label commits); quitting waits for them (see `settle`).
    loads: Vec<tokio::task::JoinHandle<()>>,
    /// Labels waiting for the commit in flight (group commit: a burst of keys is
    /// committed together, not queued one commit after another).
    label_queue: Vec<(u64, crate::core::annotation::Label)>,
    label_saving: bool,
    /// The study's fingerprint as last loaded, and whether a check is running.
    study_seen: Option<Vec<Option<String>>>,
    /// The evaluation reports' fingerprint as last loaded.
    eval_seen: Option<Vec<Option<String>>>,
    polling: bool,
    last_poll: std::time::Instant,
    /// Who is looking: the Evaluation pane's judge pass rates are read for them.
    viewer: crate::core::blinding::Viewer,
}

/// How often the study's datasets are checked for commits by other processes.
pub const STUDY_POLL: std::time::Duration = std::time::Duration::from_secs(2);

impl Jobs {
    pub fn new(ctx: &Context) -> (Self, UnboundedReceiver<Msg>) {
        let (tx, rx) = unbounded_channel();
        let jobs = Self {
            tx,
            ctx: Arc::new(ctx.clone()),
            retriever: None,
            retriever_failed: None,
            generator: GeneratorSlot::default(),
            judge: GeneratorSlot::default(),
            searching: Latest::default(),
            answers: Vec::new(),
            loads: Vec::new(),
            label_queue: Vec::new(),
            label_saving: false,
            study_seen: None,
            eval_seen: None,
            polling: false,
            last_poll: std::time::Instant::now(),
            viewer: crate::core::blinding::Viewer::Nobody,
        };
        (jobs, rx)
    }

    /// Whether the retrieval indexes and the embedding model are loaded.
    pub fn retriever_ready(&self) -> bool {
        self.retriever.is_some()
    }

    /// Whether opening the retriever ended, in success or failure.
    pub fn retriever_settled(&self) -> bool {
        self.retriever.is_some() || self.retriever_failed.is_some()
    }

    /// What a search or generation says while there is no retriever: the reason it
    /// could not be opened (and what to run), or that it is still loading.
    fn no_retriever(&self) -> String {
        match &self.retriever_failed {
            Some(why) => format!("retrieval is unavailable: {why}"),
            None => "retrieval is still loading (the indexes and the embedding model)…".into(),
        }
    }

    /// Who is looking (the app's viewer at start-up; it changes when a name is typed).
    pub fn set_viewer(&mut self, viewer: crate::core::blinding::Viewer) {
        self.viewer = viewer;
    }

    /// Start loading what the panes need, after the first frame is on screen.
    pub fn load_background(&mut self) {
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        let retriever = tokio::spawn(async move {
            // One thread for query embedding, so a core stays free for the UI.
            let embed = crate::service::ModelChoice {
                threads: Some(1),
                ..Default::default()
            };
            let msg = crate::service::retrieval::open_for_browsing(&ctx, &embed)
                .await
                .map(|(r, off)| (Arc::new(r), off))
                .map_err(|e| format!("{e:#}"));
            let _ = tx.send(Msg::Retriever(msg));
        });
        let annotation = self.load_annotation();
        let evaluation = self.load_evaluation();
        self.loads.extend([retriever, annotation, evaluation]);
    }

    /// Read the last evaluations (report files, judge pass rates) for the pane.
    fn load_evaluation(&self) -> tokio::task::JoinHandle<()> {
        let (ctx, tx, viewer) = (Arc::clone(&self.ctx), self.tx.clone(), self.viewer.clone());
        tokio::spawn(async move {
            // Before reading: a report written during the read changes it again.
            let fp = crate::service::evaluate::fingerprint(&ctx);
            let o = match crate::service::study::sight(&ctx, &viewer).await {
                Ok(sight) => crate::service::evaluate::overview(&ctx, &sight).await,
                Err(e) => crate::service::evaluate::EvalOverview {
                    problems: vec![format!("cannot read the study: {e:#}")],
                    ..Default::default()
                },
            };
            let _ = tx.send(Msg::Evaluation(Box::new(o), fp));
        })
    }

    /// Compare two answer runs for the viewer with the function `raglab report answers
    /// --compare` calls, so the view and the command show the same numbers.
    fn compare_answer_runs(
        &self,
        ticket: u64,
        a: String,
        b: String,
    ) -> tokio::task::JoinHandle<()> {
        let (ctx, tx, viewer) = (Arc::clone(&self.ctx), self.tx.clone(), self.viewer.clone());
        tokio::spawn(async move {
            let result = async {
                let sight = crate::service::study::sight(&ctx, &viewer).await?;
                crate::service::evaluate::compare_answer_runs(&ctx, &a, &b, &sight).await
            }
            .await
            .map(Box::new)
            .map_err(|e| format!("cannot compare `{a}` with `{b}`: {e:#}"));
            let _ = tx.send(Msg::AnswerRunsCompared { ticket, result });
        })
    }

    /// Read the evaluation-set candidates with their critiques, decisions and the
    /// default filter's verdicts.
    fn load_evalset(&self) -> tokio::task::JoinHandle<()> {
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        tokio::spawn(async move {
            let r = crate::service::evalset::review(&ctx, Default::default(), None)
                .await
                .map(|(views, _)| views)
                .map_err(|e| format!("cannot read the candidates: {e:#}"));
            let _ = tx.send(Msg::Evalset(r));
        })
    }

    /// Pick the stored answer to replay and play it at its recorded pace
    /// ([`super::replay::play`]).
    fn replay(&mut self, app: &mut App, job: ReplayJob) {
        let picked = crate::service::answer::pick_replay(
            &self.answers,
            job.question_id.as_deref(),
            job.after.as_deref(),
        )
        .cloned();
        if let Some(a) = &picked {
            app.generate.previous = self
                .answers
                .iter()
                .filter(|x| x.question_id == a.question_id)
                .cloned()
                .rev()
                .collect();
        }
        app.generate.on_replay_start(job.ticket, picked.clone());
        let Some(a) = picked else { return };
        let ticket = job.ticket;
        let (tx, tx_done) = (self.tx.clone(), self.tx.clone());
        super::replay::play(
            a,
            job,
            move |piece| {
                let _ = tx.send(Msg::GenToken { ticket, piece });
            },
            move |stopped| {
                let _ = tx_done.send(Msg::ReplayDone { ticket, stopped });
            },
        );
    }

    /// Wait (at most `limit`) for the start-up reads before the runtime shuts down:
    /// lance panics in a worker thread when its scan tasks are cancelled mid-read,
    /// which printed a panic message when quitting during start-up.
    pub async fn settle(&mut self, limit: std::time::Duration) {
        let all = futures::future::join_all(self.loads.drain(..));
        let _ = tokio::time::timeout(limit, all).await;
    }

    fn load_annotation(&self) -> tokio::task::JoinHandle<()> {
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        tokio::spawn(async move {
            let study = study::load_study(&ctx)
                .await
                .map(Box::new)
                .map_err(|e| format!("cannot read the annotation study: {e:#}"));
            let _ = tx.send(Msg::Annotation(study));
        })
    }

    /// Run one effect of an update in the background.
    pub fn run(&mut self, app: &mut App, effect: Effect) {
        match effect {
            Effect::Search { ticket, text } => self.search(app, ticket, text),
            Effect::Rerank {
                ticket,
                question,
                ids,
            } => self.rerank(app, ticket, question, ids),
            Effect::Generate(job) => self.generate(app, job),
            Effect::SaveLabel { ticket, label } => self.save_label(app, ticket, label),
            Effect::RefreshAgreement => self.refresh_agreement(app),
            Effect::IdentityChanged => self.identity_changed(app),
            // The app turns it into a label commit; nothing reaches here.
            Effect::SaveFinal(_) => {}
            Effect::ExportAgreement => self.export_agreement(app),
            Effect::AddItem { answer_id } => self.add_item(answer_id),
            Effect::Judge { answer_id } => self.judge(app, answer_id),
            Effect::LoadEvaluation => {
                let task = self.load_evaluation();
                self.track(task);
            }
            Effect::Replay(job) => self.replay(app, job),
            Effect::CompareAnswerRuns { ticket, a, b } => {
                let task = self.compare_answer_runs(ticket, a, b);
                self.track(task);
            }
            Effect::LoadEvalset => {
                let task = self.load_evalset();
                self.track(task);
            }
            Effect::DecideCandidate {
                candidate_id,
                decision,
            } => {
                let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
                let reviewer = app.annotate.reviewer.clone();
                let task = tokio::spawn(async move {
                    let r = crate::service::evalset::decide(
                        &ctx,
                        &candidate_id,
                        decision,
                        reviewer.as_deref(),
                    )
                    .await
                    .map(|()| {
                        format!(
                            "saved: {} {candidate_id}",
                            decision.map_or("cleared", |d| match d {
                                crate::core::evalset::Decision::Accept => "accepted",
                                crate::core::evalset::Decision::Reject => "rejected",
                            })
                        )
                    })
                    .map_err(|e| format!("NOT saved: {e:#}"));
                    let _ = tx.send(Msg::Decided(r));
                });
                self.track(task);
            }
        }
    }

    /// Check (at most every [`STUDY_POLL`]) whether another process committed labels,
    /// items, assignments, judgements or answers; a change reloads the study and
    /// recomputes the agreement. Reads directory listings only, on a blocking thread.
    pub fn poll_study(&mut self) {
        if self.polling || self.last_poll.elapsed() < STUDY_POLL {
            return;
        }
        self.polling = true;
        self.last_poll = std::time::Instant::now();
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        tokio::spawn(async move {
            let (fp, eval) = tokio::task::spawn_blocking(move || {
                (
                    study::study_fingerprint(&ctx),
                    crate::service::evaluate::fingerprint(&ctx),
                )
            })
            .await
            .unwrap_or_default();
            let _ = tx.send(Msg::EvalChanged(eval));
            let _ = tx.send(Msg::StudyChanged(fp));
        });
    }

    fn export_agreement(&mut self, app: &mut App) {
        let Some(a) = app.agreement.last.clone() else {
            return;
        };
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        tokio::task::spawn_blocking(move || {
            let result = (|| -> anyhow::Result<String> {
                let dir = ctx.workspace.root().join("exports");
                std::fs::create_dir_all(&dir)?;
                let stamp = crate::service::base::now_rfc3339().replace(':', "");
                let csv = dir.join(format!("agreement-{stamp}.csv"));
                let md = dir.join(format!("agreement-{stamp}.md"));
                crate::service::base::write_whole(
                    &csv,
                    crate::service::study::to_csv(&a).as_bytes(),
                )?;
                crate::service::base::write_whole(
                    &md,
                    crate::service::study::to_markdown(&a).as_bytes(),
                )?;
                Ok(format!("exported {} and {}", csv.display(), md.display()))
            })()
            .map_err(|e| format!("export failed: {e:#}"));
            let _ = tx.send(Msg::Exported(result));
        });
    }

    fn add_item(&mut self, answer_id: String) {
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        let task = tokio::spawn(async move {
            let result = study::add_answer_item(&ctx, &answer_id)
                .await
                .map_err(|e| format!("not sent to annotation: {e:#}"));
            let _ = tx.send(Msg::ItemAdded(result));
        });
        self.track(task);
    }

    /// Judge a stored answer live: the judge's tokens stream into the Generate pane,
    /// the judgement is committed like `raglab judge` commits it, and the study's
    /// reload (answers and judgements) shows it in the Query pane's answers panel.
    fn judge(&mut self, app: &mut App, answer_id: String) {
        let ticket = app.generate.start_judging(&answer_id);
        let found = self
            .answers
            .iter()
            .find(|a| a.answer_id == answer_id)
            .cloned();
        let (Some(r), Some(answer)) = (self.retriever.clone(), found) else {
            app.generate.on_judged(
                ticket,
                Err("the answer or the retrieval state is not loaded yet".into()),
            );
            return;
        };
        let rubric = match self.ctx.rubric(None) {
            Ok(r) => r,
            Err(e) => return app.generate.on_judged(ticket, Err(format!("{e:#}"))),
        };
        let (slot, tx, ctx) = (self.judge.clone(), self.tx.clone(), Arc::clone(&self.ctx));
        let task = tokio::spawn(async move {
            let (token_tx, live_ctx) = (tx.clone(), Arc::clone(&ctx));
            let judged = tokio::task::spawn_blocking(move || {
                crate::service::answer::judge_live(
                    &live_ctx,
                    &slot,
                    &r,
                    &rubric,
                    &answer,
                    |piece| {
                        let _ = token_tx.send(Msg::GenToken {
                            ticket,
                            piece: piece.to_string(),
                        });
                    },
                )
            })
            .await
            .map_err(|e| anyhow::anyhow!("the judge stopped: {e}"))
            .and_then(|r| r);
            let committed = async {
                let rec = judged?;
                crate::service::answer::judgements(&ctx.workspace)
                    .append(std::slice::from_ref(&rec))
                    .await?;
                anyhow::Ok(Box::new(rec))
            };
            let result = committed.await.map_err(|e| format!("{e:#}"));
            let _ = tx.send(Msg::Judged { ticket, result });
        });
        self.track(task);
    }

    /// Score `ids` for `question` with the configured rerank stage (`[rerank]`, or a
    /// rerank endpoint); the scores are cached in the workspace like any command's.
    fn rerank(&mut self, app: &mut App, ticket: u64, question: String, ids: Vec<String>) {
        let Some(r) = &self.retriever else {
            app.query.on_reranked(ticket, Err(self.no_retriever()));
            return;
        };
        let (r, tx, ctx) = (Arc::clone(r), self.tx.clone(), Arc::clone(&self.ctx));
        let task = tokio::spawn(async move {
            let result = async {
                let setup = crate::service::retrieval::rerank::setup(&ctx, &Default::default())?;
                let choice = crate::service::ModelChoice {
                    model: None,
                    threads: Some(Context::tui_threads()),
                };
                let mut stage =
                    crate::service::retrieval::rerank::Reranker::open(&ctx, setup, &choice).await?;
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let scored = stage.scored_ids(&ctx, &r, &question, &refs).await?;
                anyhow::Ok((scored, stage.describe()))
            }
            .await
            .map_err(|e| format!("rerank: {e:#}"));
            let _ = tx.send(Msg::Reranked { ticket, result });
        });
        self.track(task);
    }

    fn search(&mut self, app: &mut App, ticket: u64, text: String) {
        let Some(r) = &self.retriever else {
            app.query.on_result(ticket, Err(self.no_retriever()));
            return;
        };
        let (r, tx) = (Arc::clone(r), self.tx.clone());
        // Ranked on demand in two steps: the lists as deep as the pane cuts them
        // (drawn at once), then the whole-corpus places of the chunks they hold and of
        // the targets (exact wherever a chunk ranks, without ranking the whole corpus).
        // A newer search aborts this task: a second step not yet started never starts
        // (one already running on the blocking pool finishes, and its answer, of an
        // old ticket, is dropped).
        let depth = app.query.depth.max(DEFAULT_DEPTH).max(app.query.k);
        let targets = app
            .query
            .current
            .as_ref()
            .map(|q| q.relevant.clone())
            .unwrap_or_default();
        self.searching.start(async move {
            let first = {
                let (r, text, targets) = (Arc::clone(&r), text.clone(), targets.clone());
                tokio::task::spawn_blocking(move || {
                    let (vector, embed_ms) = r.embed_for_places(&text)?;
                    let (lists, within, mut t) =
                        r.lists_on_demand(&text, vector.as_deref(), depth, &targets)?;
                    t.embed_ms = embed_ms;
                    anyhow::Ok((lists, within, t, vector))
                })
                .await
            };
            let (lists, vector) = match first {
                Ok(Ok((lists, within, t, vector))) => {
                    let shown = Box::new((lists.clone(), within, t));
                    let _ = tx.send(Msg::Search {
                        ticket,
                        result: Ok(shown),
                    });
                    (lists, vector)
                }
                Ok(Err(e)) => {
                    let result = Err(format!("{e:#}"));
                    let _ = tx.send(Msg::Search { ticket, result });
                    return;
                }
                Err(e) => {
                    let result = Err(format!("the search stopped: {e}"));
                    let _ = tx.send(Msg::Search { ticket, result });
                    return;
                }
            };
            let placed = tokio::task::spawn_blocking(move || {
                r.places_on_demand(&text, vector.as_deref(), &lists, &targets)
            })
            .await;
            let result = match placed {
                Ok(Ok(p)) => Ok(Box::new(p)),
                Ok(Err(e)) => Err(format!("{e:#}")),
                Err(e) => Err(format!("the task stopped: {e}")),
            };
            let _ = tx.send(Msg::Placed { ticket, result });
        });
    }

    fn generate(&mut self, app: &mut App, job: GenJob) {
        app.generate.previous = self
            .answers
            .iter()
            .filter(|a| a.question_id == job.question.id)
            .cloned()
            .rev()
            .collect();
        let Some(r) = self.retriever.clone() else {
            app.generate.on_done(job.ticket, Err(self.no_retriever()));
            return;
        };
        let (slot, tx, ctx) = (
            self.generator.clone(),
            self.tx.clone(),
            Arc::clone(&self.ctx),
        );
        let template = match ctx.template(crate::core::template::TemplateKind::FreeForm, None) {
            Ok(t) => t,
            Err(e) => {
                app.generate.on_done(job.ticket, Err(format!("{e:#}")));
                return;
            }
        };
        let config = RunConfig {
            run: "tui".into(),
            template,
            method: job.method,
            sparse: job.sparse,
            alpha: job.alpha,
            k: job.k,
            sampling: job.sampling.clone(),
            abstain_below: ctx.config.retrieval.abstain_below,
            ..RunConfig::default()
        };
        // Not aborted when superseded: the pane raised this one's stop flag, so the
        // model stops at its next token and the partial answer is still saved (its
        // late messages carry an old ticket and are dropped by the pane).
        tokio::spawn(async move {
            let ticket = job.ticket;
            let result = generate_and_save(ctx, slot, r, job, config, tx.clone()).await;
            let _ = tx.send(Msg::GenDone {
                ticket,
                result: result.map(Box::new),
            });
        });
    }

    /// Every label is committed (saves are never superseded). While a commit is in
    /// flight, new labels wait and go together in the next one.
    fn save_label(&mut self, app: &App, ticket: u64, label: crate::core::annotation::Label) {
        self.label_queue.push((ticket, label));
        if !self.label_saving {
            self.flush_labels(app);
        }
    }

    /// Commit every queued label in one lance commit. Should the batch fail (one bad
    /// label refuses all, or the store's reply was lost), each is committed alone,
    /// except those already stored, so the good ones are kept, none is stored twice,
    /// and only the bad one is reported.
    fn flush_labels(&mut self, app: &App) {
        if self.label_queue.is_empty() {
            return;
        }
        self.label_saving = true;
        let batch = std::mem::take(&mut self.label_queue);
        let (ctx, tx) = (Arc::clone(&self.ctx), self.tx.clone());
        let (rubric, items) = (app.annotate.rubric().clone(), app.annotate.items.clone());
        let task = tokio::spawn(async move {
            let labels: Vec<_> = batch.iter().map(|(_, l)| l.clone()).collect();
            let results = match study::save_label_batch(&ctx, &rubric, &items, &labels).await {
                Ok(ms) => batch.iter().map(|(t, _)| (*t, Ok(ms))).collect(),
                Err(e) if batch.len() == 1 => vec![(batch[0].0, Err(format!("{e:#}")))],
                Err(_) => study::save_labels_each_once(&ctx, &rubric, &items, &labels)
                    .await
                    .into_iter()
                    .zip(&batch)
                    .map(|(r, (t, _))| (*t, r.map_err(|e| format!("{e:#}"))))
                    .collect(),
            };
            let _ = tx.send(Msg::Saved(results));
        });
        self.track(task);
    }

    /// A name was typed: every view drawn for no one is drawn again for the viewer
    /// (the Agreement pane recomputed, the judge pass rates read again, the Query
    /// pane's blind answers set anew).
    fn identity_changed(&mut self, app: &mut App) {
        self.viewer = app.annotate.viewer();
        if app.agreement.lead {
            app.agreement.lead_name.clone_from(&app.annotate.reviewer);
        }
        app.sync_blind();
        self.refresh_agreement(app);
        app.evaluation.loading = true;
        let task = self.load_evaluation();
        self.track(task);
    }

    /// Recompute the agreement. A newer request does not abort an older one (it reads
    /// lance datasets); the older result arrives with an old ticket and is dropped.
    fn refresh_agreement(&mut self, app: &mut App) {
        app.agreement.ticket += 1;
        app.agreement.computing = true;
        let (ctx, tx, ticket) = (Arc::clone(&self.ctx), self.tx.clone(), app.agreement.ticket);
        let rubric = app.annotate.rubric().clone();
        let req = study::AgreementRequest {
            reviewers: app.agreement.pair_choice.clone(),
            raters: None,
            boot: Bootstrap::default(),
            pair: app.agreement.pair,
            viewer: app.annotate.viewer(),
            version: app.agreement.version,
            judge_model: app.agreement.judge_model.clone(),
            gold: Vec::new(),
            window: study::DRIFT_WINDOW,
        };
        let task = tokio::spawn(async move {
            let result = study::agreement_with(&ctx, &rubric, req)
                .await
                .map(Box::new)
                .map_err(|e| format!("{e:#}"));
            let _ = tx.send(Msg::Agreement { ticket, result });
        });
        // Quitting waits for it like for the start-up reads (see `settle`).
        self.track(task);
        if app.annotate.viewer() == crate::core::blinding::Viewer::Lead {
            self.refresh_preferences(app);
        }
    }

    /// Rank a pairwise study's runs (the lead's band of the Agreement pane), under
    /// the same ticket as the agreement it goes with.
    fn refresh_preferences(&mut self, app: &App) {
        let (ctx, tx, ticket) = (Arc::clone(&self.ctx), self.tx.clone(), app.agreement.ticket);
        let rubric = app.annotate.rubric().clone();
        let task = tokio::spawn(async move {
            let ranked: anyhow::Result<Option<Box<study::Preferences>>> = async {
                if !study::is_pairwise(&ctx.workspace).await? {
                    return Ok(None);
                }
                let lead = crate::core::blinding::Viewer::Lead;
                let p = study::preferences(&ctx, &rubric, &lead, Bootstrap::default()).await?;
                Ok(Some(Box::new(p)))
            }
            .await;
            let result = ranked.map_err(|e| format!("{e:#}"));
            let _ = tx.send(Msg::Preferences { ticket, result });
        });
        self.track(task);
    }

    /// Apply a finished job's message to the app.
    pub fn apply(&mut self, app: &mut App, msg: Msg) {
        match msg {
            Msg::Retriever(r) => {
                if let Err(why) = &r {
                    self.retriever_failed = Some(why.clone());
                }
                let dense_off = r.map(|(retriever, dense_off)| {
                    self.retriever = Some(retriever);
                    dense_off
                });
                app.query.on_retriever(dense_off);
            }
            Msg::Search { ticket, result } => {
                app.query.on_result(ticket, result.map(|b| *b));
                if let Some(e) = app.query.rerank_request() {
                    self.run(app, e);
                }
            }
            Msg::Reranked { ticket, result } => app.query.on_reranked(ticket, result),
            Msg::Placed { ticket, result } => app.query.on_places(ticket, result.map(|b| *b)),
            Msg::GenPrompt {
                ticket,
                prompt,
                backend,
            } => app.generate.on_prompt(ticket, prompt, backend),
            Msg::GenToken { ticket, piece } => app.generate.on_token(ticket, &piece),
            Msg::GenDone { ticket, result } => {
                let result = result.map(|b| *b);
                if let Ok(a) = &result {
                    self.answers.push(a.clone());
                }
                app.on_answer_done(ticket, result);
            }
            Msg::Annotation(Ok(study)) => {
                let study = *study;
                self.answers.clone_from(&study.answers);
                if app.on_study_loaded(study) {
                    self.identity_changed(app);
                } else {
                    self.refresh_agreement(app);
                }
            }
            Msg::Annotation(Err(e)) => app.on_study_error(e),
            Msg::StudyChanged(fp) => {
                self.polling = false;
                // The first check also reloads: a commit between the start-up read
                // and this check would otherwise wait for the next one.
                if self.study_seen.as_ref() != Some(&fp) {
                    self.study_seen = Some(fp);
                    let task = self.load_annotation();
                    self.track(task);
                }
            }
            Msg::Evaluation(o, fp) => {
                self.eval_seen = Some(fp);
                app.evaluation.on_loaded(*o);
            }
            Msg::EvalChanged(fp) => {
                // Compared with what the last load read (nothing to compare with
                // while the first load is still reading).
                if self.eval_seen.as_ref().is_some_and(|seen| *seen != fp) {
                    self.eval_seen = Some(fp);
                    app.evaluation.loading = true;
                    let task = self.load_evaluation();
                    self.track(task);
                }
            }
            Msg::Evalset(r) => app.evalset.on_loaded(r),
            Msg::Decided(r) => {
                if let Some(effect) = app.evalset.on_decided(r) {
                    self.run(app, effect);
                }
            }
            Msg::ReplayDone { ticket, stopped } => app.generate.on_replay_done(ticket, stopped),
            Msg::AnswerRunsCompared { ticket, result } => {
                app.generate.compare.on_compared(ticket, result.map(|b| *b));
            }
            Msg::Exported(r) => app.agreement.on_exported(r),
            Msg::Judged { ticket, result } => app.on_judged(ticket, result.map(|b| *b)),
            Msg::ItemAdded(r) => app.on_item_added(r),
            Msg::Saved(results) => {
                app.on_labels_saved(results);
                self.label_saving = false;
                self.flush_labels(app);
            }
            Msg::Agreement { ticket, result } => {
                app.agreement.on_agreement(ticket, result.map(|b| *b));
            }
            Msg::Preferences { ticket, result } => app.agreement.on_preferences(ticket, result),
        }
    }

    /// Keep a load task (dropping the finished ones): loads read lance datasets and
    /// are never aborted, only outlived.
    fn track(&mut self, task: tokio::task::JoinHandle<()>) {
        self.loads.retain(|t| !t.is_finished());
        self.loads.push(task);
    }
}

/// One live answer: generated on the endpoints when the config names them, else in
/// process on a blocking thread, its prompt and tokens sent as they come, then saved.
async fn generate_and_save(
    ctx: Arc<Context>,
    slot: GeneratorSlot,
    r: Arc<Retriever>,
    job: GenJob,
    config: RunConfig,
    tx: UnboundedSender<Msg>,
) -> Result<AnswerRecord, String> {
    let ticket = job.ticket;
    let (prompt_tx, token_tx, live_ctx) = (tx.clone(), tx, Arc::clone(&ctx));
    let on_start = move |prompt, backend| {
        let _ = prompt_tx.send(Msg::GenPrompt {
            ticket,
            prompt,
            backend,
        });
    };
    let on_token = move |piece: &str| {
        let _ = token_tx.send(Msg::GenToken {
            ticket,
            piece: piece.to_string(),
        });
    };
    let stop = Arc::clone(&job.stop);
    let mut rec = if live_on_endpoints(&ctx) {
        answer_live_endpoint(&ctx, r, &job.question, &config, stop, on_start, on_token)
            .await
            .map_err(|e| format!("{e:#}"))?
    } else {
        tokio::task::spawn_blocking(move || {
            answer_live(
                &live_ctx,
                &slot,
                &r,
                &job.question,
                &config,
                stop,
                on_start,
                on_token,
            )
            .map_err(|e| format!("{e:#}"))
        })
        .await
        .unwrap_or_else(|e| Err(format!("the generation stopped: {e}")))?
    };
    // Every TUI generation is its own answer: the same question and seed twice (g,
    // then g again) must not store two answers under one id.
    rec.answer_id = format!("{}@{:x}", rec.answer_id, crate::service::study::now_nanos());
    save_answer(&ctx, &rec)
        .await
        .map(|()| rec)
        .map_err(|e| format!("answer not saved: {e:#}"))
}
