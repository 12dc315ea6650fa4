//! Relevance-assessment jobs: storing an assessor's grade of a chunk for a question
//! (the Query pane's `a`), with [`assess::grade_chunk`], the function `raglab assess
//! grade` calls.

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
}
