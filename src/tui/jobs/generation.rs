//! Generation jobs: a live answer streamed into the Generate pane and saved, a stored
//! answer judged live and committed, a stored answer replayed at its recorded pace.

use std::sync::Arc;

use super::{Jobs, Msg, err_text};
use crate::service::answer::GenerationConfig;
use crate::tui::app::App;
use crate::tui::effect::{GenJob, ReplayJob};

impl Jobs {
    /// The stored answers to `question_id`, newest first (the Generate pane's
    /// "previous answers").
    fn previous_answers(&self, question_id: &str) -> Vec<crate::service::answer::AnswerRecord> {
        self.answers
            .iter()
            .filter(|a| a.question_id == question_id)
            .rev()
            .cloned()
            .collect()
    }

    /// Generate an answer live. Not aborted when superseded: the pane raised this one's
    /// stop flag, so the model stops at its next token and the partial answer is still
    /// saved (its late messages carry an old ticket and are dropped by the pane).
    pub(super) fn generate(&mut self, app: &mut App, job: GenJob) {
        app.generate
            .set_previous(self.previous_answers(&job.question.id));
        let Some(r) = self.retriever.clone() else {
            app.generate.on_done(job.ticket, Err(self.no_retriever()));
            return;
        };
        let ctx = Arc::clone(&self.ctx);
        let kind = crate::core::template::TemplateKind::FreeForm;
        let template = match ctx.template(kind, job.template.as_deref()) {
            Ok(t) => t,
            Err(e) => return app.generate.on_done(job.ticket, Err(err_text(e))),
        };
        let template_label = template.label();
        let config = GenerationConfig {
            run: "tui".into(),
            template,
            ranking: job.ranking,
            k: job.k,
            sampling: job.sampling.clone(),
            abstain_below: ctx.config.retrieval.abstain_below,
            ..GenerationConfig::default()
        };
        let ticket = job.ticket;
        let (prompt_tx, read_tx, token_tx) = (self.tx.clone(), self.tx.clone(), self.tx.clone());
        let watch = crate::service::answer::LiveWatch {
            on_start: Box::new(move |prompt, backend| {
                let _ = prompt_tx.send(Msg::GenPrompt {
                    ticket,
                    prompt,
                    backend,
                    template: template_label,
                });
            }),
            on_prompt: Box::new(move |decoded, total| {
                let _ = read_tx.send(Msg::GenPromptRead {
                    ticket,
                    decoded,
                    total,
                });
            }),
            on_token: Box::new(move |piece: &str| {
                let _ = token_tx.send(Msg::GenToken {
                    ticket,
                    piece: piece.to_string(),
                });
            }),
        };
        let work = crate::service::answer::answer_live_and_save(
            ctx,
            self.generator.clone(),
            r,
            job.question,
            config,
            job.stop,
            watch,
        );
        self.spawn(work, move |r| Msg::GenDone {
            ticket,
            result: r.map(Box::new).map_err(err_text),
        });
    }

    /// Judge a stored answer live: the judge's tokens stream into the Generate pane,
    /// the judgement is committed like `raglab judge` commits it, and the study's
    /// reload (answers and judgements) shows it in the Query pane's answers panel.
    pub(super) fn judge(&mut self, app: &mut App, answer_id: String) {
        let ticket = app.generate.start_judging(&answer_id);
        let found = self
            .answers
            .iter()
            .find(|a| a.answer_id == answer_id)
            .cloned();
        let (Some(r), Some(answer)) = (self.retriever.clone(), found) else {
            app.generate.on_judged(
                ticket,
                Err("the answer or the retrieval state is not loaded yet".into()),
            );
            return;
        };
        let token_tx = self.tx.clone();
        let on_token = move |piece: &str| {
            let _ = token_tx.send(Msg::GenToken {
                ticket,
                piece: piece.to_string(),
            });
        };
        // On the study's rubric: the pinned one where the lead pinned it.
        let work = crate::service::study::judge_live(
            Arc::clone(&self.ctx),
            self.judge.clone(),
            r,
            answer,
            on_token,
        );
        self.spawn(work, move |r| Msg::Judged {
            ticket,
            result: r.map(Box::new).map_err(err_text),
        });
    }

    /// Pick the stored answer to replay and play it at its recorded pace
    /// ([`crate::tui::replay::play`]).
    pub(super) fn replay(&mut self, app: &mut App, job: ReplayJob) {
        let picked = crate::service::answer::pick_replay(
            &self.answers,
            job.question_id.as_deref(),
            job.after.as_deref(),
        )
        .cloned();
        if let Some(a) = &picked {
            app.generate
                .set_previous(self.previous_answers(&a.question_id));
        }
        app.generate.on_replay_start(job.ticket, picked.clone());
        let Some(a) = picked else { return };
        let ticket = job.ticket;
        let (tx, tx_done) = (self.tx.clone(), self.tx.clone());
        crate::tui::replay::play(
            a,
            job,
            move |piece| {
                let _ = tx.send(Msg::GenToken { ticket, piece });
            },
            move |stopped| {
                let _ = tx_done.send(Msg::ReplayDone { ticket, stopped });
            },
        );
    }
}
