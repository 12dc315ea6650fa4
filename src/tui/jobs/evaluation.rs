//! Evaluation jobs: the last evaluations for the Evaluation pane, two answer runs
//! compared, the evaluation-set candidates and an analyst's decision on one.

use std::sync::Arc;

use super::{Jobs, Msg};
use crate::tui::app::App;

impl Jobs {
    /// Read the last evaluations (report files, judge pass rates) for the pane, for the
    /// viewer. The reports' fingerprint is taken before reading: a report written during
    /// the read changes it again, so the next check reloads.
    pub(super) fn load_evaluation(&mut self) {
        let (ctx, viewer) = (Arc::clone(&self.ctx), self.viewer.clone());
        self.spawn(
            async move {
                let fp = crate::service::evaluate::fingerprint(&ctx);
                let o = match crate::service::study::sight(&ctx, &viewer).await {
                    Ok(sight) => crate::service::evaluate::overview(&ctx, &sight).await,
                    Err(e) => crate::service::evaluate::EvalOverview {
                        problems: vec![format!("cannot read the study: {e:#}")],
                        ..Default::default()
                    },
                };
                (o, fp)
            },
            |(o, fp)| Msg::Evaluation(Box::new(o), fp),
        );
    }

    /// The evaluation reports' fingerprint, compared with what the last load read
    /// (nothing to compare with while the first load is still reading): a new one
    /// means a new evaluation, read again.
    pub(super) fn on_evaluation_fingerprint(&mut self, app: &mut App, fp: Vec<Option<String>>) {
        if self.eval_seen.as_ref().is_some_and(|seen| *seen != fp) {
            self.eval_seen = Some(fp);
            app.evaluation.start_loading();
            self.load_evaluation();
        }
    }

    /// Compare two answer runs for the viewer with the function `raglab report answers
    /// --compare` calls, so the view and the command show the same numbers.
    pub(super) fn compare_answer_runs(&mut self, ticket: u64, a: String, b: String) {
        let (ctx, viewer) = (Arc::clone(&self.ctx), self.viewer.clone());
        let what = format!("cannot compare `{a}` with `{b}`");
        self.spawn(
            async move {
                let sight = crate::service::study::sight(&ctx, &viewer).await?;
                crate::service::evaluate::compare_answer_runs(&ctx, &a, &b, &sight).await
            },
            move |r| Msg::AnswerRunsCompared {
                ticket,
                result: r.map(Box::new).map_err(|e| format!("{what}: {e:#}")),
            },
        );
    }

    /// Read the evaluation-set candidates with their critiques, decisions and the
    /// default filter's verdicts.
    pub(super) fn load_evalset(&mut self) {
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            async move {
                crate::service::evalset::review(&ctx, Default::default(), None)
                    .await
                    .map(|(views, _)| views)
            },
            |r| Msg::Evalset(r.map_err(|e| format!("cannot read the candidates: {e:#}"))),
        );
    }

    /// Build the runs matrix for the viewer with the function `raglab report runs`
    /// calls, around `quality` and the pinned `baseline`.
    pub(super) fn load_runs(&mut self, quality: Option<String>, baseline: Option<String>) {
        let (ctx, viewer) = (Arc::clone(&self.ctx), self.viewer.clone());
        self.spawn(
            async move {
                let sight = crate::service::study::sight(&ctx, &viewer).await?;
                let req = crate::service::report::RunsRequest {
                    quality,
                    baseline,
                    clusters: None,
                };
                crate::service::report::runs_matrix(&ctx, &req, &sight).await
            },
            |r| Msg::Runs(r.map(Box::new).map_err(|e| format!("{e:#}"))),
        );
    }

    /// Store an analyst's decision on a candidate (None: clear it), signed with the
    /// reviewer's name when one was given.
    pub(super) fn decide(
        &mut self,
        app: &App,
        candidate_id: String,
        decision: Option<crate::core::evalset::Decision>,
    ) {
        let ctx = Arc::clone(&self.ctx);
        let reviewer = app.annotate.reviewer().map(str::to_string);
        let said = format!(
            "saved: {} {candidate_id}",
            decision.map_or("cleared", |d| match d {
                crate::core::evalset::Decision::Accept => "accepted",
                crate::core::evalset::Decision::Reject => "rejected",
            })
        );
        self.spawn(
            async move {
                crate::service::evalset::decide(&ctx, &candidate_id, decision, reviewer.as_deref())
                    .await
            },
            move |r| Msg::Decided(r.map(|()| said).map_err(|e| format!("NOT saved: {e:#}"))),
        );
    }
}
