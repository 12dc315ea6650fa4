//! Which stored answers a signed study makes items from.
//!
//! Answers belong to the workspace, not to a study: anyone who can write the
//! workspace can append an answer to any run, under any id, and an answer id names
//! its run and question, so the next ones can be foreseen. An item copies its
//! answer's text when the lead makes it, so an answer appended before that would be
//! labelled by every reviewer as the run's. Hence the rule:
//!
//! - every answer is signed by whoever stored it (the key of the config folder that
//!   ran `generate`, the TUI or `answers import`) over the fields an item is made
//!   from and what made them ([`answer_bytes`]);
//! - under a roster the lead makes items only from answers signed by a key the lead
//!   accepts: the lead's own, and each key the lead names (a reviewer on the roster
//!   by name, or a machine's key that generated a shard). Answers with no signature
//!   (stored before answers were signed) count only when the lead says so;
//! - an answer signed by any other key, unsigned, or whose signature does not match
//!   its fields, is left out and named;
//! - an answer id's first accepted row is its answer; a later row for the id is
//!   passed over (a copy of it changes nothing);
//! - a study without a roster takes every answer, the first row of each id.

use std::collections::HashSet;

use crate::core::answer::AnswerRecord;
use crate::core::signing::{Binding, Refusal, Roster, Verify, check_public_key, short};

/// The bytes an answer is signed over: its id, run and question, the reference and
/// targets, the prompt and answer, the model and endpoint that made it, when, and
/// the signer's key (so a row cannot be re-attributed to another key). Answers are
/// not bound to a study: they may be stored before any study exists.
pub fn answer_bytes(a: &AnswerRecord) -> Vec<u8> {
    let mut c = Binding::Unbound.canon("answer");
    c.str(&a.answer_id)
        .str(&a.run)
        .str(&a.question_id)
        .str(&a.question)
        .opt(a.reference_answer.as_deref())
        .num(Some(a.target_ids.len() as u64));
    for t in &a.target_ids {
        c.str(t);
    }
    c.str(&a.prompt)
        .str(&a.answer)
        .str(&a.model_file)
        .str(&a.model_sha256)
        .opt(a.endpoint.as_deref())
        .opt(a.served_model.as_deref())
        .str(&a.created_at)
        .opt(a.signer.as_deref());
    c.0
}

/// The keys whose answers the lead takes, each with how messages name it.
#[derive(Debug, Clone, Default)]
pub struct Signers {
    /// (public key, how it is named: `lena (lead)`, `ben`, `key 0a1b…`).
    keys: Vec<(String, String)>,
    /// Answers that carry no signature count too.
    unsigned: bool,
    /// The study has a roster: without one every answer counts.
    signed_study: bool,
}

impl Signers {
    /// The lead's key, and each of `by` (a name on `roster`, or a public key as
    /// `raglab study key` prints it); `unsigned`: answers with no signature count.
    pub fn of(roster: &Roster, by: &[String], unsigned: bool) -> Result<Self, String> {
        let mut keys = Vec::new();
        if let Some((name, key)) = roster.lead() {
            keys.push((key.to_string(), format!("{name} (lead)")));
        }
        for who in by {
            let key = match roster.key_of(who) {
                Some(k) => k.to_string(),
                None => check_public_key(who).map_err(|_| {
                    format!(
                        "--answers-by {}: not a name on the study's roster, nor a public key (64 hex digits, as `raglab study key` prints it)",
                        crate::core::text::sanitize_for_terminal(who)
                    )
                })?,
            };
            let named = roster.name_of(&key).unwrap_or_default().to_string();
            let named = if named.is_empty() {
                format!("key {}", short(&key))
            } else {
                named
            };
            keys.push((key, named));
        }
        Ok(Self {
            keys,
            unsigned,
            signed_study: roster.is_signed(),
        })
    }

    fn accepts(&self, key: &str) -> bool {
        self.keys.iter().any(|(k, _)| k == key)
    }

    /// Whose answers are taken, for a line: `lena (lead), ben`.
    pub fn describe(&self) -> String {
        let mut v: Vec<&str> = self.keys.iter().map(|(_, n)| n.as_str()).collect();
        if self.unsigned {
            v.push("unsigned answers");
        }
        v.join(", ")
    }

    /// Whether a roster makes the rule apply (a study without one takes every answer).
    pub fn applies(&self) -> bool {
        self.signed_study
    }
}

/// The answers taken, in stored order, and those left out (one sentence each).
#[derive(Debug, Clone, Default)]
pub struct Taken {
    pub answers: Vec<AnswerRecord>,
    pub left_out: Vec<Refusal>,
}

/// Why answer `a` is not taken under `signers` (None: it is), said after the answer
/// (`is signed by ann, …`); `roster` names keys.
pub fn answer_fault(
    a: &AnswerRecord,
    signers: &Signers,
    roster: &Roster,
    verify: Verify,
) -> Option<String> {
    if !signers.signed_study {
        return None;
    }
    match (a.signer.as_deref(), a.signature.as_deref()) {
        (None, _) | (_, None) if signers.unsigned => None,
        (None, _) | (_, None) => Some(
            "carries no signature (stored by a raglab before answers were signed, or written by other means): the lead takes unsigned answers with --unsigned-answers".into()
        ),
        (Some(k), Some(sig)) if !verify(k, &answer_bytes(a), sig) => Some(format!(
            "has a signature that does not match its fields (key {})",
            short(k)
        )),
        (Some(k), _) if signers.accepts(k) => None,
        (Some(k), _) => {
            let (who, flag) = match roster.name_of(k) {
                Some(name) => (name.to_string(), name.to_string()),
                None => (
                    format!("key {}, not on the roster", short(k)),
                    k.to_string(),
                ),
            };
            Some(format!(
                "is signed by {who}, whose answers the lead did not accept: take them with --answers-by {flag}"
            ))
        }
    }
}

/// The answers of `rows` that are taken under `signers`, each id once (its first
/// taken row), and those left out.
pub fn take_answers(
    rows: Vec<AnswerRecord>,
    signers: &Signers,
    roster: &Roster,
    verify: Verify,
) -> Taken {
    let mut out = Taken::default();
    let mut seen: HashSet<String> = HashSet::new();
    for a in rows {
        match answer_fault(&a, signers, roster, verify) {
            Some(why) => out.left_out.push(Refusal {
                item: Some(a.answer_id.clone()),
                row: None,
                why: format!("answer {} of run {} {why}", a.answer_id, a.run),
            }),
            None if seen.contains(&a.answer_id) => {}
            None => {
                seen.insert(a.answer_id.clone());
                out.answers.push(a);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::signing::toy::{ANN, LENA, MAL, study, toy_sign, toy_verify};

    fn signed(key: &str, mut a: AnswerRecord) -> AnswerRecord {
        a.signer = Some(key.into());
        a.signature = Some(toy_sign(key, &answer_bytes(&a)));
        a
    }

    /// lena leads; ann reviews.
    fn roster() -> Roster {
        study("n").0
    }

    fn answer(id: &str, text: &str) -> AnswerRecord {
        AnswerRecord {
            answer_id: id.into(),
            run: "rag".into(),
            question_id: id.into(),
            question: "How is the flu prevented?".into(),
            target_ids: vec!["flu#a".into(), "flu#b".into()],
            answer: text.into(),
            created_at: "2026-12-07T00:00:00Z".into(),
            ..AnswerRecord::default()
        }
    }

    fn ids(t: &Taken) -> Vec<(&str, &str)> {
        t.answers
            .iter()
            .map(|a| (a.answer_id.as_str(), a.answer.as_str()))
            .collect()
    }

    #[test]
    fn the_leads_answers_are_taken_and_a_members_are_left_out_and_named() {
        let r = roster();
        let rows = vec![
            // ann writes q1 ahead of the lead under the id the lead will use.
            signed(ANN, answer("rag-q1", "planted")),
            signed(LENA, answer("rag-q1", "genuine")),
            signed(LENA, answer("rag-q2", "genuine")),
            signed(ANN, answer("rag-q3", "planted")),
        ];
        let signers = Signers::of(&r, &[], false).expect("signers");
        assert!(signers.applies());
        let t = take_answers(rows.clone(), &signers, &r, &toy_verify);
        assert_eq!(ids(&t), [("rag-q1", "genuine"), ("rag-q2", "genuine")]);
        assert_eq!(t.left_out.len(), 2);
        let why = &t.left_out[0].why;
        assert!(
            why.contains("answer rag-q1 of run rag is signed by ann")
                && why.contains("--answers-by ann"),
            "{why}"
        );
        // Once the lead names ann, ann's answers are taken; q1's first taken row is
        // now ann's, which came first.
        let signers = Signers::of(&r, &["ann".into()], false).expect("signers");
        assert_eq!(signers.describe(), "lena (lead), ann");
        let t = take_answers(rows, &signers, &r, &toy_verify);
        assert_eq!(
            ids(&t),
            [
                ("rag-q1", "planted"),
                ("rag-q2", "genuine"),
                ("rag-q3", "planted")
            ]
        );
        assert!(t.left_out.is_empty());
    }

    #[test]
    fn a_key_off_the_roster_is_taken_only_when_the_lead_names_it() {
        let r = roster();
        let rows = vec![signed(MAL, answer("rag-q1", "shard"))];
        let none = Signers::of(&r, &[], false).expect("s");
        let t = take_answers(rows.clone(), &none, &r, &toy_verify);
        assert!(t.answers.is_empty());
        let why = &t.left_out[0].why;
        assert!(why.contains("not on the roster"), "{why}");
        assert!(why.contains(&format!("--answers-by {MAL}")), "{why}");
        let by = Signers::of(&r, &[MAL.to_uppercase()], false).expect("key");
        assert_eq!(
            ids(&take_answers(rows, &by, &r, &toy_verify)),
            [("rag-q1", "shard")]
        );
        let err = Signers::of(&r, &["carol".into()], false).expect_err("unknown");
        assert!(err.contains("--answers-by carol: not a name"), "{err}");
    }

    #[test]
    fn unsigned_and_altered_answers_are_left_out() {
        let r = roster();
        let mut altered = signed(LENA, answer("rag-q2", "genuine"));
        altered.answer = "changed after signing".into();
        let mut moved = signed(LENA, answer("rag-q3", "genuine"));
        moved.target_ids.pop();
        let rows = vec![answer("rag-q1", "old"), altered, moved];
        let lead_only = Signers::of(&r, &[], false).expect("s");
        let t = take_answers(rows.clone(), &lead_only, &r, &toy_verify);
        assert!(t.answers.is_empty());
        let whys: Vec<&str> = t.left_out.iter().map(|x| x.why.as_str()).collect();
        assert!(
            whys[0].contains("carries no signature") && whys[0].contains("--unsigned-answers"),
            "{}",
            whys[0]
        );
        assert!(whys[1].contains("does not match its fields"), "{}", whys[1]);
        assert!(whys[2].contains("does not match its fields"), "{}", whys[2]);
        let with_unsigned = Signers::of(&r, &[], true).expect("s");
        let t = take_answers(rows, &with_unsigned, &r, &toy_verify);
        assert_eq!(ids(&t), [("rag-q1", "old")]);
    }

    #[test]
    fn a_study_without_a_roster_takes_every_answer_once() {
        let r = Roster::default();
        let rows = vec![
            answer("rag-q1", "first"),
            signed(MAL, answer("rag-q1", "second")),
            answer("rag-q2", "x"),
        ];
        let s = Signers::of(&r, &[], false).expect("s");
        assert!(!s.applies());
        let t = take_answers(rows, &s, &r, &toy_verify);
        assert_eq!(ids(&t), [("rag-q1", "first"), ("rag-q2", "x")]);
        assert!(t.left_out.is_empty());
    }

    #[test]
    fn every_signed_field_is_bound() {
        let a = signed(LENA, answer("rag-q1", "text"));
        let base = answer_bytes(&a);
        let changes: Vec<fn(&mut AnswerRecord)> = vec![
            |a| a.answer_id = "rag-q9".into(),
            |a| a.run = "other".into(),
            |a| a.question_id = "q9".into(),
            |a| a.question = "?".into(),
            |a| a.reference_answer = Some(String::new()),
            |a| a.target_ids = vec!["flu#ab".into()],
            |a| a.prompt = "p".into(),
            |a| a.answer = "other text".into(),
            |a| a.model_file = "m".into(),
            |a| a.model_sha256 = "h".into(),
            |a| a.endpoint = Some("http://x".into()),
            |a| a.served_model = Some("s".into()),
            |a| a.created_at = "t".into(),
            |a| a.signer = Some(ANN.into()),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut b = a.clone();
            change(&mut b);
            assert_ne!(
                answer_bytes(&b),
                base,
                "change {i} is not in the signed bytes"
            );
        }
    }
}
