//! The versioned shapes of the `--json` outputs. Every document raglab prints with
//! `--json` is an object whose first field, `schema`, names its shape and version
//! (`"raglab.search/1"`); a list is printed as that object with the list in `items`.
//! docs/reference/json.md documents each shape field by field (path, JSON type,
//! meaning), and the test suite checks every document it reads against that page.
//!
//! The version goes up when a field is renamed or removed, or changes its type or
//! meaning; a new field keeps the version (readers ignore fields they do not know).

use anyhow::Result;
use serde::Serialize;

/// One `--json` output shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The shape's name, as in `raglab.NAME/VERSION`.
    pub name: &'static str,
    pub version: u32,
    /// The commands that print it.
    pub commands: &'static str,
}

impl Schema {
    /// `raglab.NAME/VERSION`, the value of the `schema` field.
    pub fn id(&self) -> String {
        format!("raglab.{}/{}", self.name, self.version)
    }
}

macro_rules! schemas {
    ($($konst:ident = $name:literal / $version:literal : $commands:literal;)*) => {
        $(pub const $konst: Schema = Schema { name: $name, version: $version, commands: $commands };)*
        /// Every shape, in the order docs/reference/json.md lists them.
        pub const ALL: &[Schema] = &[$($konst),*];
    };
}

schemas! {
    INGEST = "ingest" / 1 : "raglab ingest --json";
    CORPUS_STATS = "corpus-stats" / 1 : "raglab corpus stats --json";
    CORPUS_LIST = "corpus-list" / 1 : "raglab corpus list --json";
    CHUNK = "chunk" / 1 : "raglab corpus show CHUNK_ID --json";
    INDEX = "index" / 1 : "raglab index --json";
    SEARCH = "search" / 1 : "raglab search --json";
    SUMMARISE = "summarise" / 1 : "raglab summarise --json";
    EVAL_RETRIEVAL = "eval-retrieval" / 1 : "raglab eval retrieval --json";
    EVAL_MODELS = "eval-models" / 1 : "raglab eval retrieval --embed-models A,B --json";
    EVAL_VARIANTS = "eval-variants" / 1 : "raglab eval retrieval --variants F,S,R --json";
    EVAL_SHARD = "eval-shard" / 1 : "raglab eval retrieval --shard I/N --json";
    ABSTENTION = "abstention" / 1 : "raglab eval abstention --json";
    MCQA = "mcqa" / 1 : "raglab eval mcqa --json";
    MCQA_LIST = "mcqa-list" / 1 : "raglab eval mcqa --list";
    COMPARISON = "comparison" / 1 : "raglab compare --json, raglab eval runs --json";
    GATE = "gate" / 1 : "raglab gate --json";
    RUNS = "runs" / 1 : "raglab report runs --json";
    EVALSET_FILTER = "evalset-filter" / 1 : "raglab evalset filter --json";
    EVALSET_LIST = "evalset-list" / 1 : "raglab evalset list --json";
    ANSWERS_REPORT = "answers-report" / 1 : "raglab report answers";
    ANSWERS_LIST = "answers-list" / 1 : "raglab report answers --list";
    ANSWERS_COMPARE = "answers-compare" / 1 : "raglab report answers --compare A B";
    GROUNDED_RECORDS = "grounded-records" / 1 : "raglab answers show-grounded ID --json";
    ASSESS_POOL = "assess-pool" / 1 : "raglab assess pool --json";
    ASSESS_NEXT = "assess-next" / 1 : "raglab assess next --json";
    ASSESS_GRADE = "assess-grade" / 1 : "raglab assess grade --json";
    ASSESS_PROGRESS = "assess-progress" / 1 : "raglab assess progress --json";
    AGREEMENT = "agreement" / 1 : "raglab agree --json";
    CALIBRATION = "calibration" / 1 : "raglab calibrate --json";
    PREFERENCES = "preferences" / 1 : "raglab preferences --json";
    ROSTER = "roster" / 1 : "raglab study roster list --json";
    BENCH_RETRIEVAL = "bench-retrieval" / 1 : "raglab bench retrieval --json";
    BENCH_SYNTHETIC = "bench-synthetic" / 1 : "raglab bench retrieval --synthetic N --json";
    BENCH_GENERATE = "bench-generate" / 1 : "raglab bench generate --json";
    BENCH_EMBED = "bench-embed" / 1 : "raglab bench embed --json";
}

/// A document: `schema` first, then the value's own fields.
#[derive(Serialize)]
struct Document<'a, T: Serialize + ?Sized> {
    schema: String,
    #[serde(flatten)]
    value: &'a T,
}

/// A list: `schema`, then the list in `items`.
#[derive(Serialize)]
struct List<'a, T: Serialize> {
    schema: String,
    items: &'a [T],
}

/// Print `value`, which serialises to an object, as a `schema` document.
pub fn print<T: Serialize + ?Sized>(schema: Schema, value: &T) -> Result<()> {
    super::print_json(&Document {
        schema: schema.id(),
        value,
    })
}

/// Print `items` as a `schema` document with the list in `items`.
pub fn print_list<T: Serialize>(schema: Schema, items: &[T]) -> Result<()> {
    super::print_json(&List {
        schema: schema.id(),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_documents_start_with_their_schema() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "two shapes share a name");
        #[derive(Serialize)]
        struct Thing {
            b: u32,
            a: &'static str,
        }
        let doc = Document {
            schema: SEARCH.id(),
            value: &Thing { b: 1, a: "x" },
        };
        assert_eq!(
            serde_json::to_string(&doc).expect("serialise"),
            r#"{"schema":"raglab.search/1","b":1,"a":"x"}"#
        );
        let list = List {
            schema: CORPUS_LIST.id(),
            items: &[1, 2],
        };
        assert_eq!(
            serde_json::to_string(&list).expect("serialise"),
            r#"{"schema":"raglab.corpus-list/1","items":[1,2]}"#
        );
    }
}
