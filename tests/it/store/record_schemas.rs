//! Each stored record's arrow schema is traced from its struct. Datasets written by
//! earlier releases used hand-written schemas; the traced ones must equal them column
//! for column (name, type, nullability), or those datasets could not be appended to.
//! The lists below are those earlier schemas, kept as the compatibility fixture.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use raglab::service::answer::{AnswerRecord, JudgementRecord};
use raglab::service::evaluate::McqaRecord;
use raglab::service::study::{Item, Label, PairItem};
use raglab::store::records::schema_of;

fn list(t: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", t, true)))
}

fn fixture(fields: &[(&str, DataType, bool)]) -> Schema {
    Schema::new(
        fields
            .iter()
            .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    )
}

use DataType::{Boolean, Float32, Float64, UInt32, UInt64, Utf8};

#[test]
fn answers_keep_their_schema() {
    let want = fixture(&[
        ("answer_id", Utf8, false),
        ("run", Utf8, false),
        ("question_id", Utf8, false),
        ("question", Utf8, false),
        ("reference_answer", Utf8, true),
        ("target_ids", list(Utf8), false),
        ("method", Utf8, false),
        ("alpha", Float64, false),
        ("k", UInt32, false),
        ("no_retrieval", Boolean, false),
        ("embed_model", Utf8, true),
        ("chunk_ids", list(Utf8), false),
        ("chunk_ranks", list(UInt32), false),
        ("dropped_chunk_ids", list(Utf8), false),
        ("target_rank", UInt32, true),
        ("prompt", Utf8, false),
        ("model_file", Utf8, false),
        ("model_sha256", Utf8, false),
        ("sampling", Utf8, false),
        ("seed", UInt32, false),
        ("prompt_tokens", UInt32, false),
        ("output_tokens", UInt32, false),
        ("input_words", UInt32, false),
        ("retrieval_ms", Float64, false),
        ("ttft_ms", Float64, false),
        ("prompt_tokens_per_s", Float64, false),
        ("gen_tokens_per_s", Float64, false),
        ("total_ms", Float64, false),
        ("stopped", Boolean, false),
        ("answer", Utf8, false),
        ("created_at", Utf8, false),
        ("best_cosine", Float64, true),
        ("abstained", Boolean, true),
        // Added later: nullable and last, so earlier datasets gain them as nulls.
        ("target_prompt_rank", UInt32, true),
        ("target_list_rank", UInt32, true),
        // Added with OpenAI-compatible endpoints: which server answered, and the model
        // it said it served.
        ("endpoint", Utf8, true),
        ("served_model", Utf8, true),
        // Added with corpus variants: which corpus retrieval ranked.
        ("corpus_variant", Utf8, true),
        // Added with `generate --repeats`: the repeat (its seed is `seed`).
        ("repeat", UInt32, true),
        // Added with pipelines: the prompt template and the context policy.
        ("template", Utf8, true),
        ("template_sha256", Utf8, true),
        ("context_policy", Utf8, true),
        ("chunk_order", Utf8, true),
        // Added with the rerank stage.
        ("rerank", Utf8, true),
        ("rerank_ms", Float64, true),
        // Added with signed answers.
        ("signer", Utf8, true),
        ("signature", Utf8, true),
        // Added with the runs matrix: the rerank stage's cost, cached pairs included.
        ("rerank_cost_ms", Float64, true),
        ("rerank_cached", UInt32, true),
    ]);
    assert_eq!(*schema_of::<AnswerRecord>(), want);
}

#[test]
fn judgements_keep_their_schema() {
    let want = fixture(&[
        ("answer_id", Utf8, false),
        ("run", Utf8, false),
        ("judge_model", Utf8, false),
        ("rubric", Utf8, false),
        ("rubric_version", Utf8, false),
        ("criteria", list(Utf8), false),
        ("labels", list(Utf8), false),
        ("rationale", Utf8, false),
        ("prompt", Utf8, false),
        ("raw_output", Utf8, false),
        ("created_at", Utf8, false),
        // Added with OpenAI-compatible endpoints (nullable, last).
        ("endpoint", Utf8, true),
        // Added with `judge --repeats`: the repeat and the judge's sampling.
        ("repeat", UInt32, true),
        ("seed", UInt32, true),
        ("temperature", Float32, true),
    ]);
    assert_eq!(*schema_of::<JudgementRecord>(), want);
}

#[test]
fn mcqa_answers_keep_their_schema() {
    let want = fixture(&[
        ("run", Utf8, false),
        ("question_id", Utf8, false),
        ("k", UInt32, false),
        ("topic", Utf8, false),
        ("method", Utf8, false),
        ("alpha", Float64, false),
        ("embed_model", Utf8, true),
        ("options", list(Utf8), false),
        ("answer", Utf8, false),
        ("predicted", Utf8, true),
        ("correct", Boolean, false),
        ("raw_output", Utf8, false),
        ("target_ids", list(Utf8), false),
        ("chunk_ids", list(Utf8), false),
        ("target_rank", UInt32, true),
        ("target_list_rank", UInt32, true),
        ("prompt", Utf8, false),
        ("prompt_tokens", UInt32, false),
        ("retrieval_ms", Float64, false),
        ("total_ms", Float64, false),
        ("model_file", Utf8, false),
        ("model_sha256", Utf8, false),
        ("created_at", Utf8, false),
        // Added with OpenAI-compatible endpoints: nullable and last, so earlier
        // datasets gain them as nulls.
        ("endpoint", Utf8, true),
        ("served_model", Utf8, true),
        // Added with pipelines: the prompt template and the context policy.
        ("template", Utf8, true),
        ("template_sha256", Utf8, true),
        ("context_policy", Utf8, true),
        ("chunk_order", Utf8, true),
        // Added with the rerank stage in eval mcqa.
        ("rerank", Utf8, true),
        ("rerank_ms", Float64, true),
    ]);
    assert_eq!(*schema_of::<McqaRecord>(), want);
}

#[test]
fn items_and_labels_keep_their_schema() {
    let items = fixture(&[
        ("item_id", Utf8, false),
        ("set", Utf8, false),
        ("question", Utf8, false),
        ("reference_answer", Utf8, false),
        ("target_chunk", Utf8, false),
        ("answer", Utf8, false),
        ("answer_id", Utf8, true),
        // Added with sealed items: the lead's key and seal.
        ("signer", Utf8, true),
        ("signature", Utf8, true),
    ]);
    assert_eq!(*schema_of::<Item>(), items);
    let labels = fixture(&[
        ("label_id", Utf8, false),
        ("item_id", Utf8, false),
        ("reviewer", Utf8, false),
        ("criterion", Utf8, false),
        ("label", Utf8, true),
        ("note", Utf8, true),
        ("timestamp", Utf8, false),
        ("seq", UInt64, false),
        ("rubric_version", Utf8, false),
        // Added with adjudication: nullable and last, so older label logs gain it as
        // nulls (schema evolution) and nothing stored is rewritten.
        ("adjudicator", Utf8, true),
        // Added with reviewer keys, nullable and last in the same way.
        ("signer", Utf8, true),
        ("signature", Utf8, true),
        // Added with study ids, nullable and last in the same way.
        ("log_rows", UInt64, true),
        // Added with time per item, nullable and last in the same way.
        ("active_ms", UInt64, true),
    ]);
    assert_eq!(*schema_of::<Label>(), labels);
}

/// A chunks dataset written by an earlier release (hand-built columns, `word_count`
/// and `ordinal` as `UInt32`) still loads, with every field intact.
#[tokio::test]
async fn chunks_written_with_the_earlier_schema_still_load() {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator, StringArray};
    use arrow_array::{UInt32Array, UInt64Array};
    use raglab::store::chunks::ChunkStore;
    use raglab::store::workspace::Workspace;

    let old = Arc::new(fixture(&[
        ("id", Utf8, false),
        ("doc_id", Utf8, false),
        ("title", Utf8, false),
        ("topic", Utf8, true),
        ("header_path", list(Utf8), false),
        ("text", Utf8, false),
        ("byte_start", UInt64, false),
        ("byte_end", UInt64, false),
        ("word_count", UInt32, false),
        ("ordinal", UInt32, false),
    ]));
    let mut paths = ListBuilder::new(StringBuilder::new());
    for p in [vec!["Rabies", "Prevention"], vec![]] {
        for h in p {
            paths.values().append_value(h);
        }
        paths.append(true);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["rabies#prevention", "flu#top"])),
        Arc::new(StringArray::from(vec!["rabies", "flu"])),
        Arc::new(StringArray::from(vec!["Rabies", "Flu"])),
        Arc::new(StringArray::from(vec![Some("rabies"), None])),
        Arc::new(paths.finish()),
        Arc::new(StringArray::from(vec![
            "Vaccinate pets.",
            "Get a flu shot.",
        ])),
        Arc::new(UInt64Array::from(vec![20, 0])),
        Arc::new(UInt64Array::from(vec![35, 15])),
        Arc::new(UInt32Array::from(vec![2, 4])),
        Arc::new(UInt32Array::from(vec![1, 0])),
    ];
    let batch = RecordBatch::try_new(old.clone(), columns).expect("batch");
    let dir = tempfile::tempdir().expect("tmp");
    let ws = Workspace::open(dir.path()).expect("workspace");
    let uri = ws.uri("chunks.lance");
    lance::Dataset::write(
        RecordBatchIterator::new(vec![Ok(batch)], old),
        uri.as_str(),
        None,
    )
    .await
    .expect("write the old dataset");
    let chunks = ChunkStore::new(&ws)
        .load_all()
        .await
        .expect("old chunks load");
    assert_eq!(chunks.len(), 2);
    let flu = &chunks[0];
    assert_eq!(
        (flu.id.as_str(), flu.topic.as_deref(), flu.header_path.len()),
        ("flu#top", None, 0)
    );
    assert_eq!((flu.byte_end, flu.word_count, flu.ordinal), (15, 4, 0));
    // Token counts came later: chunks written before them read back uncounted.
    assert_eq!((flu.token_count, flu.token_model.as_deref()), (None, None));
    let rabies = &chunks[1];
    assert_eq!(rabies.header_path, vec!["Rabies", "Prevention"]);
    assert_eq!(
        (rabies.byte_start, rabies.word_count, rabies.ordinal),
        (20, 2, 1)
    );
    assert_eq!(rabies.text, "Vaccinate pets.");
    // Counting tokens rewrites the old dataset with the new columns; nothing else moves.
    let store = ChunkStore::new(&ws);
    let counts = std::collections::HashMap::from([("flu#top".to_string(), 7)]);
    assert_eq!(
        store.set_token_counts(&counts, "m").await.expect("counted"),
        1
    );
    assert_eq!(
        store.set_token_counts(&counts, "m").await.expect("again"),
        0
    );
    let after = store.load_all().await.expect("reload");
    assert_eq!(
        (after[0].token_count, after[0].token_model.as_deref()),
        (Some(7), Some("m"))
    );
    assert_eq!(
        (after[1].token_count, after[1].token_model.as_deref()),
        (None, None)
    );
    let unchanged = |c: &raglab::core::chunk::Chunk| raglab::core::chunk::Chunk {
        token_count: None,
        token_model: None,
        ..c.clone()
    };
    assert_eq!(unchanged(&after[0]), *flu);
    assert_eq!(after[1], *rabies);
}

/// Assignments: the pair columns of earlier releases, then `more_reviewers` (k of n),
/// nullable and last.
#[test]
fn assignments_keep_their_schema() {
    let want = fixture(&[
        ("item_id", Utf8, false),
        ("first", Utf8, false),
        ("second", Utf8, false),
        ("assigned_at", Utf8, false),
        ("seq", UInt64, false),
        ("label_rows", UInt64, true),
        ("signer", Utf8, true),
        ("signature", Utf8, true),
        // Added with k-of-n assignments: nullable and last.
        ("more_reviewers", Utf8, true),
    ]);
    assert_eq!(*schema_of::<raglab::service::study::Assignment>(), want);
}

/// An assignments dataset written before k-of-n assignments (no `more_reviewers`)
/// still reads, its pairs intact, and takes a k-of-n row appended after it.
#[tokio::test]
async fn pair_assignments_written_before_k_of_n_still_read_and_append() {
    use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator, StringArray, UInt64Array};
    use raglab::service::study::{Assignment, assignments_table};
    use raglab::store::workspace::Workspace;

    let old = Arc::new(fixture(&[
        ("item_id", Utf8, false),
        ("first", Utf8, false),
        ("second", Utf8, false),
        ("assigned_at", Utf8, false),
        ("seq", UInt64, false),
        ("label_rows", UInt64, true),
        ("signer", Utf8, true),
        ("signature", Utf8, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["i0"])),
        Arc::new(StringArray::from(vec!["ann"])),
        Arc::new(StringArray::from(vec!["bob"])),
        Arc::new(StringArray::from(vec!["then"])),
        Arc::new(UInt64Array::from(vec![7])),
        Arc::new(UInt64Array::from(vec![Some(0)])),
        Arc::new(StringArray::from(vec![None::<&str>])),
        Arc::new(StringArray::from(vec![None::<&str>])),
    ];
    let batch = RecordBatch::try_new(old.clone(), columns).expect("batch");
    let dir = tempfile::tempdir().expect("tmp");
    let ws = Workspace::open(dir.path()).expect("workspace");
    let uri = ws.uri(raglab::service::study::ASSIGNMENTS);
    lance::Dataset::write(
        RecordBatchIterator::new(vec![Ok(batch)], old),
        uri.as_str(),
        None,
    )
    .await
    .expect("write the old dataset");
    let table = assignments_table(&ws);
    let read: Vec<Assignment> = table.read_all().await.expect("old assignments read");
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].reviewers(), vec!["ann", "bob"]);
    assert_eq!((read[0].seq, read[0].more_reviewers.as_deref()), (7, None));
    let three = Assignment {
        item_id: "i1".into(),
        more_reviewers: Some("carol".into()),
        ..read[0].clone()
    };
    table.append(&[three]).await.expect("a k-of-n row appends");
    let read: Vec<Assignment> = table.read_all().await.expect("read again");
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].reviewers(), vec!["ann", "bob"]);
    assert_eq!(read[1].reviewers(), vec!["ann", "bob", "carol"]);
}

/// A label log written before time per item (no `active_ms`) still reads, every
/// label intact, and takes a timed label appended after it.
#[tokio::test]
async fn labels_written_before_time_per_item_still_read_and_append() {
    use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator, StringArray, UInt64Array};
    use raglab::service::study::{Label, labels_table};
    use raglab::store::workspace::Workspace;

    let old = Arc::new(fixture(&[
        ("label_id", Utf8, false),
        ("item_id", Utf8, false),
        ("reviewer", Utf8, false),
        ("criterion", Utf8, false),
        ("label", Utf8, true),
        ("note", Utf8, true),
        ("timestamp", Utf8, false),
        ("seq", UInt64, false),
        ("rubric_version", Utf8, false),
        ("adjudicator", Utf8, true),
        ("signer", Utf8, true),
        ("signature", Utf8, true),
        ("log_rows", UInt64, true),
    ]));
    let text = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v])) };
    let none = || -> ArrayRef { Arc::new(StringArray::from(vec![None::<&str>])) };
    let columns: Vec<ArrayRef> = vec![
        text("l1"),
        text("i0"),
        text("ann"),
        text("clarity"),
        text("pass"),
        none(),
        text("then"),
        Arc::new(UInt64Array::from(vec![3])),
        text("1"),
        none(),
        none(),
        none(),
        Arc::new(UInt64Array::from(vec![None::<u64>])),
    ];
    let batch = RecordBatch::try_new(old.clone(), columns).expect("batch");
    let dir = tempfile::tempdir().expect("tmp");
    let ws = Workspace::open(dir.path()).expect("workspace");
    let uri = ws.uri(raglab::service::study::LABELS);
    lance::Dataset::write(
        RecordBatchIterator::new(vec![Ok(batch)], old),
        uri.as_str(),
        None,
    )
    .await
    .expect("write the old dataset");
    let table = labels_table(&ws);
    let read: Vec<Label> = table.read_all().await.expect("old labels read");
    assert_eq!(read.len(), 1);
    assert_eq!(
        (read[0].label.as_deref(), read[0].seq, read[0].active_ms),
        (Some("pass"), 3, None)
    );
    let timed = Label {
        label_id: "l2".into(),
        active_ms: Some(4_200),
        ..read[0].clone()
    };
    table.append(&[timed]).await.expect("a timed label appends");
    let read: Vec<Label> = table.read_all().await.expect("read again");
    let ms: Vec<Option<u64>> = read.iter().map(|l| l.active_ms).collect();
    assert_eq!(ms, vec![None, Some(4_200)]);
}

/// The order record of a pairwise study's items: which run each shows first.
#[test]
fn pair_items_keep_their_schema() {
    let want = fixture(&[
        ("item_id", Utf8, false),
        ("question_id", Utf8, false),
        ("first_run", Utf8, false),
        ("first_answer_id", Utf8, false),
        ("second_run", Utf8, false),
        ("second_answer_id", Utf8, false),
        ("seed", UInt64, false),
        // Added with signed pair orders: nullable and last.
        ("signer", Utf8, true),
        ("signature", Utf8, true),
    ]);
    assert_eq!(*schema_of::<PairItem>(), want);
}

/// The grade log of relevance assessment (`grades.lance`), as first written: a column
/// added later must be nullable and last.
#[test]
fn grades_keep_their_schema() {
    let want = fixture(&[
        ("question_id", Utf8, false),
        ("chunk_id", Utf8, false),
        ("assessor", Utf8, false),
        ("grade", UInt32, false),
        ("graded_at", Utf8, false),
        ("seq", UInt64, false),
        ("label_rows", UInt64, false),
        ("signer", Utf8, true),
        ("signature", Utf8, true),
    ]);
    assert_eq!(*schema_of::<raglab::core::assessment::Grade>(), want);
}

/// The assessment pool (`assess_pool.lance`), as first written.
#[test]
fn assessment_pools_keep_their_schema() {
    let want = fixture(&[
        ("pool", UInt64, false),
        ("question_id", Utf8, false),
        ("question", Utf8, false),
        ("targets", list(Utf8), false),
        ("members", list(Utf8), false),
        ("depth", UInt32, false),
        ("runs", list(Utf8), false),
        ("seed", UInt64, false),
        ("made_at", Utf8, false),
    ]);
    assert_eq!(
        *schema_of::<raglab::core::assessment::PooledQuestion>(),
        want
    );
}
