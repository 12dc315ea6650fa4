//! Study jobs: reading the study, committing labels (grouped), the agreement and the
//! lead's preference ranking, exporting the agreement, sending an answer to
//! annotation, and noticing other processes' commits.

use std::sync::Arc;

use super::{Jobs, Msg, err_text};
use crate::core::agreement::Bootstrap;
use crate::service::study::{self, Study};
use crate::tui::app::App;

impl Jobs {
    pub(super) fn load_annotation(&mut self) {
        let ctx = Arc::clone(&self.ctx);
        self.spawn(async move { study::load_study(&ctx).await }, |r| {
            Msg::Annotation(
                r.map(Box::new)
                    .map_err(|e| format!("cannot read the annotation study: {e:#}")),
            )
        });
    }

    /// The study was read: the panes take it, and the views drawn from it are drawn
    /// again (for the new viewer, when reading it settled who is looking).
    pub(super) fn on_study(&mut self, app: &mut App, study: Study) {
        self.answers.clone_from(&study.answers);
        if app.on_study_loaded(study) {
            self.identity_changed(app);
        } else {
            self.refresh_agreement(app);
        }
    }

    /// Every label is committed (saves are never superseded). While a commit is in
    /// flight, new labels wait and go together in the next one (group commit: a burst
    /// of keys is committed together, not queued one commit after another).
    pub(super) fn save_label(
        &mut self,
        app: &App,
        ticket: u64,
        label: crate::core::annotation::Label,
    ) {
        self.label_queue.push((ticket, label));
        if !self.label_saving {
            self.flush_labels(app);
        }
    }

    /// Commit every queued label with the study's one rule for a batch
    /// ([`study::commit_labels`]).
    fn flush_labels(&mut self, app: &App) {
        if self.label_queue.is_empty() {
            return;
        }
        self.label_saving = true;
        let batch = std::mem::take(&mut self.label_queue);
        let ctx = Arc::clone(&self.ctx);
        let (rubric, items) = (app.annotate.rubric().clone(), app.annotate.items().to_vec());
        let tickets: Vec<u64> = batch.iter().map(|(t, _)| *t).collect();
        let labels: Vec<_> = batch.into_iter().map(|(_, l)| l).collect();
        self.spawn(
            async move { study::commit_labels(&ctx, &rubric, &items, &labels).await },
            move |results| Msg::Saved(tickets.into_iter().zip(results).collect()),
        );
    }

    /// A commit finished: the pane is told, and the labels that waited go next.
    pub(super) fn on_saved(
        &mut self,
        app: &mut App,
        results: Vec<(u64, Result<f64, study::SaveError>)>,
    ) {
        app.on_labels_saved(results);
        self.label_saving = false;
        self.flush_labels(app);
    }

    /// A name was typed: every view drawn for no one is drawn again for the viewer
    /// (the Agreement pane recomputed, the judge pass rates read again, the Query
    /// pane's blind answers set anew).
    pub(super) fn identity_changed(&mut self, app: &mut App) {
        self.viewer = app.annotate.viewer();
        app.on_identity_changed();
        self.refresh_agreement(app);
        self.load_evaluation();
    }

    /// Recompute the agreement. A newer request does not abort an older one (it reads
    /// lance datasets); the older result arrives with an old ticket and is dropped.
    pub(super) fn refresh_agreement(&mut self, app: &mut App) {
        let viewer = app.annotate.viewer();
        let lead = viewer == crate::core::blinding::Viewer::Lead;
        let (ticket, ask) = app.agreement.start_refresh();
        let ctx = Arc::clone(&self.ctx);
        let rubric = app.annotate.rubric().clone();
        let req = study::AgreementRequest {
            reviewers: ask.pair_choice,
            raters: None,
            boot: Bootstrap::default(),
            pair: ask.pair,
            viewer,
            version: ask.version,
            judge_model: ask.judge_model,
            gold: Vec::new(),
            window: study::DRIFT_WINDOW,
        };
        self.spawn(
            async move { study::agreement_with(&ctx, &rubric, req).await },
            move |r| Msg::Agreement {
                ticket,
                result: r.map(Box::new).map_err(err_text),
            },
        );
        if lead {
            self.refresh_preferences(app, ticket);
        }
    }

    /// Rank a pairwise study's runs (the lead's band of the Agreement pane), under
    /// the same ticket as the agreement it goes with.
    fn refresh_preferences(&mut self, app: &App, ticket: u64) {
        let ctx = Arc::clone(&self.ctx);
        let rubric = app.annotate.rubric().clone();
        self.spawn(
            async move {
                if !study::is_pairwise(&ctx.workspace).await? {
                    return anyhow::Ok(None);
                }
                let lead = crate::core::blinding::Viewer::Lead;
                let p = study::preferences(&ctx, &rubric, &lead, Bootstrap::default()).await?;
                Ok(Some(Box::new(p)))
            },
            move |r| Msg::Preferences {
                ticket,
                result: r.map_err(err_text),
            },
        );
    }

    /// Write the agreement on screen where `export_to_workspace` places it.
    pub(super) fn export_agreement(&mut self, app: &App) {
        let Some(a) = app.agreement.shown().cloned() else {
            return;
        };
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            super::blocking(move || study::export_to_workspace(&ctx, &a)),
            |r| {
                Msg::Exported(
                    r.map(|(csv, md)| format!("exported {} and {}", csv.display(), md.display()))
                        .map_err(|e| format!("export failed: {e}")),
                )
            },
        );
    }

    pub(super) fn add_item(&mut self, answer_id: String) {
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            async move { study::add_answer_item(&ctx, &answer_id).await },
            |r| Msg::ItemAdded(r.map_err(|e| format!("not sent to annotation: {e:#}"))),
        );
    }

    /// Check (at most every [`super::STUDY_POLL`]) whether another process committed
    /// labels, items, assignments, judgements or answers; a change reloads the study
    /// and recomputes the agreement. Reads directory listings only, on a blocking
    /// thread.
    pub fn poll_study(&mut self) {
        if self.polling || self.last_poll.elapsed() < super::STUDY_POLL {
            return;
        }
        self.polling = true;
        self.last_poll = std::time::Instant::now();
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            super::blocking(move || {
                anyhow::Ok((
                    study::study_fingerprint(&ctx),
                    crate::service::evaluate::fingerprint(&ctx),
                ))
            }),
            |r| {
                let (study, evaluation) = r.unwrap_or_default();
                Msg::Fingerprints { study, evaluation }
            },
        );
    }

    /// The study's fingerprint came back: the first check also reloads (a commit
    /// between the start-up read and this check would otherwise wait for the next).
    pub(super) fn on_study_fingerprint(&mut self, fp: Vec<Option<String>>) {
        self.polling = false;
        if self.study_seen.as_ref() != Some(&fp) {
            self.study_seen = Some(fp);
            self.load_annotation();
        }
    }
}
