//! What the background jobs' results do to the panes. A job delivers its result; the
//! pane it belongs to applies it (`on_*`), and a result that touches several panes
//! (an answer is shown in the Generate pane and listed in the Query pane's answers)
//! is applied here, once, for all of them.

use super::app::App;
use super::panes::annotate::StudyTrust;
use crate::service::answer::{AnswerRecord, JudgementRecord};
use crate::service::study::Study;

impl App {
    /// A live answer finished (and was saved), or failed.
    pub fn on_answer_done(&mut self, ticket: u64, result: Result<AnswerRecord, String>) {
        if let Ok(a) = &result {
            self.query.push_stored(a.clone());
        }
        self.generate.on_done(ticket, result);
    }

    /// The study was read (start-up, or it changed on disk): items, labels and pairs
    /// for the Annotate pane, answers and judge labels for the Query pane, the count of
    /// stored answers for the Generate pane's replay; the roster, the viewer's key,
    /// the study's pinned rubric and the rows refused as unsigned or forged for the
    /// Annotate pane. Returns
    /// whether the reviewer's name was dropped (it is not this user's key's on the
    /// roster read): every view must then be drawn again, for no one.
    pub fn on_study_loaded(&mut self, study: Study) -> bool {
        if let Some(pinned) = &study.rubric {
            self.agreement.on_study_rubric(pinned.clone());
        }
        let trust = StudyTrust {
            roster: study.roster,
            my_key: study.my_key,
            refused: study.refused,
            rubric: study.rubric,
        };
        let dropped = self
            .annotate
            .on_study_read(trust, study.items, study.labels, study.schedule);
        self.generate.set_stored(study.answers.len());
        self.generate.set_grounded(&study.grounded);
        self.query
            .set_stored(study.answers, study.judgements, study.grounded);
        self.sync_blind();
        dropped
    }

    /// Reading the study failed: said in both panes that show it.
    pub fn on_study_error(&mut self, e: String) {
        tracing::error!("{e}");
        self.annotate.say(e.clone());
        self.agreement.say(e);
    }

    /// One group commit of labels finished: each label's ticket with its result. A
    /// label may have revealed an item, and with it the item's judge labels.
    pub fn on_labels_saved(
        &mut self,
        results: Vec<(u64, Result<f64, crate::service::study::SaveError>)>,
    ) {
        for (ticket, result) in results {
            self.annotate.on_saved(ticket, result);
        }
        self.sync_blind();
    }

    /// A live judgement finished (and was committed), or failed. Its labels show in
    /// the answers panel at once (the study's poll reloads them too) and in the status
    /// bar (the live line may cut them).
    pub fn on_judged(&mut self, ticket: u64, result: Result<JudgementRecord, String>) {
        if let Ok(j) = &result {
            self.query.push_judgement(j.clone());
        }
        self.generate.on_judged(ticket, result);
        self.message = self.generate.status().map(str::to_string);
    }

    /// An answer was sent to annotation from the Generate pane or the Query pane's
    /// answers panel (`Ok(false)`: it already was an item).
    pub fn on_item_added(&mut self, result: Result<bool, String>) {
        let said: String = match result {
            Ok(true) => "sent to annotation: an item of set `tui` (Annotate pane, 4)".into(),
            Ok(false) => "already an annotation item".into(),
            Err(e) => e,
        };
        self.generate.say(said.clone());
        self.message = Some(said);
    }

    /// A name was typed (or dropped): the lead's band follows it, the Query pane
    /// grades as it (and marks only its grades), the blind answers are set anew, and
    /// the Evaluation pane says it reads the pass rates again.
    pub fn on_identity_changed(&mut self) {
        let reviewer = self.annotate.reviewer().map(str::to_string);
        self.query.set_assessor(reviewer.clone());
        self.agreement.on_viewer_named(reviewer);
        if !self.annotate.is_lead() {
            self.agreement.not_the_lead();
        }
        self.sync_blind();
        self.evaluation.start_loading();
    }

    /// The Query pane's answers whose judge labels the viewer may not see, from the
    /// study as the Annotate pane holds it.
    pub fn sync_blind(&mut self) {
        let blind = self.annotate.blind_answers();
        self.generate.set_blind(blind.clone());
        self.query.set_blind(blind);
    }
}
