//! Blinding of a study, derived from the append-only label log.
//!
//! An item is *submitted* by a reviewer the first time every rubric criterion has a
//! label from them; it is *revealed* when every reviewer it is assigned to (a pair,
//! or k of n) has submitted it. Reveal goes by the item's assignment in force at
//! that moment when there is one, else by the first two reviewers to submit it.
//! Before reveal a reviewer sees only their own labels; after it, once they have
//! submitted it themselves, everyone's labels and notes and the judge's. Any number
//! of reviewers may label an item: one outside its assignment sees the others'
//! labels once the item is revealed and they have submitted it too, so their labels
//! until then are blind (given before reveal, for them).
//!
//! Order is the log's own: the position of each label in the label dataset (commit
//! order), never a clock a writer sets. A label's `seq` and `timestamp` are the
//! writer's wall clock, kept for people to read; a machine whose clock is an hour
//! behind writes a label that still lands after the reveal it follows. So whether a
//! label was given *after reveal* is a fact of the log itself, and later appends
//! (a re-assignment included) never move a reveal that has happened.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::core::annotation::{FINAL, Item, JUDGE, Label};
use crate::core::answer::JudgementRecord;

/// Who is looking. Every view of a study (panes, commands, exports) is drawn for one
/// viewer and shows only what [`Blinding::may_see`] allows that viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// No identity yet (a TUI started without a reviewer name, a command without
    /// `--reviewer`): sees no one's labels or notes, and no judge label of a study
    /// item, since the person may be a reviewer who has not submitted.
    Nobody,
    /// A named reviewer: their own labels, and everyone's on items revealed to them.
    Reviewer(String),
    /// The study lead: everything.
    Lead,
}

impl Viewer {
    /// The viewer of a session: the lead when `lead`, else the named reviewer, else
    /// no one.
    pub fn of(reviewer: Option<&str>, lead: bool) -> Self {
        match (reviewer, lead) {
            (_, true) => Self::Lead,
            (Some(me), false) => Self::Reviewer(me.to_string()),
            (None, false) => Self::Nobody,
        }
    }

    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Reviewer(r) => Some(r),
            Self::Lead | Self::Nobody => None,
        }
    }
}

/// Which version of each reviewer's label agreement uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelVersion {
    /// The last label given before the item was revealed (the default): what the
    /// reviewer decided blind.
    #[default]
    BeforeReveal,
    /// The newest label, changes after reveal included.
    Latest,
}

/// The study's rules in force by position of the label log: which reviewers review
/// which item, and, once the lead has pinned the study's rubric, which criteria make
/// a submission.
///
/// An assignment made when the log held `n` labels is in force for the labels at
/// positions `n` and later, so it never reaches back over labels given before it.
///
/// Pinned criteria ([`Schedule::require`]) are the study's own and win over the
/// criteria a caller passes to [`Blinding::replay`] (a viewer's local rubric), so no
/// local rubric can change who has submitted. The first pin is in force from the
/// start of the log: labels given before the lead pinned were given under whatever
/// rubric each reviewer had, and the study's rubric decides for them too. Each later
/// pin is in force from the position at which it was made, like an assignment: an
/// item submitted or revealed before it stays so, and a label given after that reveal
/// stays a label given after reveal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// item -> (first position in force, its reviewers: two or more), in the order
    /// the assignments were made.
    by_item: HashMap<String, Vec<(usize, Vec<String>)>>,
    /// (first position in force, the criteria keys) of each pinned rubric, in the
    /// order they were pinned.
    criteria: Vec<(usize, Vec<String>)>,
}

/// Two reviewers.
type Pair = (String, String);

/// The first two of `reviewers`.
fn pair_of(reviewers: &[String]) -> Option<Pair> {
    Some((reviewers.first()?.clone(), reviewers.get(1)?.clone()))
}

impl Schedule {
    /// Every pair in force from the start of the log.
    pub fn from_pairs(pairs: &HashMap<String, (String, String)>) -> Self {
        let mut s = Self::default();
        for (item, pair) in pairs {
            s.assign(item, 0, pair.clone());
        }
        s
    }

    /// Add a pair's assignment made when the log held `from` labels (call in the
    /// order the assignments were made).
    pub fn assign(&mut self, item: &str, from: usize, pair: (String, String)) {
        self.assign_all(item, from, vec![pair.0, pair.1]);
    }

    /// Add an assignment of `reviewers` (two or more; k of n) made when the log held
    /// `from` labels. An item's assignments are kept in the order of their positions
    /// (one added with an earlier position than the item's newest goes before it):
    /// the label log only grows, so a genuine re-assignment never stands before the
    /// assignment it replaces, and a row that claims to (a copy of an old assignment
    /// appended after a re-assignment) cannot take its place.
    pub fn assign_all(&mut self, item: &str, from: usize, reviewers: Vec<String>) {
        let v = self.by_item.entry(item.to_string()).or_default();
        let at = v.partition_point(|(f, _)| *f <= from);
        v.insert(at, (from, reviewers));
    }

    /// The reviewers in force for the label at log position `pos`: the assignment
    /// made at the latest position at or before it (the later one added, of two at
    /// one position).
    pub fn in_force(&self, item: &str, pos: usize) -> Option<&[String]> {
        self.by_item
            .get(item)?
            .iter()
            .rev()
            .find(|(from, _)| *from <= pos)
            .map(|(_, r)| r.as_slice())
    }

    /// Require `criteria` (the keys of a rubric the lead pinned when the log held
    /// `from` labels) for a submission (call in the order the pins were made).
    pub fn require(&mut self, from: usize, criteria: Vec<String>) {
        self.criteria.push((from, criteria));
    }

    /// Whether the criteria are pinned (a caller's criteria are then ignored).
    pub fn pinned(&self) -> bool {
        !self.criteria.is_empty()
    }

    /// The pinned criteria in force at log position `pos`: the newest pin made at or
    /// before it, the first pin before any was made; none when nothing is pinned.
    pub fn criteria_at(&self, pos: usize) -> Option<&[String]> {
        self.criteria
            .iter()
            .rev()
            .find(|(from, _)| *from <= pos)
            .or_else(|| self.criteria.first())
            .map(|(_, c)| c.as_slice())
    }

    /// item -> the first two reviewers of its newest assignment (the pair that
    /// Table 6 compares).
    pub fn newest(&self) -> HashMap<String, (String, String)> {
        self.by_item
            .iter()
            .filter_map(|(item, v)| Some((item.clone(), pair_of(&v.last()?.1)?)))
            .collect()
    }

    /// item -> every reviewer of its newest assignment (whose queues hold it).
    pub fn newest_reviewers(&self) -> HashMap<String, Vec<String>> {
        self.by_item
            .iter()
            .filter_map(|(item, v)| Some((item.clone(), v.last()?.1.clone())))
            .collect()
    }

    /// Every change of the rules after the start, by position: each assignment
    /// (with its item) and each pin after the first (with no item), a pin before an
    /// assignment at one position.
    fn boundaries(&self) -> Vec<(usize, Option<&str>)> {
        let mut v: Vec<(usize, Option<&str>)> = self
            .by_item
            .iter()
            .flat_map(|(item, a)| a.iter().map(move |(from, _)| (*from, Some(item.as_str()))))
            .chain(self.criteria.iter().skip(1).map(|(from, _)| (*from, None)))
            .collect();
        v.sort_unstable();
        v
    }
}

impl From<&HashMap<String, (String, String)>> for Schedule {
    fn from(pairs: &HashMap<String, (String, String)>) -> Self {
        Self::from_pairs(pairs)
    }
}

/// Reveal moments and submissions of every item, from the label log.
#[derive(Debug, Clone, Default)]
pub struct Blinding {
    /// item -> reviewer -> log position of their first complete submission.
    submitted: HashMap<String, BTreeMap<String, usize>>,
    /// item -> (pair, first log position after the reveal) once both have submitted.
    revealed: HashMap<String, ((String, String), usize)>,
    /// item -> its newest assigned pair.
    assigned: HashMap<String, (String, String)>,
    /// Ids of the human labels given after their item was revealed.
    after: HashSet<String>,
}

/// Whether a reviewer's current labels of an item (criterion -> labelled, a
/// retraction being `false`) cover every `required` criterion.
fn is_complete(got: &BTreeMap<&str, bool>, required: &[String]) -> bool {
    required.iter().all(|c| got.get(c.as_str()) == Some(&true))
}

fn is_human(reviewer: &str) -> bool {
    reviewer != JUDGE && reviewer != FINAL
}

impl Blinding {
    /// Replay the log in its own order with every pair of `assigned` in force from
    /// the start (items without one take the first two reviewers to submit).
    pub fn from_log(
        labels: &[Label],
        criteria: &[&str],
        assigned: &HashMap<String, (String, String)>,
    ) -> Self {
        Self::replay(labels, criteria, &Schedule::from_pairs(assigned))
    }

    /// Replay the log (`labels` in log order) under the assignments of `schedule`.
    /// `criteria` are the rubric's keys, used only when `schedule` pins none (a
    /// study whose lead pinned its rubric submits by the pinned criteria, whatever
    /// rubric the caller holds). A label id seen before is no new label (a copied
    /// row cannot mark the original as given after reveal).
    pub fn replay(labels: &[Label], criteria: &[&str], schedule: &Schedule) -> Self {
        let given: Vec<String> = criteria.iter().map(|c| (*c).to_string()).collect();
        let mut required: &[String] = schedule.criteria_at(0).unwrap_or(&given);
        // (item, reviewer) -> criteria currently labelled.
        let mut have: HashMap<(&str, &str), BTreeMap<&str, bool>> = HashMap::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut out = Self {
            assigned: schedule.newest(),
            ..Self::default()
        };
        let bounds = schedule.boundaries();
        let mut next = 0;
        for (pos, l) in labels.iter().enumerate() {
            while let Some(&(from, change)) = bounds.get(next).filter(|b| b.0 <= pos) {
                match change {
                    Some(item) => out.try_reveal(item, schedule, from, from),
                    None => {
                        required = schedule.criteria_at(from).unwrap_or(&given);
                        out.submit_complete(&have, required, from, schedule);
                    }
                }
                next += 1;
            }
            if !is_human(&l.reviewer) || !seen.insert(l.label_id.as_str()) {
                continue;
            }
            // After reveal for this reviewer: the item is revealed and they have
            // submitted it, so they could see the others' labels (a third reviewer
            // labelling an item revealed to a pair is still blind until then).
            if out.revealed.contains_key(&l.item_id) && out.submitted(&l.item_id, &l.reviewer) {
                out.after.insert(l.label_id.clone());
            }
            let entry = have
                .entry((l.item_id.as_str(), l.reviewer.as_str()))
                .or_default();
            entry.insert(l.criterion.as_str(), l.label.is_some());
            let complete = is_complete(entry, required);
            let subs = out.submitted.entry(l.item_id.clone()).or_default();
            if !complete || subs.contains_key(&l.reviewer) {
                continue; // submission is sticky: the first complete moment counts
            }
            subs.insert(l.reviewer.clone(), pos);
            out.try_reveal(&l.item_id, schedule, pos, pos + 1);
        }
        for &(from, change) in &bounds[next..] {
            match change {
                Some(item) => out.try_reveal(item, schedule, from, from),
                None => {
                    required = schedule.criteria_at(from).unwrap_or(&given);
                    out.submit_complete(&have, required, from, schedule);
                }
            }
        }
        out
    }

    /// At a pin made at log position `at`: every (item, reviewer) whose labels now
    /// cover `required` and who had not submitted submits there, and their items are
    /// revealed where every reviewer in force has. In a fixed order (items, then
    /// names), so a replay never depends on a map's order.
    fn submit_complete(
        &mut self,
        have: &HashMap<(&str, &str), BTreeMap<&str, bool>>,
        required: &[String],
        at: usize,
        schedule: &Schedule,
    ) {
        let mut now: Vec<(&str, &str)> = have
            .iter()
            .filter(|((item, who), got)| !self.submitted(item, who) && is_complete(got, required))
            .map(|(k, _)| *k)
            .collect();
        now.sort_unstable();
        for (item, who) in &now {
            self.submitted
                .entry((*item).to_string())
                .or_default()
                .insert((*who).to_string(), at);
        }
        let mut items: Vec<&str> = now.iter().map(|(i, _)| *i).collect();
        items.dedup();
        for item in items {
            self.try_reveal(item, schedule, at, at);
        }
    }

    /// Reveal `item` if it is not yet and every reviewer in force at log position
    /// `at` (else the first two to submit) has submitted; labels from position
    /// `after_from` on are then given after reveal.
    fn try_reveal(&mut self, item: &str, schedule: &Schedule, at: usize, after_from: usize) {
        if self.revealed.contains_key(item) {
            return;
        }
        let Some(subs) = self.submitted.get(item) else {
            return;
        };
        let pair = match schedule.in_force(item, at) {
            Some(all) => all
                .iter()
                .all(|r| subs.contains_key(r))
                .then(|| pair_of(all))
                .flatten(),
            None if subs.len() >= 2 => {
                let mut first: Vec<(&String, &usize)> = subs.iter().collect();
                first.sort_by_key(|(_, p)| **p);
                Some((first[0].0.clone(), first[1].0.clone()))
            }
            None => None,
        };
        if let Some(pair) = pair {
            self.revealed.insert(item.to_string(), (pair, after_from));
        }
    }

    /// Whether `reviewer` has submitted `item` (labelled every criterion once).
    pub fn submitted(&self, item: &str, reviewer: &str) -> bool {
        self.submitted
            .get(item)
            .is_some_and(|s| s.contains_key(reviewer))
    }

    /// The reviewers who have submitted `item`.
    pub fn submitters(&self, item: &str) -> Vec<&str> {
        self.submitted
            .get(item)
            .map(|s| s.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Where `item` was revealed, if it was: the first position of the label log
    /// after the reveal.
    pub fn reveal_at(&self, item: &str) -> Option<usize> {
        self.revealed.get(item).map(|(_, p)| *p)
    }

    /// The item's reviewer pair: the first two reviewers of the assignment it was
    /// revealed under (or the first two to submit it), else of its newest assignment.
    pub fn pair(&self, item: &str) -> Option<&(String, String)> {
        self.revealed
            .get(item)
            .map(|(p, _)| p)
            .or_else(|| self.assigned.get(item))
    }

    /// Whether `viewer` may see other reviewers' and the judge's labels and notes on
    /// `item`: the lead always; a reviewer once the item is revealed and they have
    /// submitted it themselves (a third reviewer who has not is still blind); no one
    /// without an identity.
    pub fn visible(&self, viewer: &Viewer, item: &str) -> bool {
        match viewer {
            Viewer::Lead => true,
            Viewer::Reviewer(me) => self.revealed.contains_key(item) && self.submitted(item, me),
            Viewer::Nobody => false,
        }
    }

    /// The one rule of blinding: whether `viewer` may see `label` (its value and its
    /// note). A reviewer sees their own labels always, and every label (the other
    /// reviewer's, the judge's, the lead's final ones) of an item [`visible`] to
    /// them; the lead sees all; no one without an identity sees none.
    ///
    /// [`visible`]: Self::visible
    pub fn may_see(&self, viewer: &Viewer, label: &Label) -> bool {
        viewer.name() == Some(label.reviewer.as_str()) || self.visible(viewer, &label.item_id)
    }

    /// Whether `label` (a label of the replayed log) was given after its item was
    /// revealed (human labels only).
    pub fn after_reveal(&self, label: &Label) -> bool {
        is_human(&label.reviewer) && self.after.contains(&label.label_id)
    }

    /// The labels `viewer` may see ([`may_see`](Self::may_see)).
    pub fn visible_labels<'a>(&self, viewer: &Viewer, labels: &'a [Label]) -> Vec<&'a Label> {
        labels.iter().filter(|l| self.may_see(viewer, l)).collect()
    }

    /// Current label per (item, reviewer, criterion) in the chosen version: the
    /// newest (the last in `labels`, which are in log order), or the newest given at
    /// or before the item's reveal (retractions remove). Judge and final labels are
    /// never filtered by reveal.
    pub fn current(
        &self,
        labels: &[&Label],
        version: LabelVersion,
    ) -> BTreeMap<(String, String, String), Label> {
        let mut out: BTreeMap<(String, String, String), Label> = BTreeMap::new();
        for l in labels {
            if version == LabelVersion::BeforeReveal && self.after_reveal(l) {
                continue;
            }
            let key = (l.item_id.clone(), l.reviewer.clone(), l.criterion.clone());
            out.insert(key, (*l).clone());
        }
        out.retain(|_, l| l.label.is_some());
        out
    }

    /// (item, reviewer, criterion) whose newest label differs from the one given
    /// before reveal: changes of mind after seeing the others.
    pub fn changed_after_reveal(&self, labels: &[&Label]) -> usize {
        let before = self.current(labels, LabelVersion::BeforeReveal);
        let latest = self.current(labels, LabelVersion::Latest);
        latest
            .iter()
            .filter(|(k, l)| is_human(&k.1) && before.get(*k).map(|b| &b.label) != Some(&l.label))
            .count()
            + before
                .keys()
                .filter(|k| is_human(&k.1) && !latest.contains_key(*k))
                .count()
    }
}

/// What one viewer may see of a study, for the views that start from stored answers
/// rather than labels (the judge's labels of an answer in the Query pane, judge pass
/// rates, `report answers`): an answer's judge labels are hidden while any study
/// item made of that answer is hidden from the viewer ([`Blinding::visible`]), so a
/// reviewer never learns the judge's verdict on an item before the reveal.
#[derive(Debug, Clone)]
pub struct Sight {
    pub viewer: Viewer,
    pub blinding: Blinding,
    /// answer id (the item id when an item names no answer) -> its study items.
    items_of_answer: HashMap<String, Vec<String>>,
}

impl Sight {
    pub fn new(viewer: Viewer, blinding: Blinding, items: &[Item]) -> Self {
        let mut items_of_answer: HashMap<String, Vec<String>> = HashMap::new();
        for i in items {
            let answer = i.answer_id.clone().unwrap_or_else(|| i.item_id.clone());
            items_of_answer
                .entry(answer)
                .or_default()
                .push(i.item_id.clone());
        }
        Self {
            viewer,
            blinding,
            items_of_answer,
        }
    }

    /// Whether the viewer may see `label` ([`Blinding::may_see`]).
    pub fn label(&self, label: &Label) -> bool {
        self.blinding.may_see(&self.viewer, label)
    }

    /// Whether the viewer may see the others' and the judge's labels on `item`.
    pub fn item(&self, item: &str) -> bool {
        self.blinding.visible(&self.viewer, item)
    }

    /// Whether the viewer may see the judge's labels of the stored answer
    /// `answer_id`: always for an answer that is no study item.
    pub fn judgement(&self, answer_id: &str) -> bool {
        self.items_of_answer
            .get(answer_id)
            .is_none_or(|items| items.iter().all(|i| self.item(i)))
    }

    /// Of `judgements`, those whose labels the viewer may see ([`Self::judgement`]),
    /// in their stored order.
    pub fn judgements_seen(&self, judgements: Vec<JudgementRecord>) -> Vec<JudgementRecord> {
        judgements
            .into_iter()
            .filter(|j| self.judgement(&j.answer_id))
            .collect()
    }
}

/// A reviewer's own order of items: a seeded shuffle that differs per reviewer (so
/// the two reviewers of a pair do not share order effects) and is the same every
/// time they open the study.
pub fn reviewer_order(seed: u64, reviewer: &str, n: usize) -> Vec<usize> {
    // FNV-1a of the name, mixed into the seed.
    let h = reviewer.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    crate::core::rng::Rng::new(seed ^ h).sample_indices(n, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(item: &str, who: &str, c: &str, v: Option<&str>, seq: u64) -> Label {
        let mut x = Label {
            label_id: format!("{who}-{seq}-{item}-{c}"),
            item_id: item.into(),
            reviewer: who.into(),
            criterion: c.into(),
            label: v.map(str::to_string),
            note: None,
            timestamp: String::new(),
            seq,
            rubric_version: "1".into(),
            adjudicator: None,
            signer: None,
            signature: None,
            log_rows: None,
            active_ms: None,
        };
        x.seq = seq;
        x
    }

    const C: [&str; 2] = ["a", "b"];

    #[test]
    fn reveal_needs_both_submissions_and_marks_later_labels() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "bob", "a", Some("fail"), 2),
            l("i", "ann", "b", Some("pass"), 3), // ann submits
            l("i", "judge", "a", Some("pass"), 0),
            l("i", "bob", "b", Some("pass"), 4), // bob submits: revealed at 4
            l("i", "ann", "a", Some("fail"), 5), // ann changes her mind after reveal
        ];
        let b = Blinding::from_log(&log, &C, &HashMap::new());
        assert_eq!(
            b.reveal_at("i"),
            Some(5),
            "labels from position 5 on are after"
        );
        assert_eq!(b.pair("i"), Some(&("ann".to_string(), "bob".to_string())));
        let marked: Vec<u64> = log
            .iter()
            .filter(|x| b.after_reveal(x))
            .map(|x| x.seq)
            .collect();
        assert_eq!(marked, vec![5]);
        let all: Vec<&Label> = log.iter().collect();
        let before = b.current(&all, LabelVersion::BeforeReveal);
        let latest = b.current(&all, LabelVersion::Latest);
        let key = ("i".to_string(), "ann".to_string(), "a".to_string());
        assert_eq!(before[&key].label.as_deref(), Some("pass"));
        assert_eq!(latest[&key].label.as_deref(), Some("fail"));
        assert_eq!(b.changed_after_reveal(&all), 1);
    }

    #[test]
    fn reviewers_stay_blind_until_both_submit() {
        let mut log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("fail"), 3),
        ];
        let none = HashMap::new();
        let ann = Viewer::Reviewer("ann".into());
        let bob = Viewer::Reviewer("bob".into());
        let carol = Viewer::Reviewer("carol".into());
        let b = Blinding::from_log(&log, &C, &none);
        assert!(!b.visible(&ann, "i") && !b.visible(&bob, "i"));
        assert!(b.visible(&Viewer::Lead, "i"));
        // ann sees only her own two labels.
        assert_eq!(b.visible_labels(&ann, &log).len(), 2);
        log.push(l("i", "bob", "b", Some("fail"), 4));
        let b = Blinding::from_log(&log, &C, &none);
        assert!(b.visible(&ann, "i") && b.visible(&bob, "i"));
        assert!(
            !b.visible(&carol, "i"),
            "a third reviewer who has not submitted"
        );
        assert_eq!(b.visible_labels(&ann, &log).len(), 4);
    }

    #[test]
    fn a_third_reviewer_labels_blind_until_they_submit() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("fail"), 3),
            l("i", "bob", "b", Some("fail"), 4), // revealed to ann and bob
            l("i", "carol", "a", Some("pass"), 5),
            l("i", "carol", "b", Some("fail"), 6), // carol submits, blind
            l("i", "carol", "b", Some("pass"), 7), // a change after seeing the others
            l("i", "ann", "a", Some("fail"), 8),
        ];
        let b = Blinding::from_log(&log, &C, &HashMap::new());
        let after: Vec<bool> = log.iter().map(|x| b.after_reveal(x)).collect();
        assert_eq!(
            after,
            [false, false, false, false, false, false, true, true]
        );
        let all: Vec<&Label> = log.iter().collect();
        let before = b.current(&all, LabelVersion::BeforeReveal);
        let key = |r: &str, c: &str| ("i".to_string(), r.to_string(), c.to_string());
        assert_eq!(before[&key("carol", "b")].label.as_deref(), Some("fail"));
        assert_eq!(before[&key("ann", "a")].label.as_deref(), Some("pass"));
        assert_eq!(b.changed_after_reveal(&all), 2);
    }

    #[test]
    fn an_assigned_pair_is_waited_for_and_retractions_do_not_unsubmit() {
        let mut assigned = HashMap::new();
        assigned.insert("i".to_string(), ("ann".to_string(), "bob".to_string()));
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "carol", "a", Some("pass"), 3),
            l("i", "carol", "b", Some("pass"), 4), // not ann's pair: no reveal
            l("i", "ann", "b", None, 5),           // undo after submitting
            l("i", "bob", "a", Some("pass"), 6),
            l("i", "bob", "b", Some("pass"), 7),
        ];
        let b = Blinding::from_log(&log[..5], &C, &assigned);
        assert_eq!(b.reveal_at("i"), None);
        let b = Blinding::from_log(&log, &C, &assigned);
        assert_eq!(b.reveal_at("i"), Some(7));
        assert!(b.submitted("i", "ann"));
    }

    #[test]
    fn no_identity_sees_no_label_and_no_judge_label_of_a_study_item() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("fail"), 3),
            l("i", "bob", "b", Some("fail"), 4),
            l("i", "judge", "a", Some("pass"), 0),
        ];
        let b = Blinding::from_log(&log, &C, &HashMap::new());
        assert!(b.visible_labels(&Viewer::Nobody, &log).is_empty());
        assert_eq!(b.visible_labels(&Viewer::Lead, &log).len(), 5);
        assert_eq!(
            b.visible_labels(&Viewer::of(Some("ann"), false), &log)
                .len(),
            5
        );
        assert_eq!(Viewer::of(None, false), Viewer::Nobody);
        assert_eq!(Viewer::of(Some("ann"), true), Viewer::Lead);
        let item = |id: &str, answer: Option<&str>| Item {
            item_id: id.into(),
            set: "s".into(),
            question: String::new(),
            reference_answer: String::new(),
            target_chunk: String::new(),
            answer: String::new(),
            answer_id: answer.map(str::to_string),
            ..Default::default()
        };
        let items = [item("i", Some("ans-1")), item("j", None)];
        let nobody = Sight::new(Viewer::Nobody, b.clone(), &items);
        assert!(!nobody.judgement("ans-1") && !nobody.judgement("j"));
        assert!(nobody.judgement("not-an-item"));
        let ann = Sight::new(Viewer::Reviewer("ann".into()), b.clone(), &items);
        assert!(ann.judgement("ans-1"), "revealed to ann");
        let carol = Sight::new(Viewer::Reviewer("carol".into()), b, &items);
        assert!(!carol.judgement("ans-1"), "carol has not submitted it");
    }

    #[test]
    fn reviewer_orders_are_seeded_permutations() {
        let a = reviewer_order(7, "ann", 20);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
        assert_eq!(a, reviewer_order(7, "ann", 20));
        assert_ne!(a, reviewer_order(7, "bob", 20));
        assert_ne!(a, reviewer_order(8, "ann", 20));
    }

    #[test]
    fn a_clock_set_back_changes_nothing_the_log_order_decides() {
        let mut log = vec![
            l("i", "ann", "a", Some("pass"), 10),
            l("i", "ann", "b", Some("pass"), 11),
            l("i", "bob", "a", Some("fail"), 12),
            l("i", "bob", "b", Some("fail"), 13), // revealed here
        ];
        // ann's machine is an hour behind: her change of mind carries an older clock
        // than every label before it, and still lands after the reveal.
        let mut late = l("i", "ann", "a", Some("fail"), 1);
        late.timestamp = "an hour ago".into();
        log.push(late);
        let b = Blinding::from_log(&log, &C, &HashMap::new());
        assert!(b.after_reveal(&log[4]));
        let all: Vec<&Label> = log.iter().collect();
        let blind = b.current(&all, LabelVersion::BeforeReveal);
        let key = ("i".to_string(), "ann".to_string(), "a".to_string());
        assert_eq!(blind[&key].label.as_deref(), Some("pass"));
        let latest = b.current(&all, LabelVersion::Latest);
        assert_eq!(
            latest[&key].label.as_deref(),
            Some("fail"),
            "newest by position"
        );
    }

    #[test]
    fn a_reassignment_after_reveal_does_not_move_it_and_one_before_does() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("fail"), 3),
            l("i", "bob", "b", Some("fail"), 4), // ann+bob revealed: from position 4
            l("i", "carol", "a", Some("pass"), 5),
            l("i", "carol", "b", Some("pass"), 6),
            l("i", "ann", "a", Some("fail"), 7),
        ];
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        let mut s = Schedule::default();
        s.assign("i", 0, pair("ann", "bob"));
        s.assign("i", 5, pair("ann", "carol")); // after the reveal
        let b = Blinding::replay(&log, &C, &s);
        assert_eq!(b.reveal_at("i"), Some(4));
        assert_eq!(b.pair("i"), Some(&pair("ann", "bob")));
        assert!(b.after_reveal(&log[6]) && !b.after_reveal(&log[3]));
        // The same re-assignment made before bob finished: the reveal waits for carol.
        let mut s = Schedule::default();
        s.assign("i", 0, pair("ann", "bob"));
        s.assign("i", 3, pair("ann", "carol"));
        let b = Blinding::replay(&log, &C, &s);
        assert_eq!(b.reveal_at("i"), Some(6));
        assert_eq!(b.pair("i"), Some(&pair("ann", "carol")));
        // Assigned after both of a pair had submitted: revealed at the assignment.
        let mut s = Schedule::default();
        s.assign("i", 0, pair("ann", "dan"));
        s.assign("i", 6, pair("ann", "carol"));
        let b = Blinding::replay(&log, &C, &s);
        assert_eq!(b.reveal_at("i"), Some(6));
        assert!(b.after_reveal(&log[6]));
        let s = Schedule::default();
        let mut copied = log[..4].to_vec();
        copied.push(log[0].clone()); // a copy of ann's first row after the reveal
        let b = Blinding::replay(&copied, &C, &s);
        assert!(!b.after_reveal(&copied[0]), "a copied id marks nothing");
    }

    /// i to ann and bob from 0, to ann and carol from 5, then (added last) ann and
    /// bob again from 0, as a copied old row would be: the re-assignment stays in force
    /// from 5 and stays the newest. ann submits at 1, x (on no assignment) at 4, bob
    /// at 5, carol never: i is not revealed (read last-wins, the copy would be in
    /// force at 5 and reveal i from 6).
    #[test]
    fn an_assignment_added_with_an_earlier_position_does_not_take_the_newest_ones_place() {
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        let mut s = Schedule::default();
        s.assign("i", 0, pair("ann", "bob"));
        s.assign("i", 5, pair("ann", "carol"));
        s.assign("i", 0, pair("ann", "bob"));
        let (ab, ac) = (
            ["ann".to_string(), "bob".into()],
            ["ann".to_string(), "carol".into()],
        );
        assert_eq!(s.in_force("i", 4), Some(&ab[..]));
        assert_eq!(s.in_force("i", 5), Some(&ac[..]));
        assert_eq!(s.in_force("i", 9), Some(&ac[..]));
        assert_eq!(s.newest().get("i"), Some(&pair("ann", "carol")));
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("fail"), 3),
            l("i", "x", "a", Some("fail"), 4),
            l("i", "x", "b", Some("fail"), 5),
            l("i", "bob", "b", Some("fail"), 6),
        ];
        let b = Blinding::replay(&log, &C, &s);
        assert_eq!(b.reveal_at("i"), None);
        // Two at one position: the later one added is in force.
        let mut s = Schedule::default();
        s.assign("i", 2, pair("ann", "bob"));
        s.assign("i", 2, pair("ann", "carol"));
        assert_eq!(s.in_force("i", 2), Some(&ac[..]));
    }

    #[test]
    fn three_assigned_reviewers_reveal_only_when_all_three_submitted() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2), // ann submits
            l("i", "bob", "a", Some("fail"), 3),
            l("i", "bob", "b", Some("fail"), 4), // bob submits: a pair would reveal here
            l("i", "carol", "a", Some("pass"), 5),
            l("i", "carol", "b", Some("fail"), 6), // carol submits: revealed
            l("i", "bob", "a", Some("pass"), 7),
        ];
        let mut s = Schedule::default();
        s.assign_all("i", 0, vec!["ann".into(), "bob".into(), "carol".into()]);
        let viewer = |n: &str| Viewer::Reviewer(n.to_string());
        for upto in [4, 5] {
            let b = Blinding::replay(&log[..upto], &C, &s);
            assert_eq!(b.reveal_at("i"), None, "carol has not submitted");
            assert!(!b.visible(&viewer("ann"), "i"));
            assert!(!b.may_see(&viewer("ann"), &log[2]), "ann sees no bob label");
            assert!(
                !b.may_see(&viewer("carol"), &log[0]),
                "carol sees no ann label"
            );
            assert!(b.may_see(&viewer("ann"), &log[0]), "her own");
        }
        let b = Blinding::replay(&log, &C, &s);
        assert_eq!(b.reveal_at("i"), Some(6));
        assert_eq!(b.pair("i"), Some(&("ann".to_string(), "bob".to_string())));
        for who in ["ann", "bob", "carol"] {
            assert!(b.visible(&viewer(who), "i"), "{who}");
        }
        assert!(!b.visible(&viewer("dan"), "i"), "dan never submitted");
        let marked: Vec<u64> = log
            .iter()
            .filter(|x| b.after_reveal(x))
            .map(|x| x.seq)
            .collect();
        assert_eq!(marked, vec![7], "only bob's change after the reveal");
        assert_eq!(
            s.newest_reviewers()["i"],
            vec!["ann".to_string(), "bob".into(), "carol".into()]
        );
    }

    /// The study's pinned criteria decide submission, whatever criteria the caller
    /// holds: ann and bob labelled only `a`; with a one-criterion local rubric and no
    /// pin the item is revealed, with the study's rubric (a and b) pinned it is not.
    #[test]
    fn pinned_criteria_win_over_the_callers() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "bob", "a", Some("fail"), 2),
        ];
        let ann = Viewer::Reviewer("ann".into());
        let local = Blinding::replay(&log, &["a"], &Schedule::default());
        assert!(
            local.visible(&ann, "i"),
            "one criterion: submitted and revealed"
        );
        let mut pinned = Schedule::default();
        pinned.require(5, vec!["a".into(), "b".into()]);
        assert!(pinned.pinned());
        // The first pin is in force from the start, though made at position 5.
        assert_eq!(
            pinned.criteria_at(0),
            Some(&["a".to_string(), "b".into()][..])
        );
        let b = Blinding::replay(&log, &["a"], &pinned);
        assert!(!b.submitted("i", "ann") && !b.visible(&ann, "i"));
        assert_eq!(b.visible_labels(&ann, &log).len(), 1, "her own label only");
    }

    /// A later pin is in force from where it was made: a pin adding criterion `c` at
    /// position 4 leaves the item revealed at 4 (both had submitted under a and b),
    /// and ann's change at 4 stays after reveal; bob's item j, incomplete under the
    /// new rubric, waits for `c`.
    #[test]
    fn a_later_pin_adding_a_criterion_does_not_unreveal() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "ann", "b", Some("pass"), 2),
            l("i", "bob", "a", Some("pass"), 3),
            l("i", "bob", "b", Some("fail"), 4), // revealed: from 4 on, after
            l("i", "ann", "b", Some("fail"), 5), // position 4: after reveal
            l("j", "ann", "a", Some("pass"), 6),
            l("j", "ann", "b", Some("pass"), 7), // under a, b, c: not submitted
            l("j", "ann", "c", Some("pass"), 8), // now submitted (position 7)
        ];
        let mut s = Schedule::default();
        s.require(0, vec!["a".into(), "b".into()]);
        s.require(4, vec!["a".into(), "b".into(), "c".into()]);
        let b = Blinding::replay(&log, &["a"], &s);
        assert_eq!(b.reveal_at("i"), Some(4));
        let after: Vec<bool> = log.iter().map(|x| b.after_reveal(x)).collect();
        assert_eq!(
            after,
            [false, false, false, false, true, false, false, false]
        );
        assert!(b.submitted("j", "ann"));
        assert_eq!(b.submitted.get("j").and_then(|s| s.get("ann")), Some(&7));
    }

    /// A later pin that drops criterion `b`: ann and bob, who had labelled only `a`,
    /// submit where it was made (position 2), the item is revealed there, and ann's
    /// label at 2 is after reveal.
    #[test]
    fn a_later_pin_dropping_a_criterion_submits_where_it_was_made() {
        let log = vec![
            l("i", "ann", "a", Some("pass"), 1),
            l("i", "bob", "a", Some("pass"), 2),
            l("i", "ann", "a", Some("fail"), 3),
        ];
        let mut s = Schedule::default();
        s.require(0, vec!["a".into(), "b".into()]);
        s.require(2, vec!["a".into()]);
        let b = Blinding::replay(&log, &["a", "b"], &s);
        assert_eq!(b.reveal_at("i"), Some(2));
        assert_eq!(b.submitted.get("i").and_then(|s| s.get("bob")), Some(&2));
        let after: Vec<bool> = log.iter().map(|x| b.after_reveal(x)).collect();
        assert_eq!(after, [false, false, true]);
        // Made after the last label: the reveal still happens, at its position.
        let mut late = Schedule::default();
        late.require(0, vec!["a".into(), "b".into()]);
        late.require(3, vec!["a".into()]);
        let b = Blinding::replay(&log[..2], &["a"], &late);
        assert_eq!(b.reveal_at("i"), Some(3));
    }
}
