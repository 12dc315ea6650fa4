//! What an update asks of the world outside the app state. A pane's update returns at
//! most one effect; the event loop hands it to the jobs, which run it in the
//! background and answer with a message that updates the state again.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::core::annotation::Label;
use crate::core::question::Question;
use crate::core::sampling::Sampling;

#[derive(Debug)]
pub enum Effect {
    /// Retrieve every rank list of a question; the newest ticket wins.
    Search { ticket: u64, text: String },
    /// Score chunks of the Query pane's question with the rerank stage; the newest
    /// ticket wins.
    Rerank {
        ticket: u64,
        question: String,
        ids: Vec<String>,
    },
    /// Generate an answer, streamed token by token; the newest ticket wins.
    Generate(GenJob),
    /// Validate and commit one label (every save is kept, none superseded).
    SaveLabel { ticket: u64, label: Label },
    /// Recompute the agreement table and the selected pair's disagreements.
    RefreshAgreement,
    /// The viewer changed (a reviewer name was typed): recompute every view.
    IdentityChanged,
    /// Write the agreement table as CSV and markdown.
    ExportAgreement,
    /// Send a stored answer to annotation as an item.
    AddItem { answer_id: String },
    /// Judge a stored answer live (streamed into the Generate pane) and save it.
    Judge { answer_id: String },
    /// Read the last evaluations for the Evaluation pane.
    LoadEvaluation,
    /// Replay a stored answer at its recorded speed; the newest ticket wins.
    Replay(ReplayJob),
    /// Compare two answer runs (`report answers --compare A B`); the newest ticket
    /// wins.
    CompareAnswerRuns { ticket: u64, a: String, b: String },
    /// Read the evaluation-set candidates with their scores and decisions.
    LoadEvalset,
    /// Build the runs matrix (`report runs`) around a quality column and a pinned
    /// baseline (None: the matrix's default; none pinned).
    LoadRuns {
        quality: Option<String>,
        baseline: Option<String>,
    },
    /// Store an analyst's decision on a candidate (None: clear it).
    DecideCandidate {
        candidate_id: String,
        decision: Option<crate::core::evalset::Decision>,
    },
    /// Store an assessor's relevance grade of a chunk for a question (every grade is
    /// kept, none superseded).
    Grade(GradeJob),
    /// Read the head of an assessor's queue for the assessment view, the pairs
    /// skipped there passed over; the newest ticket wins.
    AssessQueue {
        ticket: u64,
        assessor: String,
        skipped: Vec<(String, String)>,
    },
}

/// A relevance grade to store: who grades (the TUI's reviewer), the question, the
/// chunk and the grade (0 not relevant, 1 relevant, 2 highly relevant). The job's
/// answer comes back with it, so the pane says which grade was stored or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradeJob {
    pub assessor: String,
    pub question_id: String,
    pub chunk_id: String,
    pub grade: u32,
}

/// A replay to start: the question whose stored answers to take (None: any), the
/// answer replayed last (the next one after it is taken, cycling), and the flag that
/// stops it.
#[derive(Debug, Clone)]
pub struct ReplayJob {
    pub ticket: u64,
    pub question_id: Option<String>,
    pub after: Option<String>,
    pub stop: Arc<AtomicBool>,
}

/// A generation to start: the question, its retrieval settings, the sampling, and the
/// flag that stops it (raised when a newer generation supersedes it).
#[derive(Debug, Clone)]
pub struct GenJob {
    pub ticket: u64,
    pub question: Question,
    /// The Query pane's first-stage ranking.
    pub ranking: crate::core::retrieval::RunConfig,
    pub k: usize,
    pub sampling: Sampling,
    /// The prompt template's file (None: the configured one, else the shipped text),
    /// read when the answer starts.
    pub template: Option<std::path::PathBuf>,
    pub stop: Arc<AtomicBool>,
}
