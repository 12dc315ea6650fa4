//! Background jobs of the TUI and the messages they send back, one file per use case
//! (retrieval, generation, study, evaluation, assessment). Each job owns its inputs and calls one
//! service function through [`Jobs::spawn`], which sends what it gives back as one
//! message; results carry a ticket so that a superseded request's answer is dropped.
//! llama.cpp work runs on blocking threads, lance reads and commits on the runtime.

mod assess;
mod evaluation;
mod generation;
mod retrieval;
mod study;

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::app::App;
use super::effect::Effect;
use crate::core::compare::WholePlaces;
use crate::core::retrieval::QueryLists;
use crate::service::Context;
use crate::service::answer::{AnswerRecord, GeneratorSlot};
use crate::service::retrieval::{QueryTimings, Retriever};
use crate::service::study::{Agreement, Preferences, Study};

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
        /// The prompt template, `name@hash`.
        template: String,
    },
    /// How much of the prompt the local model has read (tokens, of `total`).
    GenPromptRead {
        ticket: u64,
        decoded: usize,
        total: usize,
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
    /// One group commit finished: each label's ticket with its result (a refusal by
    /// the study's rules told apart from a store that failed).
    Saved(Vec<(u64, Result<f64, crate::service::study::SaveError>)>),
    Agreement {
        ticket: u64,
        result: Result<Box<Agreement>, String>,
    },
    /// The lead's ranking of a pairwise study (`None`: no pair items).
    Preferences {
        ticket: u64,
        result: Result<Option<Box<Preferences>>, String>,
    },
    /// The fingerprints of the study's datasets and of the evaluation reports (a
    /// change: another process, or our own commits, wrote them).
    Fingerprints {
        study: Vec<Option<String>>,
        evaluation: Vec<Option<String>>,
    },
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
    /// The evaluation-set candidates, for the Evalset pane.
    Evalset(Result<Vec<crate::service::evalset::CandidateView>, String>),
    /// A decision on a candidate was stored (what to say), or not.
    Decided(Result<String, String>),
    /// The runs matrix, for the Runs pane, or why not.
    Runs(Result<Box<crate::service::report::RunsMatrix>, String>),
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
    /// A relevance grade was stored (with the signing key and the assessor's queue
    /// left), or refused (why).
    Graded(
        super::effect::GradeJob,
        Result<crate::service::assess::Graded, String>,
    ),
    /// The head of an assessor's queue for the assessment view, or why it could not
    /// be read (no pool yet, a name refused).
    AssessQueue {
        ticket: u64,
        result: Result<Box<crate::service::assess::QueueHead>, String>,
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
        self.open_retriever();
        self.load_annotation();
        self.load_evaluation();
    }

    /// Wait (at most `limit`) for the tasks in flight before the runtime shuts down:
    /// lance panics in a worker thread when its scan tasks are cancelled mid-read,
    /// which printed a panic message when quitting during start-up.
    pub async fn settle(&mut self, limit: std::time::Duration) {
        let all = futures::future::join_all(self.loads.drain(..));
        let _ = tokio::time::timeout(limit, all).await;
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
            Effect::ExportAgreement => self.export_agreement(app),
            Effect::AddItem { answer_id } => self.add_item(answer_id),
            Effect::Judge { answer_id } => self.judge(app, answer_id),
            Effect::LoadEvaluation => self.load_evaluation(),
            Effect::Replay(job) => self.replay(app, job),
            Effect::CompareAnswerRuns { ticket, a, b } => self.compare_answer_runs(ticket, a, b),
            Effect::LoadEvalset => self.load_evalset(),
            Effect::LoadRuns { quality, baseline } => self.load_runs(quality, baseline),
            Effect::DecideCandidate {
                candidate_id,
                decision,
            } => self.decide(app, candidate_id, decision),
            Effect::Grade(job) => self.grade(job),
            Effect::AssessQueue {
                ticket,
                assessor,
                skipped,
            } => self.assess_queue(ticket, assessor, skipped),
        }
    }

    /// Apply a finished job's message to the app.
    pub fn apply(&mut self, app: &mut App, msg: Msg) {
        match msg {
            Msg::Retriever(r) => self.on_retriever(app, r),
            Msg::Search { ticket, result } => {
                app.query.on_result(ticket, result.map(|b| *b));
                if let Some(e) = app.query.rerank_request() {
                    self.run(app, e);
                }
            }
            Msg::Reranked { ticket, result } => {
                if let Some(e) = app.query.on_reranked(ticket, result) {
                    self.run(app, e);
                }
            }
            Msg::Placed { ticket, result } => app.query.on_places(ticket, result.map(|b| *b)),
            Msg::GenPrompt {
                ticket,
                prompt,
                backend,
                template,
            } => app.generate.on_prompt(ticket, prompt, backend, template),
            Msg::GenPromptRead {
                ticket,
                decoded,
                total,
            } => app.generate.on_prompt_read(ticket, decoded, total),
            Msg::GenToken { ticket, piece } => app.generate.on_token(ticket, &piece),
            Msg::GenDone { ticket, result } => {
                let result = result.map(|b| *b);
                if let Ok(a) = &result {
                    self.answers.push(a.clone());
                }
                app.on_answer_done(ticket, result);
            }
            Msg::Annotation(Ok(study)) => self.on_study(app, *study),
            Msg::Annotation(Err(e)) => app.on_study_error(e),
            Msg::Fingerprints { study, evaluation } => {
                self.on_evaluation_fingerprint(app, evaluation);
                self.on_study_fingerprint(study);
            }
            Msg::Evaluation(o, fp) => {
                self.eval_seen = Some(fp);
                app.evaluation.on_loaded(*o);
            }
            Msg::Evalset(r) => app.evalset.on_loaded(r),
            Msg::Runs(r) => app.runs.on_loaded(r.map(|m| *m)),
            Msg::Decided(r) => {
                if let Some(effect) = app.evalset.on_decided(r) {
                    self.run(app, effect);
                }
            }
            Msg::ReplayDone { ticket, stopped } => app.generate.on_replay_done(ticket, stopped),
            Msg::AnswerRunsCompared { ticket, result } => {
                app.generate.on_compared(ticket, result.map(|b| *b));
            }
            Msg::Exported(r) => app.agreement.on_exported(r),
            Msg::Judged { ticket, result } => app.on_judged(ticket, result.map(|b| *b)),
            Msg::ItemAdded(r) => app.on_item_added(r),
            Msg::Saved(results) => self.on_saved(app, results),
            Msg::Agreement { ticket, result } => {
                app.agreement.on_agreement(ticket, result.map(|b| *b));
            }
            Msg::Preferences { ticket, result } => app.agreement.on_preferences(ticket, result),
            // A grade given in the assessment view moves it to the next pair.
            Msg::Graded(job, result) => {
                if let Some(e) = app.query.on_graded(job, result) {
                    self.run(app, e);
                }
            }
            Msg::AssessQueue { ticket, result } => {
                app.query.on_assess_queue(ticket, result.map(|b| *b));
            }
        }
    }

    /// Run `work` on the runtime and send the message `into_msg` makes of what it
    /// gives. The task is kept, and quitting waits for it: a job may read or commit
    /// lance datasets, and lance panics in a worker thread when a scan it runs is
    /// cancelled, so such tasks are outlived (a superseded one's answer is dropped by
    /// its ticket), never aborted.
    fn spawn<T: Send + 'static>(
        &mut self,
        work: impl std::future::Future<Output = T> + Send + 'static,
        into_msg: impl FnOnce(T) -> Msg + Send + 'static,
    ) {
        let tx = self.tx.clone();
        let task = tokio::spawn(async move {
            let _ = tx.send(into_msg(work.await));
        });
        self.loads.retain(|t| !t.is_finished());
        self.loads.push(task);
    }
}

/// Run blocking work (llama.cpp, a directory listing, a file write) on the blocking
/// pool; a panic in it is reported as an error, like any failure.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(r) => r.map_err(err_text),
        Err(e) => Err(format!("the background task stopped: {e}")),
    }
}

/// An error as the panes show it: the whole chain of causes on one line.
fn err_text(e: anyhow::Error) -> String {
    format!("{e:#}")
}
