//! Answer and judgement rows written straight into a workspace's datasets, for tests
//! whose point is what raglab computes from stored rows (pass rates, frugality, the
//! study report), not how a model produced them.

use raglab::service::answer::{AnswerRecord, JudgementRecord};

/// A model checksum for stored rows (64 hex digits, as a real one).
pub const MODEL_SHA: &str = "1111111111111111111111111111111111111111111111111111111111111111";

/// One answer of `run` to `q` with `k` chunks retrieved by `method` (k = 0: no
/// retrieval), seed 42, taking `seconds` end to end.
pub fn answer(run: &str, q: &str, k: u32, method: &str, seconds: f64) -> AnswerRecord {
    AnswerRecord {
        answer_id: format!("{run}/{q}/s42"),
        run: run.into(),
        question_id: q.into(),
        question: format!("question {q}?"),
        k,
        method: method.into(),
        alpha: 0.7,
        no_retrieval: k == 0,
        model_file: "SmolLM2-135M-Instruct.Q4_1.gguf".into(),
        model_sha256: MODEL_SHA.into(),
        seed: 42,
        total_ms: seconds * 1e3,
        ..AnswerRecord::default()
    }
}

/// A hand-written answer (no model, no retrieval) of `run` to question `q{i}` about
/// the target `target`, seed 42: for studies whose items only need text to label.
pub fn written(
    run: &str,
    i: usize,
    question: &str,
    reference: &str,
    answer: &str,
    target: &str,
) -> AnswerRecord {
    AnswerRecord {
        answer_id: format!("{run}/q{i}/s42"),
        run: run.into(),
        question_id: format!("q{i}"),
        question: question.into(),
        reference_answer: Some(reference.into()),
        answer: answer.into(),
        target_ids: vec![target.into()],
        method: "none".into(),
        no_retrieval: true,
        model_file: "hand-written".into(),
        seed: 42,
        ..AnswerRecord::default()
    }
}

/// A judgement of `a` by `judge.gguf` with `labels` on the first `labels.len()` of
/// faithfulness and completeness.
pub fn judged(a: &AnswerRecord, labels: &[&str]) -> JudgementRecord {
    JudgementRecord {
        answer_id: a.answer_id.clone(),
        run: a.run.clone(),
        judge_model: "judge.gguf".into(),
        rubric: "pubhealth".into(),
        rubric_version: "1".into(),
        criteria: ["faithfulness", "completeness"][..labels.len()]
            .iter()
            .map(|c| (*c).to_string())
            .collect(),
        labels: labels.iter().map(|l| (*l).to_string()).collect(),
        rationale: String::new(),
        prompt: String::new(),
        raw_output: String::new(),
        created_at: String::new(),
        endpoint: None,
        repeat: None,
        seed: None,
        temperature: None,
    }
}
