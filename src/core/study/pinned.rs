//! The study's own rubric: pinned in the workspace by the study lead, as a signed row,
//! so that submission and reveal never depend on the rubric a viewer holds locally.
//!
//! Why: an item is submitted by a reviewer once every criterion of the rubric has a
//! label from them, and revealed once all its reviewers have submitted it. Computed
//! from each viewer's own rubric, a file with one criterion (or a stale config) marks
//! an item submitted after one label and shows the partner's labels early. So the
//! lead pins the study's rubric (`raglab study rubric pin`), and every view computes
//! submission from the pinned criteria.
//!
//! The rules, in the order of the pin log (`rubric.lance`):
//! - A pin counts only in a study with a roster, signed by the lead's key over its
//!   fields and the study id (like every signed row of the study).
//! - Versions: each pin is in force from the position of the label log at which it
//!   was made (its signed `label_rows`); the first from the start of the log. So a new
//!   pin changes what is required from then on, and leaves every earlier submission
//!   and reveal where it happened. The rubric of the newest pin is *the study's
//!   rubric*: labels are validated against it and agreement is tabulated on its
//!   criteria.
//! - A pin that repeats an earlier pin's signed fields (a byte-for-byte copy, appended
//!   to bring back an older rubric, however its signature is spelled) is refused and
//!   named; so is one stored before the
//!   row its writer had read (signed `pin_rows`: the log was rewritten), and one in
//!   force from an earlier label position than the pin before it.
//!
//! A study with a roster and no pin keeps the earlier rule: each viewer's rubric
//! decides (every view says nothing of a pin).

use serde::{Deserialize, Serialize};

use crate::core::rubric::Rubric;
use crate::core::signing::{Binding, Checked, Counted, Refusal, Roster, Verify, seal_fault};

/// One row of the pin log: the study's rubric as the lead pinned it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RubricPin {
    /// The rubric, as the JSON of [`Rubric`].
    pub rubric: String,
    /// The rubric's name and version (for people reading the dataset; they must
    /// match the rubric's own).
    pub name: String,
    pub version: String,
    pub pinned_at: String,
    /// Label rows stored when it was pinned: it is in force from that position.
    pub label_rows: u64,
    /// Pin rows stored when it was pinned: it is stored at that row or later.
    pub pin_rows: u64,
    /// The lead's public key and signature ([`pin_bytes`]).
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
}

/// A pin that counts: its rubric, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedRubric {
    pub rubric: Rubric,
    /// Label rows stored when it was pinned.
    pub label_rows: u64,
    pub pinned_at: String,
}

/// The pins of a stored log (in log order) that count, and those refused
/// (see the module's rules).
pub fn check_pins(rows: Vec<RubricPin>, roster: &Roster, verify: Verify) -> Checked<PinnedRubric> {
    let mut out = Checked::default();
    let mut seen = Counted::default();
    let mut last_from: Option<u64> = None;
    for (pos, p) in rows.into_iter().enumerate() {
        let fields = pin_bytes(&p, &Binding::Unbound);
        let repeated = seen.repeats(&fields);
        match pin_fault(&p, pos, roster, repeated, last_from, verify) {
            Err(why) => out.refused.push(Refusal {
                item: None,
                row: None,
                why: format!("rubric pin {} v{} {why}", p.name, p.version),
            }),
            Ok(rubric) => {
                seen.count(fields);
                last_from = Some(p.label_rows);
                out.kept.push(PinnedRubric {
                    rubric,
                    label_rows: p.label_rows,
                    pinned_at: p.pinned_at,
                });
                out.rows.push(pos);
            }
        }
    }
    out
}

/// The pin's rubric when it counts at stored row `pos`, else why not (said after
/// "rubric pin NAME vV").
fn pin_fault(
    p: &RubricPin,
    pos: usize,
    roster: &Roster,
    repeated: bool,
    last_from: Option<u64>,
    verify: Verify,
) -> Result<Rubric, String> {
    let Some((_, lead_key)) = roster.lead().filter(|_| roster.is_signed()) else {
        return Err(
            "does not count: the study has no roster with a lead (the lead pins the study's rubric once the roster is founded)"
                .into(),
        );
    };
    if repeated {
        return Err("repeats an earlier pin (a copied row changes nothing)".into());
    }
    let bytes = |b: &Binding| pin_bytes(p, b);
    let (signer, sig) = (p.signer.as_deref(), p.signature.as_deref());
    if let Some(why) = seal_fault(signer, sig, lead_key, roster.binding(), &bytes, verify) {
        return Err(format!("is not signed by the lead's key{why}"));
    }
    if p.pin_rows > pos as u64 {
        return Err(format!(
            "was written when the pin log held {} rows but is stored at row {pos} (the log was rewritten)",
            p.pin_rows
        ));
    }
    if let Some(from) = last_from.filter(|from| p.label_rows < *from) {
        return Err(format!(
            "is in force from label row {}, before the pin it follows (from row {from}): the log was rewritten",
            p.label_rows
        ));
    }
    let rubric = serde_json::from_str::<Rubric>(&p.rubric)
        .map_err(|e| e.to_string())
        .and_then(|r| r.validated().map_err(|e| e.to_string()))
        .map_err(|e| format!("holds no valid rubric ({e})"))?;
    if rubric.name != p.name || rubric.version != p.version {
        return Err(format!(
            "names rubric {} v{} but holds {} v{}",
            p.name, p.version, rubric.name, rubric.version
        ));
    }
    Ok(rubric)
}

/// The schedule's pinned criteria from the kept pins: each pin in force from the
/// first kept label at or after the stored label position it was made at (`rows`:
/// the stored positions of the kept labels), as assignments are.
pub fn require_pinned(
    schedule: &mut crate::core::blinding::Schedule,
    pins: &[PinnedRubric],
    rows: &[usize],
) {
    for p in pins {
        let stored = usize::try_from(p.label_rows).unwrap_or(usize::MAX);
        let from = rows.partition_point(|&r| r < stored);
        let keys = p.rubric.criteria.iter().map(|c| c.key.clone()).collect();
        schedule.require(from, keys);
    }
}

/// How `yours` differs from the study's pinned rubric `study`, one sentence per
/// difference (empty when they are the same rubric): criteria missing or extra,
/// their order, each shared criterion's labels, name, definition and guidelines,
/// the rubric's version, name, label keys and order of labels.
pub fn rubric_differences(yours: &Rubric, study: &Rubric) -> Vec<String> {
    let mut out = Vec::new();
    let keys = |r: &Rubric| -> Vec<String> { r.criteria.iter().map(|c| c.key.clone()).collect() };
    let (mine, theirs) = (keys(yours), keys(study));
    for k in theirs.iter().filter(|k| !mine.contains(k)) {
        out.push(format!(
            "your rubric lacks criterion {k} that the study's pinned rubric has"
        ));
    }
    for k in mine.iter().filter(|k| !theirs.contains(k)) {
        out.push(format!(
            "your rubric has criterion {k} that the study's pinned rubric lacks"
        ));
    }
    let shared = |v: &[String], other: &[String]| -> Vec<String> {
        v.iter().filter(|k| other.contains(k)).cloned().collect()
    };
    if shared(&mine, &theirs) != shared(&theirs, &mine) {
        out.push(format!(
            "your rubric lists its criteria in another order ({}; the study's: {})",
            mine.join(", "),
            theirs.join(", ")
        ));
    }
    for c in &study.criteria {
        let Some(m) = yours.criterion(&c.key) else {
            continue;
        };
        let (a, b) = (yours.labels_of(m), study.labels_of(c));
        if a != b {
            out.push(format!(
                "criterion {}: your labels are {}, the study's are {}",
                c.key,
                a.join(", "),
                b.join(", ")
            ));
        }
        for (what, differs) in [
            ("name", m.name != c.name),
            ("definition", m.definition != c.definition),
            (
                "guidelines and worked examples",
                m.guidelines != c.guidelines || m.examples != c.examples,
            ),
        ] {
            if differs {
                out.push(format!(
                    "criterion {}: your {what} differs from the study's",
                    c.key
                ));
            }
        }
    }
    if yours.version != study.version {
        out.push(format!(
            "your rubric is version {}, the study's is version {}",
            yours.version, study.version
        ));
    }
    if yours.name != study.name {
        out.push(format!(
            "your rubric is named {}, the study's {}",
            yours.name, study.name
        ));
    }
    if yours.ordered != study.ordered {
        out.push(if study.ordered {
            "the study's rubric orders its labels, yours does not".into()
        } else {
            "your rubric orders its labels, the study's does not".into()
        });
    }
    if out.is_empty() && yours != study {
        out.push("your rubric's label keys differ from the study's".into());
    }
    out
}

/// The bytes a rubric pin (the study's rubric, pinned by the lead) is signed over in a
/// study bound as `study`: every field but the signature, under a tag of its own.
pub fn pin_bytes(p: &RubricPin, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("rubric pin");
    c.str(&p.rubric)
        .str(&p.name)
        .str(&p.version)
        .str(&p.pinned_at)
        .num(Some(p.label_rows))
        .num(Some(p.pin_rows))
        .opt(p.signer.as_deref());
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rubric::Criterion;
    use crate::core::signing::toy::{ANN, LENA, toy_sign, toy_verify};
    use crate::core::signing::{REVIEWER, RosterEntry, founding_bytes, roster_bytes};

    fn crit(key: &str) -> Criterion {
        Criterion {
            key: key.into(),
            name: key.to_uppercase(),
            definition: format!("{key} holds"),
            labels: None,
            guidelines: None,
            examples: Vec::new(),
        }
    }

    fn rubric(version: &str, keys: &[&str]) -> Rubric {
        Rubric {
            name: "r".into(),
            version: version.into(),
            labels: vec!["pass".into(), "fail".into()],
            criteria: keys.iter().map(|k| crit(k)).collect(),
            keys: Default::default(),
            ordered: false,
        }
    }

    #[test]
    fn differences_are_named_one_by_one() {
        let study = rubric("1", &["faithfulness", "clarity"]);
        assert!(rubric_differences(&study, &study).is_empty());
        let one = rubric("1", &["faithfulness"]);
        assert_eq!(
            rubric_differences(&one, &study),
            ["your rubric lacks criterion clarity that the study's pinned rubric has"]
        );
        let mut other = rubric("2", &["clarity", "faithfulness", "tone"]);
        other.criteria[0].labels = Some(vec!["pass".into(), "partly".into(), "fail".into()]);
        other.criteria[1].definition = "another".into();
        assert_eq!(
            rubric_differences(&other, &study),
            [
                "your rubric has criterion tone that the study's pinned rubric lacks",
                "your rubric lists its criteria in another order (clarity, faithfulness, tone; the study's: faithfulness, clarity)",
                "criterion faithfulness: your definition differs from the study's",
                "criterion clarity: your labels are pass, partly, fail, the study's are pass, fail",
                "your rubric is version 2, the study's is version 1",
            ]
        );
        let mut keyed = study.clone();
        keyed.keys.insert("pass".into(), 'y');
        assert_eq!(
            rubric_differences(&keyed, &study),
            ["your rubric's label keys differ from the study's"]
        );
    }

    /// lena's bound study with ann on its roster.
    fn study() -> Roster {
        let mut lead = RosterEntry {
            name: "lena".into(),
            role: crate::core::signing::LEAD.into(),
            public_key: LENA.into(),
            added_at: "t".into(),
            signer: Some(LENA.into()),
            signature: None,
            nonce: Some("n".into()),
            label_rows: None,
        };
        let id = toy_sign(LENA, &founding_bytes(&lead));
        lead.signature = Some(id.clone());
        let mut ann = RosterEntry {
            name: "ann".into(),
            role: REVIEWER.into(),
            public_key: ANN.into(),
            added_at: "t".into(),
            signer: Some(LENA.into()),
            signature: None,
            nonce: None,
            label_rows: None,
        };
        ann.signature = Some(toy_sign(LENA, &roster_bytes(&ann, &Binding::Study(id))));
        let (roster, refused) = Roster::from_rows(&[lead, ann], &toy_verify);
        assert!(refused.is_empty(), "{refused:?}");
        roster
    }

    fn pin(r: &Rubric, label_rows: u64, pin_rows: u64, by: &str, roster: &Roster) -> RubricPin {
        let mut p = RubricPin {
            rubric: serde_json::to_string(r).unwrap_or_default(),
            name: r.name.clone(),
            version: r.version.clone(),
            pinned_at: "t".into(),
            label_rows,
            pin_rows,
            signer: Some(by.into()),
            signature: None,
        };
        p.signature = Some(toy_sign(by, &pin_bytes(&p, roster.binding())));
        p
    }

    /// The lead's pins count in order; a copy of the first, appended to bring back
    /// its rubric, a reviewer's pin, an edited pin, a pin stored before the row its
    /// writer read and one going back in the label log are refused and named.
    #[test]
    fn pins_count_when_the_lead_signed_them_once_in_order() {
        let roster = study();
        let (v1, v2) = (rubric("1", &["a", "b"]), rubric("2", &["a", "b", "c"]));
        let first = pin(&v1, 0, 0, LENA, &roster);
        let mut edited = pin(&v2, 9, 2, LENA, &roster);
        edited.rubric = serde_json::to_string(&rubric("2", &["a"])).unwrap_or_default();
        let rows = vec![
            first.clone(),
            pin(&v2, 4, 1, LENA, &roster),
            first,                         // replayed
            pin(&v1, 5, 3, ANN, &roster),  // a reviewer's
            edited,                        // changed after signing
            pin(&v1, 6, 9, LENA, &roster), // claims 9 rows read, stored at 5
            pin(&v1, 3, 6, LENA, &roster), // from label row 3, after a pin from 4
        ];
        let checked = check_pins(rows, &roster, &toy_verify);
        assert_eq!(checked.rows, vec![0, 1]);
        assert_eq!(checked.kept[1].rubric, v2);
        let why: Vec<&str> = checked.refused.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "rubric pin r v1 repeats an earlier pin (a copied row changes nothing)",
                "rubric pin r v1 is not signed by the lead's key (it is signed by key 222222222222…)",
                "rubric pin r v2 is not signed by the lead's key (its signature does not match its fields and this study's id)",
                "rubric pin r v1 was written when the pin log held 9 rows but is stored at row 5 (the log was rewritten)",
                "rubric pin r v1 is in force from label row 3, before the pin it follows (from row 4): the log was rewritten",
            ]
        );
        // Without a roster no pin counts.
        let unsigned = check_pins(
            vec![pin(&v1, 0, 0, LENA, &roster)],
            &Roster::default(),
            &toy_verify,
        );
        assert!(unsigned.kept.is_empty());
        assert!(unsigned.refused[0].why.contains("the study has no roster"));
        // Kept pins become the schedule's criteria, each from its label position
        // among the kept labels (stored rows 0, 2, 5: stored position 4 is kept
        // index 2).
        let mut s = crate::core::blinding::Schedule::default();
        require_pinned(&mut s, &checked.kept, &[0, 2, 5]);
        assert_eq!(s.criteria_at(1), Some(&["a".to_string(), "b".into()][..]));
        assert_eq!(s.criteria_at(2).map(<[String]>::len), Some(3));
    }
}
