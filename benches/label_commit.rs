//! What signing costs a label commit: the time from the call to the committed (and
//! synced) lance version of one label, through the Annotate pane's own save
//! (`save_label`: load the key, sign, validate, commit), against the same commit
//! unsigned (`save_labels`), alternating the two on one local workspace. Then what
//! verifying costs a read: the whole label log read as it counts (every signature
//! checked against the roster) against the plain read, first with every signature
//! checked in full and then again as a reload (the TUI reloads after every commit),
//! when the process's cache of verified signatures answers; on the 200-row log and
//! on a 5,100-row one.
//!
//! The commit time grows with the dataset's file count (one fragment per commit), so
//! the two kinds alternate over the same first 200 commits; the signing step alone (the
//! key file read, the canonical bytes, the ed25519 signature) is timed apart.
//!
//! `cargo bench --bench label_commit` (prints p50/p95 in ms of 100 commits each).

use std::time::Instant;

use raglab::config::{Config, Paths};
use raglab::core::annotation::{Item, Label};
use raglab::core::stats::timing_quantile as pct;
use raglab::service::Context;
use raglab::service::base::default_rubric;
use raglab::service::study;

/// The label log read plain, then as it counts twice: first with every signature not
/// yet seen by this process checked in full, then again (a reload: every signature
/// answered from the cache of verified ones).
async fn reads(ctx: &Context, refused: &str) -> anyhow::Result<()> {
    let fresh = || raglab::store::keys::VERIFIED.fresh_checks();
    let t = Instant::now();
    let raw: Vec<Label> = study::labels_table(&ctx.workspace).read_all().await?;
    let read = t.elapsed().as_secs_f64() * 1e3;
    let mut line = Vec::new();
    for _ in 0..2 {
        let before = fresh();
        let t = Instant::now();
        let log = study::trusted_log(ctx).await?;
        line.push(format!(
            "{:.1} ms ({} signatures checked in full; {} counted, {} refused: {refused})",
            t.elapsed().as_secs_f64() * 1e3,
            fresh() - before,
            log.labels.len(),
            log.refused.len()
        ));
    }
    println!(
        "read {} labels: {read:.1} ms plain; as they count, first read {}; reload {}",
        raw.len(),
        line[0],
        line[1]
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    const N: usize = 100;
    let dir = tempfile::tempdir()?;
    let paths = Paths {
        config_dir: dir.path().join("config"),
        data_dir: dir.path().join("data"),
    };
    let ctx = Context::with(paths, Config::default(), &dir.path().join("ws"))?;
    let rt = raglab::service::base::runtime()?;
    let rubric = default_rubric();
    let items: Vec<Item> = (0..20)
        .map(|i| Item {
            item_id: format!("i{i}"),
            set: "bench".into(),
            question: format!("Q{i}?"),
            reference_answer: String::new(),
            target_chunk: String::new(),
            answer: format!("A{i}"),
            answer_id: None,
            ..Default::default()
        })
        .collect();
    let (mut signed, mut plain) = (Vec::new(), Vec::new());
    rt.block_on(async {
        study::items_table(&ctx.workspace).append(&items).await?;
        let me = study::my_key(&ctx)?.public_hex();
        study::roster_add(&ctx, "ann", &me, true).await?;
        for n in 0..2 * N {
            let c = &rubric.criteria[n % rubric.criteria.len()];
            let label = Label::new(
                &items[n % items.len()].item_id,
                "ann",
                &c.key,
                Some(rubric.labels_of(c)[n % 2].as_str()),
                Some("a note"),
                &rubric.version,
            );
            if n % 2 == 0 {
                signed.push(study::save_label(&ctx, &rubric, &items, &label).await?);
            } else {
                let t = Instant::now();
                study::save_labels(&ctx.workspace, &rubric, &items, &[label]).await?;
                plain.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let mut sign_us = Vec::new();
        let bound = study::binding(&ctx.workspace).await?;
        for _ in 0..1000 {
            let mut l = Label::new("i0", "ann", "k", Some("pass"), Some("a note"), "1");
            let t = Instant::now();
            let key = study::my_key(&ctx)?;
            study::sign_label(&mut l, &key, &bound);
            sign_us.push(t.elapsed().as_secs_f64() * 1e6);
        }
        println!(
            "signing one label (key file read + canonical bytes + ed25519): p50 {:.0} us, p95 {:.0} us",
            pct(&sign_us, 0.5),
            pct(&sign_us, 0.95)
        );
        reads(&ctx, "the unsigned half").await?;
        // A bigger study: 4,900 more signed labels (49 commits of 100), read as the
        // TUI reads it after every commit.
        for b in 0..49 {
            let batch: Vec<Label> = (0..100)
                .map(|n| {
                    let c = &rubric.criteria[n % rubric.criteria.len()];
                    Label::new(
                        &items[(b + n) % items.len()].item_id,
                        "ann",
                        &c.key,
                        Some(rubric.labels_of(c)[n % 2].as_str()),
                        Some("a note"),
                        &rubric.version,
                    )
                })
                .collect();
            study::save_label_batch(&ctx, &rubric, &items, &batch).await?;
        }
        reads(&ctx, "the first 100 unsigned").await?;
        anyhow::Ok(())
    })?;
    println!(
        "label commit (call to synced commit), {N} each: signed p50 {:.2} ms p95 {:.2} ms; unsigned p50 {:.2} ms p95 {:.2} ms",
        pct(&signed, 0.5),
        pct(&signed, 0.95),
        pct(&plain, 0.5),
        pct(&plain, 0.95)
    );
    Ok(())
}
