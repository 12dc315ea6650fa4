//! Time per item: the active time a reviewer spends on each item, and the lead's
//! summary of it per reviewer.
//!
//! - Time flows to the item on screen. Each key the reviewer presses in the Annotate
//!   pane ends an interval that began at their previous key; the interval counts for
//!   the item that was on screen during it, unless it is longer than the idle gap
//!   ([`IDLE_GAP_MS`], 120 s), which is left out whole (a coffee break, a meeting: not
//!   time on the item). So an item's active time is the sum of the gaps between
//!   successive keys while it was shown, each at most the idle gap.
//! - Each label stores its writer's active time on the item so far (`active_ms`,
//!   cumulative; a later session starts from the largest stored value), so an item's
//!   time for a reviewer is the largest `active_ms` among their labels of it.
//! - Per reviewer: the median and 90th percentile of their items' times (numpy's
//!   linear interpolation, [`crate::core::stats::quantile`]) and items per hour =
//!   items / (sum of their items' active hours).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::annotation::Label;

/// Gaps between keys longer than this (ms) are idle and not counted.
pub const IDLE_GAP_MS: u64 = 120_000;

/// The active-time clock of one reviewer's session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActiveClock {
    /// The previous key: (its time in ms, the item on screen then).
    last: Option<(u64, Option<String>)>,
    /// item -> active ms so far.
    totals: BTreeMap<String, u64>,
    idle_gap_ms: u64,
}

impl ActiveClock {
    pub fn new(idle_gap_ms: u64) -> Self {
        Self {
            idle_gap_ms,
            ..Self::default()
        }
    }

    /// Start `item` from `ms` already spent (a stored `active_ms`), if more.
    pub fn resume(&mut self, item: &str, ms: u64) {
        let t = self.totals.entry(item.to_string()).or_default();
        *t = (*t).max(ms);
    }

    /// A key pressed at `now_ms` while `on_screen` was shown: the interval since the
    /// previous key counts for the item shown during it, unless it was idle.
    pub fn key(&mut self, now_ms: u64, on_screen: Option<&str>) {
        if let Some((then, Some(item))) = &self.last {
            let gap = now_ms.saturating_sub(*then);
            if gap <= self.idle_gap_ms {
                *self.totals.entry(item.clone()).or_default() += gap;
            }
        }
        self.last = Some((now_ms, on_screen.map(str::to_string)));
    }

    /// The item on screen changed by the key just counted (a move): the next
    /// interval goes to `on_screen`.
    pub fn shown(&mut self, on_screen: Option<&str>) {
        if let Some((_, item)) = &mut self.last {
            *item = on_screen.map(str::to_string);
        }
    }

    /// Active ms on `item` so far.
    pub fn active_ms(&self, item: &str) -> u64 {
        self.totals.get(item).copied().unwrap_or(0)
    }
}

/// One reviewer's time per item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewerTime {
    pub reviewer: String,
    /// Items with a stored active time.
    pub items: usize,
    pub median_s: Option<f64>,
    pub p90_s: Option<f64>,
    /// items / total active hours (undefined when no time was counted).
    pub items_per_hour: Option<f64>,
}

/// Each human reviewer's time per item from their labels: an item's time is the
/// largest `active_ms` among the reviewer's labels of it (labels without one, from
/// before time was kept or from imports, are not timed).
pub fn time_per_item(labels: &[&Label], reviewers: &[String]) -> Vec<ReviewerTime> {
    reviewers
        .iter()
        .map(|r| {
            let mut per_item: BTreeMap<&str, u64> = BTreeMap::new();
            for l in labels.iter().filter(|l| &l.reviewer == r) {
                if let Some(ms) = l.active_ms {
                    let t = per_item.entry(l.item_id.as_str()).or_default();
                    *t = (*t).max(ms);
                }
            }
            let secs: Vec<f64> = per_item.values().map(|&ms| ms as f64 / 1e3).collect();
            let total_h: f64 = secs.iter().sum::<f64>() / 3600.0;
            ReviewerTime {
                reviewer: r.clone(),
                items: secs.len(),
                median_s: crate::core::stats::quantile(&secs, 0.5),
                p90_s: crate::core::stats::quantile(&secs, 0.9),
                items_per_hour: (total_h > 0.0).then(|| secs.len() as f64 / total_h),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_gaps_are_left_out_and_time_goes_to_the_item_on_screen() {
        let mut c = ActiveClock::new(IDLE_GAP_MS);
        c.key(0, Some("a")); // opens a
        c.key(10_000, Some("a")); // 10 s on a
        c.key(15_000, Some("a")); // `]` at 15 s: 5 s more on a,
        c.shown(Some("b")); // and b is shown
        c.key(215_000, Some("b")); // 200 s idle on b: left out
        c.key(235_000, Some("b")); // 20 s on b
        c.key(355_000, None); // exactly the gap (120 s): counted
        c.key(400_000, Some("a")); // nothing was on screen: counts for no item
        assert_eq!(c.active_ms("a"), 15_000);
        assert_eq!(c.active_ms("b"), 140_000);
        c.resume("a", 60_000);
        c.key(401_000, Some("a"));
        assert_eq!(c.active_ms("a"), 61_000, "resumed from the stored 60 s");
    }

    fn label(item: &str, who: &str, ms: Option<u64>) -> Label {
        Label {
            label_id: format!("{who}-{item}-{ms:?}"),
            item_id: item.into(),
            reviewer: who.into(),
            criterion: "c".into(),
            label: Some("pass".into()),
            note: None,
            timestamp: String::new(),
            seq: 0,
            rubric_version: "1".into(),
            adjudicator: None,
            signer: None,
            signature: None,
            log_rows: None,
            active_ms: ms,
        }
    }

    #[test]
    fn median_p90_and_items_per_hour_by_hand() {
        let labels = [
            label("i1", "ann", Some(10_000)),
            label("i1", "ann", Some(30_000)), // i1: the largest, 30 s
            label("i2", "ann", Some(60_000)),
            label("i3", "ann", Some(90_000)),
            label("i4", "ann", Some(180_000)),
            label("i5", "ann", None), // imported: not timed
            label("i1", "bob", None),
        ];
        let refs: Vec<&Label> = labels.iter().collect();
        let t = time_per_item(&refs, &["ann".into(), "bob".into()]);
        // ann: 30, 60, 90, 180 s. Median (60 + 90) / 2 = 75; p90 at position
        // 0.9 * 3 = 2.7: 90 + 0.7 * (180 - 90) = 153; 4 items in 360 s = 40 per hour.
        assert_eq!(t[0].items, 4);
        assert_eq!(t[0].median_s, Some(75.0));
        assert!((t[0].p90_s.expect("p90") - 153.0).abs() < 1e-9);
        assert!((t[0].items_per_hour.expect("rate") - 40.0).abs() < 1e-9);
        assert_eq!(
            (t[1].items, t[1].median_s, t[1].items_per_hour),
            (0, None, None)
        );
    }
}
