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
}
