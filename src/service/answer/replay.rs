//! Which stored answer the Generate pane replays (the pacing itself is
//! [`crate::core::replay`]): the current question's answers when it has any, else
//! every stored answer, oldest first, one after another on each press.

use crate::core::answer::AnswerRecord;

/// The answer after `after` (cycling; the first when `after` is not among them) of
/// `question_id`'s stored answers, or of all answers when that question has none.
/// Answers with no text are skipped: there is nothing to replay.
pub fn pick_replay<'a>(
    answers: &'a [AnswerRecord],
    question_id: Option<&str>,
    after: Option<&str>,
) -> Option<&'a AnswerRecord> {
    let with_text = || answers.iter().filter(|a| !a.answer.trim().is_empty());
    let mut of_question: Vec<&AnswerRecord> = with_text()
        .filter(|a| Some(a.question_id.as_str()) == question_id)
        .collect();
    if of_question.is_empty() {
        of_question = with_text().collect();
    }
    of_question.sort_by(|a, b| {
        (a.created_at.as_str(), a.answer_id.as_str())
            .cmp(&(b.created_at.as_str(), b.answer_id.as_str()))
    });
    let next = after
        .and_then(|id| of_question.iter().position(|a| a.answer_id == id))
        .map_or(0, |i| (i + 1) % of_question.len());
    of_question.get(next).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(id: &str, q: &str, at: &str) -> AnswerRecord {
        AnswerRecord {
            answer_id: id.into(),
            question_id: q.into(),
            created_at: at.into(),
            answer: format!("text of {id}"),
            ..AnswerRecord::default()
        }
    }

    #[test]
    fn cycles_through_the_question_then_falls_back_to_all() {
        let all = [a("b", "q1", "2"), a("a", "q1", "1"), a("c", "q2", "3")];
        let id = |x: Option<&AnswerRecord>| x.map(|r| r.answer_id.clone());
        assert_eq!(id(pick_replay(&all, Some("q1"), None)), Some("a".into()));
        assert_eq!(
            id(pick_replay(&all, Some("q1"), Some("a"))),
            Some("b".into())
        );
        assert_eq!(
            id(pick_replay(&all, Some("q1"), Some("b"))),
            Some("a".into())
        );
        assert_eq!(
            id(pick_replay(&all, Some("q9"), Some("b"))),
            Some("c".into())
        );
        assert_eq!(id(pick_replay(&all, None, Some("c"))), Some("a".into()));
        assert!(pick_replay(&[], None, None).is_none());
    }
}
