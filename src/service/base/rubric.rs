//! Loading rubrics from TOML files (the file format stays out of `core`).

use std::path::Path;

use anyhow::{Context, Result};

use crate::core::rubric::Rubric;

/// The embedded default rubric (assets/rubrics/pubhealthbench.toml).
pub const DEFAULT_RUBRIC: &str = include_str!("../../../assets/rubrics/pubhealthbench.toml");

pub fn parse_rubric(text: &str) -> Result<Rubric> {
    let r: Rubric = toml::from_str(text).context("rubric TOML")?;
    Ok(r.validated()?)
}

pub fn default_rubric() -> Rubric {
    // Tested below; a broken embedded file is a build defect, not a user error.
    parse_rubric(DEFAULT_RUBRIC).expect("embedded rubric is valid")
}

pub fn load_rubric(path: Option<&Path>) -> Result<Rubric> {
    match path {
        None => Ok(default_rubric()),
        Some(p) => {
            let t = super::jsonl::read_text(p).context("cannot read the rubric")?;
            parse_rubric(&t).with_context(|| format!("invalid rubric {}", p.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rubric_has_the_four_criteria() {
        let r = default_rubric();
        let keys: Vec<_> = r.criteria.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "faithfulness",
                "completeness",
                "factual_consistency",
                "clarity"
            ]
        );
        assert_eq!(r.labels, vec!["pass", "fail"]);
        assert!(parse_rubric("name = \"x\"\nversion = \"1\"\ncriteria = []\n").is_err());
    }

    /// A rubric's guidelines and worked examples parse from TOML, are cleaned of
    /// terminal controls (line breaks kept), and an example's label must be one of
    /// its criterion's labels.
    #[test]
    fn guidelines_and_examples_parse_and_are_checked() {
        let text = r#"
name = "g"
version = "1"
[[criteria]]
key = "faithfulness"
name = "Faithfulness"
definition = "No claims beyond the guidance."
guidelines = """
Fail an answer that adds a dose.\u001b[2J
Pass paraphrases."""
[[criteria.examples]]
text = "Take 2 tablets (the guidance names no dose)."
label = "fail"
why = "Adds a dose."
"#;
        let r = parse_rubric(text).expect("valid");
        let c = &r.criteria[0];
        assert_eq!(
            c.guidelines.as_deref(),
            Some("Fail an answer that adds a dose.\nPass paraphrases.")
        );
        assert_eq!(c.examples.len(), 1);
        assert_eq!(
            (c.examples[0].label.as_str(), c.examples[0].why.as_str()),
            ("fail", "Adds a dose.")
        );
        let bad = text.replace("label = \"fail\"", "label = \"maybe\"");
        let err = format!("{:#}", parse_rubric(&bad).expect_err("maybe is no label"));
        assert!(
            err.contains("has label `maybe`, which is not one of its labels"),
            "{err}"
        );
    }
}
