//! Query pane: the analyst's workbench for one question. Type or pick a question (or
//! a failure of the last evaluation), see the top k with each chunk's dense rank,
//! sparse rank and fused score, the target marked; change method, sparse side and
//! alpha instantly (the rank lists, cut at the evaluated depth, are cached and only
//! re-fused; where each chunk they hold and each target sits in the whole-corpus
//! lists is ranked on demand with them, not by ranking the corpus); see why the target
//! was missed (its scores beside the top-1 chunk's, its fused rank for every alpha);
//! pin a baseline configuration and read each chunk's rank delta against it; open any
//! chunk, the target too, with the question's terms highlighted; grade the selected
//! chunk's relevance to the question (`a`, then 0/1/2) as the TUI's reviewer, or work
//! through the reviewer's assessment queue in a view of its own (`G`, blind).
//! Retrieval and grading run as background jobs; the newest query wins.

mod answers;
mod assess;
mod browser;
mod grade;
mod why;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState, Wrap};

pub use self::answers::{AnswerRow, AnswersPanel};
pub use self::assess::AssessView;
pub use self::browser::{Browser, FilterKind};
pub use self::grade::{Grading, NO_ASSESSOR, grade_name};
use self::why::Why;
use crate::core::compare::{self, Comparison, Move, WholePlaces};
use crate::core::fusion::{FusedHit, Fusion, RRF_C, Scored};
use crate::core::question::FailedQuestion;
use crate::core::retrieval::{Method, QueryLists, RunConfig, Sparse};
use crate::core::text::{mark_terms, query_terms, sanitize_for_terminal as clean, snippet};
use crate::service::answer::{AnswerRecord, JudgementRecord};
use crate::service::retrieval::QueryTimings;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

pub use crate::core::question::Question;

/// A typed question: no known target; its id is derived from its text (FNV-1a), so
/// answers to different typed questions never share an id and the same text keeps
/// its id across regenerations.
pub fn typed_question(text: String) -> Question {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Question {
        id: format!("typed-{hash:016x}"),
        text,
        ..Question::default()
    }
}

/// One displayed result row.
#[derive(Debug, Clone)]
pub struct ResultRow {
    pub id: String,
    pub path: String,
    pub snippet: String,
    pub hit: FusedHit,
    pub is_target: bool,
    /// With the rerank stage on: the chunk's rank before the stage, and its score
    /// (None: not scored yet).
    pub rerank: Option<(usize, Option<f64>)>,
}

/// The pane's rerank stage: on or off, its cut, and the stage described once its
/// first scores arrive. The scores themselves live on the lists
/// ([`QueryLists::rerank`]), so a re-fusion reorders without asking again.
#[derive(Debug, Clone, Default)]
pub struct RerankState {
    pub on: bool,
    pub cut: crate::core::rerank::RerankCut,
    pub described: Option<String>,
    /// Scores asked for and not yet arrived.
    pub pending: bool,
    /// The chunks of the request in flight (a reply must score each of them).
    asked: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryFocus {
    Questions,
    Results,
}

/// What the pane knows of a chunk, sanitized once: header path, text, words, topic
/// (path and text shared with the Corpus pane's copy).
#[derive(Debug, Clone, Default)]
pub struct ChunkMeta {
    pub path: std::sync::Arc<str>,
    pub text: std::sync::Arc<str>,
    pub words: usize,
    pub topic: Option<String>,
}

/// Chunk lookups the pane needs, by chunk id.
pub type ChunkInfo = std::collections::HashMap<String, ChunkMeta>;

/// An opened chunk: its id and how far it is scrolled.
#[derive(Debug, Clone, Default)]
pub struct Opened {
    pub id: String,
    pub scroll: u16,
}

pub struct QueryPane {
    questions: Vec<Question>,
    /// Every failure of the last evaluation, each with its configuration.
    failures: Vec<FailedQuestion>,
    /// Position in the browser's filtered list of the failure shown.
    failure_pos: Option<usize>,
    browser: Browser,
    question_sel: usize,
    /// The question box: a typed question, or the text of the question shown.
    input: TextInput,
    method: Method,
    /// The sparse list hybrid and linear fuse with dense.
    sparse: Sparse,
    alpha: f64,
    /// The weight was chosen (a flag, the config, the alpha keys, an opened failure):
    /// switching methods keeps it. Unchosen, each method ranks at its own default
    /// ([`Method::default_alpha`]), as every command does.
    alpha_chosen: bool,
    k: usize,
    /// How deep each retriever's list is before fusion, as an evaluation ranks
    /// (a failure opens at its evaluation's depth).
    depth: usize,
    focus: QueryFocus,
    result_sel: usize,
    opened: Option<Opened>,
    /// The question whose results are shown (its targets).
    current: Option<Question>,
    /// The lists as retrieved (at least `depth` deep)...
    lists: Option<QueryLists>,
    /// ...and cut at `depth`, what the rankings fuse (recomputed on change).
    cut: Option<QueryLists>,
    /// Where each chunk of the lists, and each target, sits in every whole-corpus
    /// list: ranked on demand by retrieval, so a place is known wherever the chunk
    /// ranks without the pane holding the whole corpus's rankings.
    whole: WholePlaces,
    timings: QueryTimings,
    rows: Vec<ResultRow>,
    /// Why the target was (not) found, recomputed with the ranking, not per frame.
    why: Why,
    /// A pinned configuration, and the current top k against its ranking.
    baseline: Option<RunConfig>,
    comparison: Comparison,
    /// Why dense retrieval is off (no embedding model, or a sparse-only index).
    dense_off: Option<String>,
    /// Stored answers and judgements (the study's, reloaded when they change), and
    /// the panel listing the current question's.
    stored: Vec<AnswerRecord>,
    judgements: Vec<JudgementRecord>,
    /// Grounded scores of the stored answers, the latest per judge.
    grounded: Vec<crate::core::grounded::GroundedRecord>,
    answers: AnswersPanel,
    busy: bool,
    ticket: u64,
    status: Option<String>,
    chunks: ChunkInfo,
    rerank: RerankState,
    /// Relevance grades: who grades, the grade keys, this session's own grades.
    grading: Grading,
    /// The relevance-assessment view over the pane (`G`): the reviewer's queue.
    assess: AssessView,
}

/// What the Query pane is set up with: the questions to pick from, the last
/// evaluation's failures, the ranking (method, and the weight when a flag or the
/// config chose one), the prompt's k and the rerank stage's cut.
#[derive(Debug, Clone)]
pub struct QuerySettings {
    pub questions: Vec<Question>,
    pub failures: Vec<FailedQuestion>,
    pub method: Method,
    pub alpha: Option<crate::core::retrieval::Alpha>,
    pub k: usize,
    pub rerank_cut: Option<crate::core::rerank::RerankCut>,
}

impl QueryPane {
    /// Take the settings read at start-up (the pane is made before they are read, so
    /// the corpus shows at once).
    pub fn configure(&mut self, settings: QuerySettings) {
        self.questions = settings.questions;
        self.set_failures(settings.failures);
        self.set_ranking(settings.method, settings.alpha);
        self.k = settings.k;
        if let Some(cut) = settings.rerank_cut {
            self.rerank.cut = cut;
        }
    }

    /// What the status line says.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Say `what` in the status line.
    pub fn say(&mut self, what: String) {
        self.status = Some(what);
    }

    /// Whether a search is running.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// The newest search asked for.
    pub fn ticket(&self) -> u64 {
        self.ticket
    }

    /// The lists as retrieved.
    pub fn lists(&self) -> Option<&QueryLists> {
        self.lists.as_ref()
    }

    /// The whole-corpus places of the chunks on screen and of the targets.
    pub fn whole(&self) -> &WholePlaces {
        &self.whole
    }

    /// How long the last search's steps took.
    pub fn timings(&self) -> QueryTimings {
        self.timings
    }

    /// The questions to pick from.
    pub fn questions(&self) -> &[Question] {
        &self.questions
    }

    /// The question whose results are shown.
    pub fn current(&self) -> Option<&Question> {
        self.current.as_ref()
    }

    /// Every failure of the last evaluation.
    pub fn failures(&self) -> &[FailedQuestion] {
        &self.failures
    }

    /// Position in the browser's filtered list of the failure shown.
    pub fn failure_pos(&self) -> Option<usize> {
        self.failure_pos
    }

    /// The failures browser's filters.
    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    /// The rerank stage's state.
    pub fn rerank(&self) -> &RerankState {
        &self.rerank
    }

    /// The stored answers (the study's read, and those made since).
    pub fn stored(&self) -> &[AnswerRecord] {
        &self.stored
    }

    /// The answers panel of the current question.
    pub fn answers(&self) -> &AnswersPanel {
        &self.answers
    }

    /// A live answer was stored: it joins the stored answers.
    pub fn push_stored(&mut self, a: AnswerRecord) {
        self.stored.push(a);
    }

    /// A live judgement was committed: its labels show at once (the study's poll
    /// reloads them too).
    pub fn push_judgement(&mut self, j: JudgementRecord) {
        self.judgements.push(j);
        self.refresh_answers();
    }

    /// The answers whose judge labels the viewer may not see.
    pub fn set_blind(&mut self, blind: std::collections::HashSet<String>) {
        self.answers.blind = blind;
    }

    /// Who grades chunks' relevance: the TUI's reviewer (`None`: nobody named yet).
    /// Only their own grades are marked.
    pub fn set_assessor(&mut self, assessor: Option<String>) {
        self.assess.on_assessor(assessor.as_deref());
        self.grading.set_assessor(assessor);
    }

    /// The relevance-assessment view (`G`).
    pub fn assessment(&self) -> &AssessView {
        &self.assess
    }

    /// The head of the reviewer's queue, for the assessment view.
    pub fn on_assess_queue(
        &mut self,
        ticket: u64,
        result: Result<crate::service::assess::QueueHead, String>,
    ) {
        self.assess.on_queue(ticket, result);
    }

    /// The grading state (the grades sent and not answered, for quitting).
    pub fn grading(&self) -> &Grading {
        &self.grading
    }

    /// A grade job answered: the grade stored (marked beside its chunk, said with the
    /// queue left) or refused (said with why). Never superseded: each is a commit. A
    /// grade given in the assessment view moves it on: the read of the next pair.
    pub fn on_graded(
        &mut self,
        job: crate::tui::effect::GradeJob,
        result: Result<crate::service::assess::Graded, String>,
    ) -> Option<Effect> {
        let said = self.grading.on_graded(job.clone(), result);
        let next = self.assess.on_graded(&job, &said);
        self.status = Some(said);
        next
    }

    /// `a`: the grade keys for the selected chunk of the question on screen (its
    /// ranking drawn, not one being searched for).
    fn ask_grade(&mut self) {
        let (Some(q), Some(r), false) = (&self.current, self.rows.get(self.result_sel), self.busy)
        else {
            self.status = Some(
                if self.busy {
                    "wait for this question's ranking, then grade its chunks"
                } else {
                    "run a question first, select a chunk (l, then j/k), then press a"
                }
                .into(),
            );
            return;
        };
        if let Err(why) = self.grading.ask(&q.id, &q.text, &r.hit.id, &r.path) {
            self.status = Some(why.to_string());
        }
    }

    /// Keys while the grade keys are open: 0, 1 or 2 grades (the job is returned),
    /// `esc` cancels.
    fn update_grading(&mut self, action: Action) -> Option<Effect> {
        let grade = match action {
            Action::Grade0 => 0,
            Action::Grade1 => 1,
            Action::Grade2 => 2,
            Action::CloseOverlay => {
                self.grading.cancel();
                return None;
            }
            _ => return None,
        };
        let job = self.grading.give(grade)?;
        self.status = Some(format!(
            "grading {} {grade} ({})…",
            job.chunk_id,
            grade_name(grade)
        ));
        Some(Effect::Grade(job))
    }

    /// How deep the lists are cut (the pane's depth setting).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// How many chunks go into a prompt.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The targets of the question on screen (none for a typed question).
    pub fn targets(&self) -> Vec<String> {
        self.current
            .as_ref()
            .map(|q| q.relevant.clone())
            .unwrap_or_default()
    }

    pub fn new(questions: Vec<Question>, failures: Vec<FailedQuestion>, chunks: ChunkInfo) -> Self {
        let mut pane = Self {
            questions,
            failures: Vec::new(),
            failure_pos: None,
            browser: Browser::default(),
            question_sel: 0,
            input: TextInput::default(),
            method: Method::Hybrid,
            sparse: Sparse::default(),
            alpha: Method::Hybrid.default_alpha().get(),
            alpha_chosen: false,
            k: 15,
            depth: crate::service::retrieval::DEFAULT_DEPTH,
            focus: QueryFocus::Questions,
            result_sel: 0,
            opened: None,
            current: None,
            lists: None,
            cut: None,
            whole: WholePlaces::default(),
            timings: QueryTimings::default(),
            rows: Vec::new(),
            why: Why::default(),
            baseline: None,
            comparison: Comparison::default(),
            dense_off: None,
            stored: Vec::new(),
            judgements: Vec::new(),
            grounded: Vec::new(),
            answers: AnswersPanel::default(),
            busy: false,
            ticket: 0,
            status: None,
            chunks,
            rerank: RerankState::default(),
            grading: Grading::default(),
            assess: AssessView::default(),
        };
        pane.set_failures(failures);
        pane
    }

    /// Load the failures of an evaluation (the browser's filters apply to them).
    pub fn set_failures(&mut self, failures: Vec<FailedQuestion>) {
        self.failures = failures;
        self.failure_pos = None;
        self.browser.refilter(&self.failures);
    }

    /// Rank with `method`, at `alpha` when a flag or the config set one, else at the
    /// method's default.
    pub fn set_ranking(&mut self, method: Method, alpha: Option<crate::core::retrieval::Alpha>) {
        self.method = method;
        self.alpha_chosen = alpha.is_some();
        self.alpha = alpha.unwrap_or_else(|| method.default_alpha()).get();
    }

    /// The current ranking configuration (with the rerank stage when it is on).
    pub fn config(&self) -> RunConfig {
        let first = RunConfig::new(self.method, self.sparse, self.alpha);
        if self.rerank.on {
            first.reranked(self.rerank.cut)
        } else {
            first
        }
    }

    /// The rerank stage on (asking for the scores it lacks) or off.
    fn toggle_rerank(&mut self) -> Option<Effect> {
        self.rerank.on = !self.rerank.on;
        self.refuse();
        self.rerank_request()
    }

    /// With the stage on, the scores the current ranking's first N chunks lack (a new
    /// question, another method or weight), asked for under the search's ticket.
    pub fn rerank_request(&mut self) -> Option<Effect> {
        if !self.rerank.on || self.rerank.pending {
            return None;
        }
        let (lists, q) = (self.cut.as_ref()?, self.current.as_ref()?);
        let first = RunConfig::new(self.method, self.sparse, self.alpha);
        let ids: Vec<String> = lists
            .ranking_for(first)
            .into_iter()
            .take(self.rerank.cut.depth)
            .filter(|id| lists.rerank_score(id).is_none())
            .map(str::to_string)
            .collect();
        if ids.is_empty() {
            return None;
        }
        self.rerank.pending = true;
        self.rerank.asked.clone_from(&ids);
        self.status = Some(format!("reranking {} chunks…", ids.len()));
        Some(Effect::Rerank {
            ticket: self.ticket,
            question: q.text.clone(),
            ids,
        })
    }

    /// Rerank scores arrived (those of a superseded search are dropped). The ranking
    /// may have changed while they were computed (another method or weight): the
    /// scores it still lacks are asked for next, returned as the effect. A reply that
    /// leaves a chunk of its own request unscored turns the stage off and says so,
    /// rather than asking again for ever.
    pub fn on_reranked(
        &mut self,
        ticket: u64,
        result: Result<(Vec<Scored>, String), String>,
    ) -> Option<Effect> {
        if ticket != self.ticket {
            return None;
        }
        self.rerank.pending = false;
        let asked = std::mem::take(&mut self.rerank.asked);
        match result {
            Ok((scores, described)) => {
                for l in [self.lists.as_mut(), self.cut.as_mut()]
                    .into_iter()
                    .flatten()
                {
                    l.rerank.extend(scores.iter().cloned());
                }
                self.rerank.described = Some(described);
                self.status = None;
                let unscored = self.cut.as_ref().map_or(0, |lists| {
                    asked
                        .iter()
                        .filter(|id| lists.rerank_score(id).is_none())
                        .count()
                });
                if unscored > 0 {
                    self.rerank.on = false;
                    self.status = Some(format!(
                        "the rerank stage left {unscored} of the {} chunks asked unscored: turned off",
                        asked.len()
                    ));
                }
            }
            Err(e) => {
                self.rerank.on = false;
                self.status = Some(e);
            }
        }
        self.refuse();
        self.rerank_request()
    }

    /// The retrieval state is ready (`Ok`, with why dense retrieval is off if it is)
    /// or could not be opened (`Err`, said in the status line).
    pub fn on_retriever(&mut self, result: Result<Option<String>, String>) {
        match result {
            Ok(dense_off) => {
                self.status = None;
                self.set_dense_off(dense_off);
            }
            Err(e) => self.status = Some(e),
        }
    }

    /// Dense retrieval is unavailable (`reason` says why and how to get it): methods
    /// that need it are skipped, and a dense method in use falls back to BM25.
    pub fn set_dense_off(&mut self, reason: Option<String>) {
        self.dense_off = reason;
        if self.dense_off.is_some() && self.method.needs_dense() {
            self.method = Method::Bm25;
        }
        self.refuse();
    }

    /// The stored answers and judgements changed (start-up, another process, a
    /// judgement saved here): an open panel is recomputed, its selection kept.
    pub fn set_stored(
        &mut self,
        answers: Vec<AnswerRecord>,
        judgements: Vec<JudgementRecord>,
        grounded: Vec<crate::core::grounded::GroundedRecord>,
    ) {
        self.grounded = grounded;
        self.stored = answers;
        self.judgements = judgements;
        self.refresh_answers();
    }

    fn refresh_answers(&mut self) {
        let qid = self
            .current
            .as_ref()
            .map(|q| q.id.clone())
            .unwrap_or_default();
        self.answers.rows = answers::rows_for(&qid, &self.stored, &self.judgements, &self.grounded);
        self.answers.sel = self
            .answers
            .sel
            .min(self.answers.rows.len().saturating_sub(1));
    }

    /// Keys while the answers panel is open.
    fn update_answers(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Down => self.answers.move_by(1),
            Action::Up => self.answers.move_by(-1),
            Action::JudgeAnswer => {
                if let Some(why) = self.answers.judge_refusal() {
                    self.status = Some(why.to_string());
                    return None;
                }
                let answer_id = self.answers.selected()?.answer_id.clone();
                return Some(Effect::Judge { answer_id });
            }
            Action::SendToAnnotation => {
                let answer_id = self.answers.selected()?.answer_id.clone();
                return Some(Effect::AddItem { answer_id });
            }
            Action::CloseOverlay | Action::ToggleAnswers => self.answers.open = false,
            _ => {}
        }
        None
    }

    /// Ask for retrieval of `q`; any older request is superseded by the new ticket.
    pub fn submit(&mut self, q: Question) -> Option<Effect> {
        if q.text.trim().is_empty() {
            self.status = Some("empty question".into());
            return None;
        }
        self.ticket += 1;
        self.busy = true;
        self.input.set(&q.text);
        let text = q.text.clone();
        self.current = Some(q);
        Some(Effect::Search {
            ticket: self.ticket,
            text,
        })
    }

    /// A finished job; results of superseded tickets are dropped.
    pub fn on_result(
        &mut self,
        ticket: u64,
        result: Result<(QueryLists, WholePlaces, QueryTimings), String>,
    ) {
        if ticket != self.ticket {
            return;
        }
        self.busy = false;
        match result {
            Ok((lists, whole, timings)) => {
                self.cut = Some(lists.truncated(self.depth));
                self.lists = Some(lists);
                self.whole = whole;
                self.timings = timings;
                self.result_sel = 0;
                if !self.status.as_deref().is_some_and(is_warning) {
                    self.status = None;
                }
                self.refuse();
            }
            Err(e) => {
                // The places of the lists still shown will not come.
                self.whole.give_up();
                self.refuse();
                self.status = Some(e);
            }
        }
    }

    /// The second step of a search: the whole-corpus places of the chunks the lists
    /// hold and of the targets, which replace the places the lists gave their own
    /// chunks (each stage's time is added to the first step's).
    pub fn on_places(&mut self, ticket: u64, result: Result<(WholePlaces, QueryTimings), String>) {
        if ticket != self.ticket {
            return;
        }
        match result {
            Ok((whole, timings)) => {
                self.whole = whole;
                self.timings = self.timings.plus(&timings);
                self.refuse();
            }
            Err(e) => {
                self.whole.give_up();
                self.refuse();
                self.status = Some(format!("could not rank the places outside the lists: {e}"));
            }
        }
    }

    /// The fusion shown beside single-list methods: hybrid's at the current alpha.
    fn fusion(&self) -> Fusion {
        self.method.fusion(self.alpha).unwrap_or(Fusion::Rrf {
            alpha: self.alpha,
            c: RRF_C,
        })
    }

    /// Recompute the displayed ranking, the why panel and the baseline comparison from
    /// the cached lists (no retrieval).
    pub fn refuse(&mut self) {
        let (Some(_), Some(lists)) = (&self.lists, &self.cut) else {
            return;
        };
        let full = &self.whole;
        let fused = lists.candidates_with(self.sparse).fuse(self.fusion());
        let targets: Vec<String> = self
            .current
            .as_ref()
            .map(|q| q.relevant.clone())
            .unwrap_or_default();
        let single = |list: &[Scored]| -> Vec<FusedHit> {
            let by_id: std::collections::HashMap<&str, &FusedHit> =
                fused.iter().map(|h| (h.id.as_str(), h)).collect();
            list.iter()
                .take(self.k)
                .map(|s| {
                    by_id
                        .get(s.id.as_str())
                        .map_or_else(|| FusedHit::unranked(&s.id), |h| (*h).clone())
                })
                .collect()
        };
        let first_stage = RunConfig::new(self.method, self.sparse, self.alpha);
        let first_ids = lists.ranking_for(first_stage);
        let order: Vec<FusedHit> = match self.method {
            _ if self.rerank.on => {
                let by_id: std::collections::HashMap<&str, &FusedHit> =
                    fused.iter().map(|h| (h.id.as_str(), h)).collect();
                lists
                    .ranking_for(self.config())
                    .into_iter()
                    .map(|id| {
                        by_id
                            .get(id)
                            .map_or_else(|| FusedHit::unranked(id), |h| (*h).clone())
                    })
                    .collect()
            }
            Method::Hybrid | Method::Linear => fused.iter().take(self.k).cloned().collect(),
            Method::Dense => single(&lists.dense),
            Method::Bm25 => single(&lists.bm25),
            Method::Tfidf => single(&lists.tfidf),
        };
        self.rows = order
            .into_iter()
            .map(|hit| {
                let meta = self.chunks.get(&hit.id).cloned().unwrap_or_default();
                let rerank = self.rerank.on.then(|| {
                    let first = first_ids
                        .iter()
                        .position(|i| *i == hit.id)
                        .map_or(0, |p| p + 1);
                    (first, lists.rerank_score(&hit.id))
                });
                ResultRow {
                    id: clean(&hit.id),
                    path: meta.path.to_string(),
                    snippet: snippet(&meta.text, 80),
                    is_target: targets.contains(&hit.id),
                    hit,
                    rerank,
                }
            })
            .collect();
        self.result_sel = self.result_sel.min(self.rows.len().saturating_sub(1));
        self.why = self.explain(full, lists, &targets);
        self.comparison = match self.baseline {
            Some(base) => compare::compare(
                &lists.ranking_for(self.config()),
                &lists.ranking_for(base),
                self.k,
            ),
            None => Comparison::default(),
        };
    }

    /// The why panel of the current ranking: the first target against the top-1
    /// chunk, the other targets' ranks, the alpha curve.
    fn explain(&self, full: &WholePlaces, lists: &QueryLists, targets: &[String]) -> Why {
        let cfg = self.config();
        let ranking = lists.ranking_for(cfg);
        let grid = compare::curve_grid();
        let target = targets.first().map(|t| {
            let meta = self.chunks.get(t).cloned().unwrap_or_default();
            (
                t.clone(),
                meta.words,
                meta.topic,
                compare::places(full, lists, cfg, t),
            )
        });
        let curve = targets
            .first()
            .map(|t| compare::alpha_curve(lists, cfg, t, &grid))
            .unwrap_or_default();
        Why {
            others: targets
                .iter()
                .skip(1)
                .map(|t| {
                    (
                        t.clone(),
                        ranking.iter().position(|i| i == t).map(|i| i + 1),
                    )
                })
                .collect(),
            top: ranking
                .first()
                .map(|id| (id.to_string(), compare::places(full, lists, cfg, id))),
            target,
            label: if cfg.method.uses_alpha() {
                format!("{}-{}", cfg.method, cfg.sparse)
            } else {
                cfg.method.to_string()
            },
            fused: cfg.method.uses_alpha(),
            grid,
            curve,
            candidates: lists.candidates_with(self.sparse).len(),
            alpha: self.alpha,
            placing: full.placing(),
        }
    }

    /// Rank in a configuration of the runs matrix (its `enter` on a retrieval row):
    /// the method, sparse side and weight; the current question is searched again. A
    /// configuration with a rerank stage is said, for `R` turns the stage on here.
    pub fn show_config(
        &mut self,
        label: &str,
        method: Method,
        sparse: Option<crate::core::retrieval::Sparse>,
        alpha: Option<f64>,
        reranked: bool,
    ) -> Option<Effect> {
        if method.needs_dense() && self.dense_off.is_some() {
            self.status = Some(format!(
                "{} needs dense retrieval, which is off here: ranking stays {}",
                clean(label),
                self.config().label()
            ));
            return None;
        }
        self.method = method;
        self.sparse = sparse.unwrap_or(self.sparse);
        if let Some(a) = alpha {
            self.alpha = a;
            self.alpha_chosen = true;
        }
        self.status = Some(format!(
            "ranking as {} (from the Runs pane){}",
            clean(label),
            if reranked {
                "; R turns its rerank stage on"
            } else {
                ""
            }
        ));
        let q = self.current()?.clone();
        self.submit(q)
    }

    /// Open the failure at `pos` of the browser's list in the configuration that
    /// failed it.
    fn open_failure(&mut self, pos: usize) -> Option<Effect> {
        let i = *self.browser.shown.get(pos)?;
        let f = self.failures.get(i)?.clone();
        self.failure_pos = Some(pos);
        self.browser.sel = pos;
        self.status = None;
        if let Some(c) = &f.config {
            let cfg = c.run_config();
            if cfg.method.needs_dense() && self.dense_off.is_some() {
                self.status = Some(format!(
                    "warning: this failure was ranked by {} but dense retrieval is off here; showing bm25",
                    cfg.label()
                ));
            } else {
                (self.method, self.sparse, self.alpha) = (cfg.method, cfg.sparse, cfg.alpha);
                self.alpha_chosen = true;
            }
            self.depth = c.depth;
            if c.chunks != self.chunks.len() {
                self.status = Some(format!(
                    "warning: evaluated on {} chunks ({}), this workspace has {}: ranks may differ",
                    c.chunks,
                    clean(&c.corpus),
                    self.chunks.len()
                ));
            }
        }
        self.submit(f.question)
    }

    fn step_failure(&mut self, delta: isize) -> Option<Effect> {
        if self.failures.is_empty() {
            self.status = Some("no failed queries: run `raglab eval retrieval` first".into());
            return None;
        }
        let n = self.browser.shown.len();
        if n == 0 {
            self.status = Some("no failure passes the browser's filters (f opens it)".into());
            return None;
        }
        let next = match self.failure_pos {
            None if delta > 0 => 0,
            None => n - 1,
            Some(p) => (p as isize + delta).rem_euclid(n as isize) as usize,
        };
        self.open_failure(next)
    }

    /// Pin the current configuration as the baseline; pinning it again unpins.
    fn pin(&mut self) {
        let cfg = self.config();
        self.baseline = match self.baseline {
            Some(b) if b == cfg => None,
            _ => Some(cfg),
        };
        self.refuse();
    }

    fn cycle_method(&mut self) {
        let all = Method::ALL;
        let mut i = all.iter().position(|m| *m == self.method).unwrap_or(0);
        for _ in 0..all.len() {
            i = (i + 1) % all.len();
            if self.dense_off.is_none() || !all[i].needs_dense() {
                break;
            }
        }
        self.method = all[i];
        if !self.alpha_chosen {
            self.alpha = self.method.default_alpha().get();
        }
        self.refuse();
    }

    /// Open the (next) target chunk, wherever it is ranked.
    fn open_target(&mut self) {
        let targets = self
            .current
            .as_ref()
            .map(|q| q.relevant.clone())
            .unwrap_or_default();
        if targets.is_empty() {
            self.status = Some("no target chunk known for this question".into());
            return;
        }
        let next = match &self.opened {
            Some(o) => targets
                .iter()
                .position(|t| *t == o.id)
                .map_or(0, |i| (i + 1) % targets.len()),
            None => 0,
        };
        self.opened = Some(Opened {
            id: targets[next].clone(),
            scroll: 0,
        });
    }

    /// The question box, the configuration line, the timings (or the status) and
    /// the baseline line.
    /// The header's third line: the pinned baseline and what fell out of its top k.
    fn baseline_line(&self, theme: &Theme) -> Line<'static> {
        let Some(b) = self.baseline else {
            return Line::styled(" P pins this configuration as a baseline", theme.muted);
        };
        let dropped: Vec<String> = self
            .comparison
            .dropped
            .iter()
            .map(|(id, was, now)| {
                format!(
                    "{} (#{was}→{})",
                    clean(id),
                    now.map_or("-".into(), |n| format!("#{n}"))
                )
            })
            .collect();
        Line::from(vec![
            Span::styled(format!(" baseline {} · ", b.label()), theme.filter),
            Span::styled(
                if dropped.is_empty() {
                    "nothing dropped from its top k".to_string()
                } else {
                    format!("dropped: {}", dropped.join(", "))
                },
                theme.text,
            ),
        ])
    }

    fn draw_header(&self, f: &mut Frame, input_area: Rect, info_area: Rect, theme: &Theme) {
        let busy = if self.busy {
            " (searching…)"
        } else if self.whole.is_pending() {
            " (placing…)"
        } else {
            ""
        };
        f.render_widget(
            Paragraph::new(self.input.line(theme.text)).block(theme.block(
                format!(" Question{busy} (/ type, enter run) "),
                self.input.is_active(),
            )),
            input_area,
        );
        let sparse = self.sparse;
        let formula = match self.method {
            Method::Linear => format!("linear: w·minmax(dense) + (1-w)·minmax({sparse})"),
            _ => format!("R(d;a) = a/(60+r_dense) + (1-a)/(60+r_{sparse})"),
        };
        let failure = match self.failure_pos {
            Some(p) => format!("  failure {}/{}", p + 1, self.browser.shown.len()),
            None if !self.failures.is_empty() => {
                format!("  {} failures (f browse, n/p step)", self.failures.len())
            }
            None => String::new(),
        };
        let t = &self.timings;
        let dense = match &self.dense_off {
            Some(reason) => format!(" {}", clean(reason)),
            None => format!(" embed {:.1} ms · dense {:.2} ms ·", t.embed_ms, t.dense_ms),
        };
        let baseline = self.baseline_line(theme);
        f.render_widget(
            Paragraph::new(vec![
                Line::from(vec![
                    Span::styled(
                        format!(
                            " method {}  sparse {}  a = {:.2}  depth {}  ",
                            self.method, self.sparse, self.alpha, self.depth
                        ),
                        theme.title,
                    ),
                    Span::styled(formula, theme.muted),
                    Span::styled(failure, theme.filter),
                ]),
                match &self.status {
                    Some(s) => Line::styled(format!(" {}", clean(s)), theme.error),
                    None => Line::styled(
                        format!(
                            "{dense} bm25 {:.2} ms · tfidf {:.2} ms · fusion {:.3} ms",
                            t.bm25_ms, t.tfidf_ms, t.fusion_ms
                        ),
                        if self.dense_off.is_some() {
                            theme.error
                        } else {
                            theme.muted
                        },
                    ),
                },
                baseline,
            ]),
            info_area,
        );
    }

    /// The question list of the questions file.
    fn draw_questions(&self, f: &mut Frame, left: Rect, theme: &Theme) {
        let items: Vec<ListItem> = self
            .questions
            .iter()
            .map(|q| ListItem::new(Line::styled(clean(&q.text), theme.text)))
            .collect();
        let mut state = ListState::default().with_selected(Some(self.question_sel));
        f.render_stateful_widget(
            List::new(items)
                .block(theme.block(
                    format!(" Questions {} ", self.questions.len()),
                    self.focus == QueryFocus::Questions,
                ))
                .highlight_style(theme.selected),
            left,
            &mut state,
        );
    }

    /// Row `i` of the results: rank (▶ on the target), move against the baseline, the
    /// rerank stage's first rank and score when it is on, dense and sparse ranks, the
    /// fused score as a bar scaled to `max`, and the chunk (with this reviewer's grade).
    fn result_row(&self, i: usize, r: &ResultRow, max: f64, theme: &Theme) -> Row<'static> {
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
        // This reviewer's own grade of the chunk for the question, stored here.
        let qid = self.current.as_ref().map_or("", |q| q.id.as_str());
        let graded = self
            .grading
            .mark(qid, &r.hit.id)
            .map_or(String::new(), |g| format!("[{g}] "));
        let delta = match self.comparison.moves.get(i) {
            None => String::new(),
            Some(Move::Same) => "=".into(),
            Some(Move::Up(n)) => format!("↑{n}"),
            Some(Move::Down(n)) => format!("↓{n}"),
            Some(Move::New(_)) => "new".into(),
        };
        let width = if max > 0.0 {
            (r.hit.fused / max * 10.0).round() as usize
        } else {
            0
        };
        let style = if r.is_target {
            theme.target_chunk
        } else {
            theme.text
        };
        let mut cells = vec![
            Line::styled(
                format!("{}{}", if r.is_target { "▶" } else { " " }, i + 1),
                style,
            ),
            Line::styled(delta, theme.filter),
        ];
        if let Some((first, score)) = r.rerank {
            cells.push(Line::styled(first.to_string(), theme.muted));
            cells.push(Line::styled(
                score.map_or("…".to_string(), |s| format!("{s:.4}")),
                theme.score_bar,
            ));
        }
        cells.extend([
            Line::styled(rank(r.hit.dense_rank), theme.rank_dense),
            Line::styled(rank(r.hit.sparse_rank), theme.rank_sparse),
            Line::from(vec![
                Span::styled("█".repeat(width), theme.score_bar),
                Span::styled(format!(" {:.4}", r.hit.fused), theme.muted),
            ]),
            Line::styled(format!("{graded}{}  {}", r.id, r.path), style),
        ]);
        Row::new(cells)
    }

    /// The top k with the move against the baseline, dense and sparse ranks and the
    /// fused score as a bar.
    fn draw_results(&self, f: &mut Frame, table_area: Rect, theme: &Theme) {
        let max = self.rows.iter().map(|r| r.hit.fused).fold(0.0f64, f64::max);
        let rows: Vec<Row> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| self.result_row(i, r, max, theme))
            .collect();
        let sparse = self.sparse.to_string();
        let mut names = vec!["rank", "Δ"];
        let mut widths = vec![Constraint::Length(5), Constraint::Length(5)];
        if self.rerank.on {
            names.extend(["first", "rerank"]);
            widths.extend([Constraint::Length(6), Constraint::Length(7)]);
        }
        names.extend(["dense", sparse.as_str(), "fused", "chunk"]);
        widths.extend([
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Length(18),
            Constraint::Min(10),
        ]);
        let header = Row::new(names).style(theme.title);
        // "reranking…" only while scores are asked for: with the stage on and nothing to
        // rerank yet (no question run, an empty workspace) it would wait forever.
        let title = match (&self.rerank.on, &self.rerank.described) {
            (true, Some(d)) => format!(" Reranked: {} ", clean(d)),
            (true, None) if self.rerank.pending => format!(" Top {}, reranking… ", self.k),
            (true, None) => format!(" Top {}, rerank on: run a question ", self.k),
            _ => format!(" Top {} ", self.k),
        };
        let mut tstate = TableState::default().with_selected(Some(self.result_sel));
        f.render_stateful_widget(
            Table::new(rows, widths)
                .header(header)
                .row_highlight_style(theme.selected)
                .block(theme.block(title, self.focus == QueryFocus::Results)),
            table_area,
            &mut tstate,
        );
    }

    /// The opened chunk over everything, the question's terms highlighted.
    fn draw_opened(&self, f: &mut Frame, theme: &Theme) {
        let Some(o) = &self.opened else { return };
        let meta = self.chunks.get(&o.id).cloned().unwrap_or_default();
        let terms = self
            .current
            .as_ref()
            .map(|q| query_terms(&q.text))
            .unwrap_or_default();
        let where_ranked = self.cut.as_ref().map_or(String::new(), |cut| {
            let p = compare::places(&self.whole, cut, self.config(), &o.id);
            // A whole-corpus place not known yet reads `…` (`?` if it failed); the
            // ranking's own place comes from the cut lists and is always known.
            let unknown = self.whole.placing().short_mark().unwrap_or("-");
            let show_in = |p: Option<compare::Place>, none: &str| {
                p.map_or(none.to_string(), |p| format!("#{}", p.rank))
            };
            let show = |p: Option<compare::Place>| show_in(p, unknown);
            format!(
                "dense {} · bm25 {} · tfidf {} · {} {} · {} words",
                show(p.dense),
                show(p.bm25),
                show(p.tfidf),
                self.config().label(),
                show_in(p.ranked, "-"),
                meta.words
            )
        });
        let mut lines = vec![
            Line::styled(meta.path.to_string(), theme.header_path),
            Line::styled(where_ranked, theme.muted),
            Line::raw(""),
        ];
        for l in meta.text.lines() {
            lines.push(Line::from(
                mark_terms(l, &terms)
                    .into_iter()
                    .map(|(piece, hit)| {
                        Span::styled(
                            piece.to_string(),
                            if hit { theme.filter } else { theme.text },
                        )
                    })
                    .collect::<Vec<_>>(),
            ));
        }
        let area = crate::tui::layout::centered(f.area(), 80, 80);
        f.render_widget(Clear, area);
        let target = self
            .current
            .as_ref()
            .is_some_and(|q| q.relevant.contains(&o.id));
        f.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .scroll((o.scroll, 0))
                .block(theme.block(
                    format!(
                        " {}{} (j/k scroll, esc closes) ",
                        if target { "target " } else { "" },
                        clean(&o.id)
                    ),
                    true,
                )),
            area,
        );
    }

    /// Move the selection of the focused list by `d` rows.
    fn move_selection(&mut self, d: isize) {
        let (sel, n) = match self.focus {
            QueryFocus::Questions => (&mut self.question_sel, self.questions.len()),
            QueryFocus::Results => (&mut self.result_sel, self.rows.len()),
        };
        if n > 0 {
            *sel = sel.saturating_add_signed(d).min(n - 1);
        }
    }

    fn open_selected_row(&mut self) {
        if let Some(r) = self.rows.get(self.result_sel) {
            self.opened = Some(Opened {
                id: r.hit.id.clone(),
                scroll: 0,
            });
        }
    }

    /// Keys while the failures browser is open.
    /// `A`: the answers panel of the current question.
    fn open_answers(&mut self) {
        if self.current.is_some() {
            self.refresh_answers();
            self.answers.open = true;
        } else {
            self.status = Some("pick or type a question first".into());
        }
    }

    /// `f`: the failures browser, once an evaluation has found failures.
    fn open_failures(&mut self) {
        if self.failures.is_empty() {
            self.status = Some("no failed queries: run `raglab eval retrieval` first".into());
        } else {
            self.browser.open = true;
        }
    }

    /// Enter in the question box. A typed question has no known target unless it
    /// matches a listed one.
    fn submit_typed(&mut self) -> Option<Effect> {
        let text = self.input.text().to_string();
        self.input.submit();
        let q = self
            .questions
            .iter()
            .find(|q| q.text == text)
            .cloned()
            .unwrap_or_else(|| typed_question(text));
        self.submit(q)
    }

    /// The dense weight moves in steps of 0.05 within [0, 1], kept on the grid.
    fn step_alpha(&mut self, step: f64) {
        self.alpha = ((self.alpha + step) * 100.0).round().clamp(0.0, 100.0) / 100.0;
        self.alpha_chosen = true;
        self.refuse();
    }

    fn cycle_sparse(&mut self) {
        self.sparse = match self.sparse {
            Sparse::Bm25 => Sparse::Tfidf,
            Sparse::Tfidf => Sparse::Bm25,
        };
        self.refuse();
    }

    fn update_browser(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Down => self.browser.move_by(1),
            Action::Up => self.browser.move_by(-1),
            Action::FilterTopic | Action::FilterLength | Action::FilterConfig => {
                let kind = match action {
                    Action::FilterTopic => FilterKind::Topic,
                    Action::FilterLength => FilterKind::Length,
                    _ => FilterKind::Config,
                };
                self.browser.cycle(kind, &self.failures);
                // The position counted in the old list.
                self.failure_pos = None;
            }
            Action::RunSelected => {
                self.browser.open = false;
                return self.open_failure(self.browser.sel);
            }
            Action::CloseOverlay | Action::OpenFailures => self.browser.open = false,
            _ => {}
        }
        None
    }
}

/// Status lines that stay while results arrive (they explain those results).
fn is_warning(s: &str) -> bool {
    s.starts_with("warning:")
}

impl PaneView for QueryPane {
    /// Apply an action; a new search is returned as an effect.
    fn update(&mut self, action: Action) -> Option<Effect> {
        if self.assess.is_open() {
            return self.assess.update(action, &mut self.grading);
        }
        if self.grading.is_asking() {
            return self.update_grading(action);
        }
        if self.browser.open {
            return self.update_browser(action);
        }
        if self.answers.open {
            return self.update_answers(action);
        }
        if let Some(o) = &mut self.opened {
            match action {
                Action::CloseOverlay | Action::OpenChunk => self.opened = None,
                Action::ScrollDown => o.scroll = o.scroll.saturating_add(1),
                Action::ScrollUp => o.scroll = o.scroll.saturating_sub(1),
                _ => {}
            }
            return None;
        }
        match action {
            Action::Down | Action::Up => {
                self.move_selection(if action == Action::Down { 1 } else { -1 });
            }
            Action::FocusLeft => self.focus = QueryFocus::Questions,
            Action::FocusRight => self.focus = QueryFocus::Results,
            Action::RunSelected => match self.focus {
                QueryFocus::Questions => {
                    let q = self.questions.get(self.question_sel).cloned()?;
                    self.failure_pos = None;
                    return self.submit(q);
                }
                QueryFocus::Results => self.open_selected_row(),
            },
            Action::OpenChunk => self.open_selected_row(),
            Action::OpenTarget => self.open_target(),
            Action::ToggleAnswers => self.open_answers(),
            Action::ToggleRerank => return self.toggle_rerank(),
            Action::OpenFailures => self.open_failures(),
            Action::StartFilter => self.input.open(),
            Action::SubmitInput => return self.submit_typed(),
            Action::CancelInput => {
                self.input.cancel();
                if let Some(q) = &self.current {
                    self.input.set(&q.text);
                }
            }
            Action::InputBackspace => {
                self.input.backspace();
            }
            // A new first-stage ranking: with the rerank stage on, the scores its
            // first N lack are asked for at once.
            Action::AlphaUp => {
                self.step_alpha(0.05);
                return self.rerank_request();
            }
            Action::AlphaDown => {
                self.step_alpha(-0.05);
                return self.rerank_request();
            }
            Action::CycleMethod => {
                self.cycle_method();
                return self.rerank_request();
            }
            Action::CycleSparse => {
                self.cycle_sparse();
                return self.rerank_request();
            }
            Action::PinBaseline => self.pin(),
            Action::GradeChunk => self.ask_grade(),
            Action::OpenAssessment => return self.assess.open(self.grading.assessor()),
            Action::NextFailure => return self.step_failure(1),
            Action::PrevFailure => return self.step_failure(-1),
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let [input_area, info_area, body] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Length(3),
            Constraint::Min(5),
        ])
        .areas(area);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(28), Constraint::Percentage(72)])
                .areas(body);
        let why_height = 10 + self.why.others.len().min(3) as u16;
        let [table_area, why_area] =
            Layout::vertical([Constraint::Min(5), Constraint::Length(why_height)]).areas(right);
        self.draw_header(f, input_area, info_area, theme);
        self.draw_questions(f, left, theme);
        self.draw_results(f, table_area, theme);
        self.why.draw(f, why_area, theme);
        self.draw_opened(f, theme);
        if self.browser.open {
            self.browser.draw(f, &self.failures, theme);
        }
        if self.answers.open {
            let q = self.current.as_ref().map_or("", |q| q.text.as_str());
            self.answers.draw(f, q, theme);
        }
        self.grading.draw_prompt(f, theme);
        self.assess.draw(f, theme);
    }

    fn editing(&self) -> bool {
        self.input.is_active()
    }

    fn input_char(&mut self, c: char) {
        self.input.push(c);
    }

    fn overlay_open(&self) -> bool {
        self.opened.is_some()
            || self.browser.open
            || self.answers.open
            || self.grading.is_asking()
            || self.assess.is_open()
    }

    fn overlay_section(&self) -> &'static str {
        if self.assess.is_open() {
            "assess"
        } else if self.grading.is_asking() {
            "grade"
        } else if self.browser.open {
            "failures"
        } else if self.answers.open {
            "answers"
        } else {
            "overlay"
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::core::retrieval::Alpha;

    fn screen(pane: &QueryPane) -> String {
        crate::tui::ui::pane_screen(pane, 110, 20)
    }

    /// With no flag and no config, each method ranks at its own default, as every
    /// command does: cycling from hybrid (0.70) to linear shows 0.50. A weight the
    /// user chose (the alpha keys) or the config set stays across methods.
    #[test]
    fn cycling_methods_follows_each_methods_default_until_alpha_is_chosen() {
        let mut pane = QueryPane::new(Vec::new(), Vec::new(), ChunkInfo::default());
        pane.set_ranking(Method::Hybrid, None);
        assert!(screen(&pane).contains("method hybrid  sparse bm25  a = 0.70"));
        pane.update(Action::CycleMethod);
        assert!(
            screen(&pane).contains("method linear  sparse bm25  a = 0.50"),
            "{}",
            screen(&pane)
        );
        pane.update(Action::AlphaUp);
        assert!(screen(&pane).contains("method linear  sparse bm25  a = 0.55"));
        for _ in 0..Method::ALL.len() {
            pane.update(Action::CycleMethod);
        }
        assert!(screen(&pane).contains("method linear  sparse bm25  a = 0.55"));
        pane.set_ranking(Method::Hybrid, Some(Alpha::new(0.6).expect("alpha")));
        pane.update(Action::CycleMethod);
        assert!(screen(&pane).contains("method linear  sparse bm25  a = 0.60"));
    }
}
