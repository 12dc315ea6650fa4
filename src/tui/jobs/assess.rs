//! Relevance-assessment jobs: storing an assessor's grade of a chunk for a question
//! (the Query pane's `a`, and the assessment view's digits), with
//! [`assess::grade_chunk`], the function `raglab assess grade` calls; reading the head
//! of an assessor's queue for the assessment view, with [`assess::queue_head`] (what
//! `raglab assess next` shows, skipped pairs passed over).

use std::sync::Arc;

use super::{Jobs, Msg, err_text};
use crate::service::assess;
use crate::tui::effect::GradeJob;

impl Jobs {
    /// Store one grade, signed with this user's study key. Every grade is committed
    /// (none superseded); the answer, stored or refused, comes back with the job.
    pub(super) fn grade(&mut self, job: GradeJob) {
        let ctx = Arc::clone(&self.ctx);
        let asked = job.clone();
        self.spawn(
            async move {
                assess::grade_chunk(
                    &ctx,
                    &asked.assessor,
                    &asked.question_id,
                    &asked.chunk_id,
                    asked.grade,
                )
                .await
            },
            move |r| Msg::Graded(job, r.map_err(err_text)),
        );
    }

    /// Read the pair the assessment view shows next, and the assessor's counts. A
    /// read of lance datasets: kept to the end (a superseded answer is dropped by its
    /// ticket), never aborted.
    pub(super) fn assess_queue(
        &mut self,
        ticket: u64,
        assessor: String,
        skipped: Vec<(String, String)>,
    ) {
        let ctx = Arc::clone(&self.ctx);
        self.spawn(
            async move { assess::queue_head(&ctx, &assessor, &skipped).await },
            move |r| Msg::AssessQueue {
                ticket,
                result: r.map(Box::new).map_err(err_text),
            },
        );
    }
}
