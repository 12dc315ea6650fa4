//! Retrieval jobs: opening the retriever, a question's rank lists in two steps, and
//! the rerank stage's scores for the Query pane.

use std::sync::Arc;

use super::{Jobs, Msg, err_text};
use crate::service::Context;
use crate::service::retrieval::DEFAULT_DEPTH;
use crate::tui::app::App;

impl Jobs {
    /// Open the indexes and the embedding model (one thread for query embedding, so a
    /// core stays free for the UI).
    pub(super) fn open_retriever(&mut self) {
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            async move {
                let embed = crate::service::ModelChoice {
                    threads: Some(1),
                    ..Default::default()
                };
                crate::service::retrieval::open_for_browsing(&ctx, &embed)
                    .await
                    .map(|(r, off)| (Arc::new(r), off))
                    .map_err(err_text)
            },
            Msg::Retriever,
        );
    }

    /// The retriever opened (or why not): searches and generations can start.
    pub(super) fn on_retriever(
        &mut self,
        app: &mut App,
        r: Result<(Arc<crate::service::retrieval::Retriever>, Option<String>), String>,
    ) {
        if let Err(why) = &r {
            self.retriever_failed = Some(why.clone());
        }
        let dense_off = r.map(|(retriever, dense_off)| {
            self.retriever = Some(retriever);
            dense_off
        });
        app.query.on_retriever(dense_off);
    }

    /// Score `ids` for `question` with the configured rerank stage (`[rerank]`, or a
    /// rerank endpoint); the scores are cached in the workspace like any command's.
    pub(super) fn rerank(
        &mut self,
        app: &mut App,
        ticket: u64,
        question: String,
        ids: Vec<String>,
    ) {
        let Some(r) = &self.retriever else {
            app.query.on_reranked(ticket, Err(self.no_retriever()));
            return;
        };
        let (r, ctx) = (Arc::clone(r), Arc::clone(&self.ctx));
        self.spawn(
            async move {
                let setup = crate::service::retrieval::rerank::setup(&ctx, &Default::default())?;
                let choice = crate::service::ModelChoice {
                    model: None,
                    threads: Some(Context::tui_threads()),
                };
                let mut stage =
                    crate::service::retrieval::rerank::Reranker::open(&ctx, setup, &choice).await?;
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let scored = stage.scored_ids(&ctx, &r, &question, &refs).await?;
                anyhow::Ok((scored, stage.describe()))
            },
            move |r| Msg::Reranked {
                ticket,
                result: r.map_err(|e| format!("rerank: {e:#}")),
            },
        );
    }

    /// Rank a question on demand in two steps: the lists as deep as the pane cuts them
    /// (drawn at once), then the whole-corpus places of the chunks they hold and of the
    /// targets (exact wherever a chunk ranks, without ranking the whole corpus). A
    /// newer search aborts this task: a second step not yet started never starts (one
    /// already running on the blocking pool finishes, and its answer, of an old ticket,
    /// is dropped).
    pub(super) fn search(&mut self, app: &mut App, ticket: u64, text: String) {
        let Some(r) = &self.retriever else {
            app.query.on_result(ticket, Err(self.no_retriever()));
            return;
        };
        let (r, tx) = (Arc::clone(r), self.tx.clone());
        let depth = app.query.depth().max(DEFAULT_DEPTH).max(app.query.k());
        let targets = app.query.targets();
        self.searching.start(async move {
            let first = {
                let (r, text, targets) = (Arc::clone(&r), text.clone(), targets.clone());
                super::blocking(move || {
                    let (vector, embed_ms) = r.embed_for_places(&text)?;
                    let (lists, within, mut t) =
                        r.lists_on_demand(&text, vector.as_deref(), depth, &targets)?;
                    t.embed_ms = embed_ms;
                    anyhow::Ok((lists, within, t, vector))
                })
                .await
            };
            let (lists, vector) = match first {
                Ok((lists, within, t, vector)) => {
                    let shown = Box::new((lists.clone(), within, t));
                    let _ = tx.send(Msg::Search {
                        ticket,
                        result: Ok(shown),
                    });
                    (lists, vector)
                }
                Err(e) => {
                    let _ = tx.send(Msg::Search {
                        ticket,
                        result: Err(e),
                    });
                    return;
                }
            };
            let result = super::blocking(move || {
                r.places_on_demand(&text, vector.as_deref(), &lists, &targets)
            })
            .await
            .map(Box::new);
            let _ = tx.send(Msg::Placed { ticket, result });
        });
    }
}
