//! Rubrics are data: a TOML file with criteria (key, name, definition, allowed
//! labels; pass/fail by default). From a rubric come the judge's output grammar (GBNF,
//! so a constrained model always produces one label per criterion) and the parser of
//! that output.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    pub key: String,
    pub name: String,
    pub definition: String,
    /// Overrides the rubric's labels for this criterion.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    /// How reviewers apply this criterion (free text), shown with the worked
    /// examples in the Annotate pane's guidelines overlay. Not part of the judge's
    /// prompt. Absent fields are not written back, so a rubric without guidelines
    /// serialises as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidelines: Option<String>,
    /// Worked examples: an answer (or excerpt), the label it earns and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
}

/// A worked example of a criterion (`[[criteria.examples]]` in the rubric file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The answer, or the part of it that matters.
    pub text: String,
    /// The label it earns: one of the criterion's labels.
    pub label: String,
    /// Why.
    #[serde(default)]
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    pub name: String,
    pub version: String,
    #[serde(default = "pass_fail")]
    pub labels: Vec<String>,
    pub criteria: Vec<Criterion>,
    /// The key that gives each label in the Annotate pane (`[keys] partly = "a"`);
    /// a label without one is given by its first letter.
    #[serde(default)]
    pub keys: std::collections::BTreeMap<String, char>,
    /// Whether the labels are ordered, lowest first as listed (a criterion's own
    /// labels too): agreement then adds ordinal and interval alpha and weighted kappa.
    #[serde(default)]
    pub ordered: bool,
}

fn pass_fail() -> Vec<String> {
    vec!["pass".into(), "fail".into()]
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RubricError {
    #[error("invalid rubric: {0}")]
    Invalid(String),
    #[error("judge output has no line for criterion `{0}`")]
    Missing(String),
    #[error("label `{label}` is not allowed for `{criterion}`")]
    BadLabel { criterion: String, label: String },
    #[error("judge output is not a JSON object: {0}")]
    NotJson(String),
}

/// The labels of every criterion and a rationale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    pub labels: Vec<(String, String)>,
    pub rationale: String,
}

impl Rubric {
    /// Check a deserialized rubric (the file format is parsed by the caller).
    /// Names, definitions and the version are display text from a file: they are
    /// cleaned of terminal controls here, once, so every pane and printer shows them
    /// safely. Keys and labels are identifiers stored with every label: they must be
    /// plain already.
    pub fn validated(self) -> Result<Self, RubricError> {
        use crate::core::text::{is_terminal_safe, sanitize_for_terminal as clean};
        let mut r = self;
        r.name = clean(&r.name);
        r.version = clean(&r.version);
        for c in &mut r.criteria {
            c.name = clean(&c.name);
            c.definition = clean(&c.definition);
            // Paragraphs: `clean` keeps line breaks and drops every control else.
            c.guidelines = c.guidelines.as_deref().map(clean);
            for e in &mut c.examples {
                e.text = clean(&e.text);
                e.why = clean(&e.why);
            }
        }
        if r.criteria.is_empty() {
            return Err(RubricError::Invalid("no criteria".into()));
        }
        for c in &r.criteria {
            if c.key.is_empty()
                || !c
                    .key
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_' || ch.is_ascii_digit())
            {
                return Err(RubricError::Invalid(format!(
                    "criterion key `{}` must be lowercase snake_case",
                    c.key
                )));
            }
            let labels = r.labels_of(c);
            if labels.is_empty()
                || labels.iter().any(|l| {
                    l.trim().is_empty()
                        || l.contains(['"', '\\'])
                        || !is_terminal_safe(l)
                        || l.contains(['\n', '\t'])
                })
            {
                return Err(RubricError::Invalid(format!(
                    "criterion `{}` has no usable labels",
                    c.key
                )));
            }
            if let Some(e) = c.examples.iter().find(|e| !labels.contains(&e.label)) {
                return Err(RubricError::Invalid(format!(
                    "an example of criterion `{}` has label `{}`, which is not one of its labels",
                    c.key, e.label
                )));
            }
            let mut seen: Vec<(char, &str)> = Vec::new();
            for l in labels {
                let k = r.key_of(l);
                if !k.is_alphanumeric() {
                    return Err(RubricError::Invalid(format!(
                        "the key of label `{l}` must be a letter or digit (got {k:?})"
                    )));
                }
                if let Some((_, other)) = seen.iter().find(|(x, _)| *x == k) {
                    return Err(RubricError::Invalid(format!(
                        "labels `{other}` and `{l}` of criterion `{}` share the key `{k}`: give one its own key in [keys], e.g. {l} = \"x\"",
                        c.key
                    )));
                }
                seen.push((k, l));
            }
        }
        if let Some(unknown) = r
            .keys
            .keys()
            .find(|l| !r.criteria.iter().any(|c| r.labels_of(c).contains(l)))
        {
            return Err(RubricError::Invalid(format!(
                "[keys] names `{unknown}`, which is not a label of this rubric"
            )));
        }
        Ok(r)
    }

    /// The key that gives `label` in the Annotate pane: declared in `[keys]`, else
    /// the label's first letter (lowercase).
    pub fn key_of(&self, label: &str) -> char {
        self.keys.get(label).copied().unwrap_or_else(|| {
            label
                .chars()
                .next()
                .map_or(' ', |c| c.to_lowercase().next().unwrap_or(c))
        })
    }

    /// The label of criterion `c` that `key` gives, if any.
    pub fn label_for_key<'a>(&'a self, c: &'a Criterion, key: char) -> Option<&'a str> {
        self.labels_of(c)
            .iter()
            .find(|l| self.key_of(l) == key)
            .map(String::as_str)
    }

    /// Every label of the rubric in order: its labels, then each criterion's own
    /// labels not among them, criterion by criterion.
    pub fn all_labels(&self) -> Vec<String> {
        let mut all = self.labels.clone();
        for l in self.criteria.iter().flat_map(|c| self.labels_of(c)) {
            if !all.contains(l) {
                all.push(l.clone());
            }
        }
        all
    }

    pub fn labels_of<'a>(&'a self, c: &'a Criterion) -> &'a [String] {
        c.labels.as_deref().unwrap_or(&self.labels)
    }

    /// The rubric of pair items: the same criteria (names, definitions, guidelines),
    /// each labelled `first`, `second` or `tie` (keys f, s, t), unordered, without the
    /// worked examples (theirs are labels of single answers). Its version is this
    /// one's with `+pairwise`, so a pair label names the rubric it was given under.
    /// A pairwise rubric is returned as it is.
    pub fn pairwise(&self) -> Rubric {
        use crate::core::preference::PAIR_LABELS;
        if self.is_pairwise() {
            return self.clone();
        }
        Rubric {
            name: format!("{} (pairwise)", self.name),
            version: format!("{}+pairwise", self.version),
            labels: PAIR_LABELS.iter().map(|l| l.to_string()).collect(),
            criteria: self
                .criteria
                .iter()
                .map(|c| Criterion {
                    labels: None,
                    examples: Vec::new(),
                    ..c.clone()
                })
                .collect(),
            keys: Default::default(),
            ordered: false,
        }
    }

    /// Whether every criterion is labelled `first`, `second` or `tie`.
    pub fn is_pairwise(&self) -> bool {
        use crate::core::preference::PAIR_LABELS;
        self.criteria
            .iter()
            .all(|c| self.labels_of(c).iter().map(String::as_str).eq(PAIR_LABELS))
    }

    pub fn criterion(&self, key: &str) -> Option<&Criterion> {
        self.criteria.iter().find(|c| c.key == key)
    }

    /// The criteria block of the judge prompt.
    pub fn describe(&self) -> String {
        self.criteria
            .iter()
            .map(|c| {
                format!(
                    "- {} ({}): {} [{}]",
                    c.key,
                    c.name,
                    c.definition,
                    self.labels_of(c).join("/")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// GBNF grammar: one `key: label` line per criterion in rubric order, then a
    /// one-line rationale of at most 300 characters.
    pub fn grammar(&self) -> String {
        let mut g = String::from("root ::=");
        for (i, c) in self.criteria.iter().enumerate() {
            g.push_str(&format!(" \"{}: \" l{i} \"\\n\"", c.key));
        }
        g.push_str(" \"rationale: \" rationale\n");
        for (i, c) in self.criteria.iter().enumerate() {
            let alts: Vec<String> = self
                .labels_of(c)
                .iter()
                .map(|l| format!("\"{l}\""))
                .collect();
            g.push_str(&format!("l{i} ::= {}\n", alts.join(" | ")));
        }
        g.push_str("rationale ::= [^\\n]{0,300}\n");
        g
    }

    /// The judge's output as a JSON schema, for model servers that constrain output
    /// with one (OpenAI's `response_format`; llama.cpp's server turns it into a
    /// grammar): an object with one allowed label per criterion, in the rubric's order,
    /// and a rationale of at most 300 characters.
    pub fn json_schema(&self) -> serde_json::Value {
        let mut props = serde_json::Map::new();
        let mut required = Vec::new();
        for c in &self.criteria {
            props.insert(
                c.key.clone(),
                serde_json::json!({"type": "string", "enum": self.labels_of(c)}),
            );
            required.push(c.key.clone());
        }
        props.insert(
            "rationale".into(),
            serde_json::json!({"type": "string", "maxLength": 300}),
        );
        required.push("rationale".into());
        serde_json::json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// Parse and check judge output shaped by [`Self::json_schema`]: every criterion
    /// present with an allowed label (a server may ignore the schema, so the reply is
    /// validated here whatever it claims). Output in the line format of
    /// [`Self::grammar`] is accepted too.
    pub fn parse_json_judgement(&self, text: &str) -> Result<Judgement, RubricError> {
        let trimmed = text.trim();
        if !trimmed.starts_with('{') {
            return self.parse_judgement(text);
        }
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(trimmed).map_err(|e| RubricError::NotJson(e.to_string()))?;
        let mut labels = Vec::new();
        for c in &self.criteria {
            let label = v
                .get(&c.key)
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| RubricError::Missing(c.key.clone()))?
                .trim()
                .to_lowercase();
            if !self
                .labels_of(c)
                .iter()
                .any(|l| l.eq_ignore_ascii_case(&label))
            {
                return Err(RubricError::BadLabel {
                    criterion: c.key.clone(),
                    label,
                });
            }
            labels.push((c.key.clone(), label));
        }
        let rationale = v
            .get("rationale")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string();
        Ok(Judgement { labels, rationale })
    }

    /// Parse judge output (as the grammar produces it, tolerant of spacing and case).
    pub fn parse_judgement(&self, text: &str) -> Result<Judgement, RubricError> {
        let mut labels = Vec::new();
        for c in &self.criteria {
            let line = text
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim().eq_ignore_ascii_case(&c.key)).then(|| v.trim().to_lowercase())
                })
                .ok_or_else(|| RubricError::Missing(c.key.clone()))?;
            if !self
                .labels_of(c)
                .iter()
                .any(|l| l.eq_ignore_ascii_case(&line))
            {
                return Err(RubricError::BadLabel {
                    criterion: c.key.clone(),
                    label: line,
                });
            }
            labels.push((c.key.clone(), line));
        }
        let rationale = text
            .lines()
            .find_map(|l| l.strip_prefix("rationale:").map(|r| r.trim().to_string()))
            .unwrap_or_default();
        Ok(Judgement { labels, rationale })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass_fail_rubric() -> Rubric {
        let c = |k: &str| Criterion {
            key: k.into(),
            name: k.into(),
            definition: "d".into(),
            labels: None,
            guidelines: None,
            examples: Vec::new(),
        };
        Rubric {
            name: "t".into(),
            version: "1".into(),
            labels: pass_fail(),
            criteria: vec![
                c("faithfulness"),
                c("completeness"),
                c("factual_consistency"),
                c("clarity"),
            ],
            keys: Default::default(),
            ordered: false,
        }
        .validated()
        .expect("valid")
    }

    #[test]
    fn grammar_lists_every_criterion_and_label() {
        let g = pass_fail_rubric().grammar();
        assert!(
            g.starts_with("root ::= \"faithfulness: \" l0 \"\\n\" \"completeness: \" l1"),
            "{g}"
        );
        assert!(g.contains("l3 ::= \"pass\" | \"fail\""));
    }

    #[test]
    fn json_judgements_follow_the_schema_and_are_checked() {
        let r = pass_fail_rubric();
        let schema = r.json_schema();
        assert_eq!(
            schema["required"],
            serde_json::json!([
                "faithfulness",
                "completeness",
                "factual_consistency",
                "clarity",
                "rationale"
            ])
        );
        assert_eq!(
            schema["properties"]["clarity"]["enum"],
            serde_json::json!(["pass", "fail"])
        );
        let ok = r#"{"faithfulness": "pass", "completeness": "FAIL", "factual_consistency": "pass", "clarity": "pass", "rationale": " misses the dose "}"#;
        let j = r.parse_json_judgement(ok).expect("parse");
        assert_eq!(j.labels[1], ("completeness".into(), "fail".into()));
        assert_eq!(j.rationale, "misses the dose");
        let missing = r#"{"faithfulness": "pass", "rationale": "x"}"#;
        assert_eq!(
            r.parse_json_judgement(missing),
            Err(RubricError::Missing("completeness".into()))
        );
        let bad = ok.replace("\"FAIL\"", "\"maybe\"");
        assert!(matches!(
            r.parse_json_judgement(&bad),
            Err(RubricError::BadLabel { .. })
        ));
        assert!(matches!(
            r.parse_json_judgement("{\"faithfulness\": "),
            Err(RubricError::NotJson(_))
        ));
        // A server that ignored the schema and wrote lines is still understood.
        let lines = "faithfulness: pass\ncompleteness: fail\nfactual_consistency: pass\nclarity: pass\nrationale: r";
        assert!(r.parse_json_judgement(lines).is_ok());
    }

    #[test]
    fn parses_output_and_rejects_bad_labels() {
        let r = pass_fail_rubric();
        let out = "faithfulness: pass\ncompleteness: fail\nfactual_consistency: pass\nclarity: pass\nrationale: misses the dose.";
        let j = r.parse_judgement(out).expect("parse");
        assert_eq!(j.labels[1], ("completeness".into(), "fail".into()));
        assert_eq!(j.rationale, "misses the dose.");
        assert!(matches!(
            r.parse_judgement("faithfulness: pass"),
            Err(RubricError::Missing(_))
        ));
        let bad = out.replace("clarity: pass", "clarity: maybe");
        assert!(matches!(
            r.parse_judgement(&bad),
            Err(RubricError::BadLabel { .. })
        ));
    }

    #[test]
    fn validation_rejects_bad_rubrics() {
        let mut r = pass_fail_rubric();
        r.criteria[0].key = "Bad Key".into();
        assert!(r.validated().is_err());
        let mut r = pass_fail_rubric();
        r.criteria.clear();
        assert!(r.validated().is_err());
        let mut r = pass_fail_rubric();
        r.criteria[1].labels = Some(vec!["yes".into(), "no".into(), "maybe".into()]);
        let r = r.validated().expect("valid");
        assert!(r.grammar().contains("l1 ::= \"yes\" | \"no\" | \"maybe\""));
    }

    #[test]
    fn label_keys_default_to_first_letters_and_must_be_distinct() {
        let r = pass_fail_rubric();
        assert_eq!((r.key_of("pass"), r.key_of("fail")), ('p', 'f'));
        let c = &r.criteria[0];
        assert_eq!(r.label_for_key(c, 'f'), Some("fail"));
        assert_eq!(r.label_for_key(c, 'x'), None);
        let mut clash = pass_fail_rubric();
        clash.labels = vec!["partly".into(), "pass".into(), "fail".into()];
        let err = clash.clone().validated().expect_err("p twice");
        assert!(err.to_string().contains("share the key `p`"), "{err}");
        clash.keys.insert("partly".into(), 'a');
        let ok = clash.validated().expect("distinct keys");
        assert_eq!(ok.label_for_key(&ok.criteria[0], 'a'), Some("partly"));
        let mut stray = pass_fail_rubric();
        stray.keys.insert("maybe".into(), 'm');
        assert!(stray.validated().is_err(), "a key for no label");
    }
}
