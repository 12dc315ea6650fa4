//! Actions: what to do. Keys map to actions through the keymap; background jobs send
//! actions carrying owned results. Names deserialize from snake_case (keymap `run`).

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    ToggleHelp,
    NextPane,
    PrevPane,
    PaneCorpus,
    PaneQuery,
    PaneGenerate,
    PaneAnnotate,
    PaneAgreement,
    PaneEvaluation,
    PaneEvalset,
    PaneRuns,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    FocusLeft,
    FocusRight,
    StartFilter,
    ClearFilter,
    SubmitInput,
    CancelInput,
    InputBackspace,
    RunSelected,
    OpenChunk,
    CloseOverlay,
    AlphaUp,
    AlphaDown,
    CycleMethod,
    NextFailure,
    PrevFailure,
    /// The failures browser of the Query pane, and its filters.
    OpenFailures,
    FilterTopic,
    FilterLength,
    FilterConfig,
    /// The sparse list fused with dense: BM25 or TF-IDF.
    CycleSparse,
    /// Pin the current ranking configuration as the baseline (again: unpin).
    PinBaseline,
    /// Open the target chunk, wherever it is ranked.
    OpenTarget,
    /// The Query pane's rerank stage on or off.
    ToggleRerank,
    /// The stored answers of the Query pane's question, with their judge labels.
    ToggleAnswers,
    /// Judge the selected stored answer.
    JudgeAnswer,
    /// The Query pane: grade the selected chunk's relevance to the question (opens
    /// the grade keys, [`Action::Grade0`] to [`Action::Grade2`]).
    GradeChunk,
    /// The grade of the chunk being graded: 0 not relevant, 1 relevant, 2 highly
    /// relevant.
    Grade0,
    Grade1,
    Grade2,
    /// The Query pane's relevance-assessment view: the assessor's queue, one pair at
    /// a time (again, or esc: close).
    OpenAssessment,
    /// The assessment view: the next pair without grading this one (it stays queued).
    SkipPair,
    Generate,
    Regenerate,
    /// Replay a stored answer at its recorded speed (no model needed).
    ReplayAnswer,
    /// The Generate pane's Compare view of two answer runs (again, or esc: close).
    CompareRuns,
    StopGeneration,
    ViewPrompt,
    /// The Generate pane's next configured prompt template.
    NextTemplate,
    SelectCriterion1,
    SelectCriterion2,
    SelectCriterion3,
    SelectCriterion4,
    SelectCriterion5,
    SelectCriterion6,
    SelectCriterion7,
    SelectCriterion8,
    SelectCriterion9,
    /// A label key of the rubric (not a keymap action: the rubric declares it).
    #[serde(skip)]
    LabelKey(char),
    ScrollDown,
    ScrollUp,
    Zoom,
    CycleSet,
    SendToAnnotation,
    ToggleLabelVersion,
    NextJudgeModel,
    NextReviewerPair,
    ExportTable,
    NextDisagreement,
    PrevDisagreement,
    Adjudicate,
    LabelPass,
    LabelFail,
    AddNote,
    NextItem,
    PrevItem,
    FirstUnlabelled,
    UndoLabel,
    Reveal,
    /// The Annotate pane's overlay of the rubric's guidelines and worked examples.
    ShowGuidelines,
    Refresh,
    NextPair,
    NextCriterion,
    /// The Evalset pane: accept, reject or clear the decision on a candidate.
    AcceptCandidate,
    RejectCandidate,
    ClearDecision,
    /// The Runs pane: the next sort order (kind, quality, latency, tokens, label).
    SortNext,
    /// The Runs pane: the next quality column (the Pareto marks and the baseline
    /// follow it).
    CycleQuality,
}
