//! Annotate pane: one reviewer labels items on any rubric, blind to the other reviewers
//! and to the judge until every reviewer of the item has submitted it (then
//! `r` shows their labels and notes, disagreements highlighted). Single keys: `1`-`9`
//! pick a criterion, each label's key from the rubric labels it (and moves to the next
//! criterion), `n`/`N` note on the criterion, `]`/`[` next/previous item, `u` first
//! unlabelled item, `z` undo the last label. The four texts take focus (`h`/`l`),
//! scroll (`J`/`K` line, `pgdn`/`pgup`/space page, `g`/`G` top/bottom) and zoom to the
//! whole pane (`enter`, `esc`); `i` opens the rubric's guidelines and worked examples
//! of the current criterion (`annotate_guidelines`). Each reviewer sees their
//! assigned items in their own seeded order; `s` filters by item set. Every key
//! feeds the active-time clock, and each label carries the time on its item. The
//! lead (`--role lead`) sees every label and each reviewer's progress. A label shows
//! as saved only once its lance commit has returned.

mod guidelines;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::core::blinding::{Blinding, Schedule, Sight, Viewer, reviewer_order};
use crate::core::rubric::Rubric;
use crate::core::signing::{Refusal, Roster, short};
use crate::core::text::sanitize_for_terminal as clean;
use crate::core::timing::{ActiveClock, IDLE_GAP_MS};
use crate::service::study::{Item, JUDGE, Label, SaveError};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::text_view::{Scroll, ScrollMove, position, wrap};
use crate::tui::theme::Theme;

pub struct AnnotatePane {
    reviewer: Option<String>,
    /// The reviewer's name, asked for when none was given.
    reviewer_input: TextInput,
    items: Vec<Item>,
    /// The study's rubric, and its pairwise form (first, second, tie on the same
    /// criteria) for pair items, built once here rather than on every draw and key.
    /// Private so that the two cannot drift apart: [`Self::set_rubric`] sets both.
    rubric: Rubric,
    pair_rubric: Rubric,
    pos: usize,
    criterion: usize,
    /// Every label version known (this and other reviewers, the judge).
    labels: Vec<Label>,
    /// Labels sent but not yet confirmed, by ticket.
    pending: BTreeMap<u64, Label>,
    /// When each pending label's key was pressed.
    pressed: BTreeMap<u64, std::time::Instant>,
    /// Key press to "saved" of every confirmed label, in ms (figures; logged too).
    key_to_saved_ms: Vec<f64>,
    ticket: u64,
    revealed: bool,
    /// A note being typed (`n`), attached to the next label.
    note_input: TextInput,
    /// A finished note on a criterion that has no label yet: (criterion key, note).
    /// It is saved with that criterion's label, never with another criterion's.
    pending_note: Option<(String, String)>,
    /// The reviewer was told that leaving the item drops `pending_note`; the next
    /// move (or quit) does, and names it.
    note_warned: bool,
    /// Notes dropped that way, for the report printed on quitting (nothing typed is
    /// lost without a trace).
    dropped_notes: Vec<String>,
    status: Option<String>,
    last_save_ms: Option<f64>,
    /// This reviewer's own confirmed labels, newest last (for undo).
    history: Vec<Label>,
    /// Labels whose commit failed (item, criterion and why), reported on quitting.
    failed: Vec<String>,
    /// The study lead: sees every label and each reviewer's progress.
    lead: bool,
    /// Indices into `items`: this reviewer's items (assigned to them, in the set
    /// filter) in their own seeded order; `pos` indexes this.
    order: Vec<usize>,
    order_seed: u64,
    /// Only items of this set (`s` cycles).
    set_filter: Option<String>,
    /// item -> every reviewer of its newest assignment (a pair, or k of n): whose
    /// queues hold it.
    assigned: HashMap<String, Vec<String>>,
    /// Who reviews which item from which position of the label log on.
    schedule: Schedule,
    /// The study roster (empty in an unsigned study) and this user's public key: a
    /// typed name must be this key's on the roster.
    roster: Roster,
    my_key: Option<String>,
    /// The study (and with it the roster) has been read at least once. Until then a
    /// typed name cannot be checked against the roster, so none is taken: taking it
    /// would draw every view for a name this user may not hold.
    study_read: bool,
    /// Stored rows that do not count (unsigned or forged), as last read.
    refused: Vec<Refusal>,
    /// Submissions and reveals, recomputed whenever labels change.
    blinding: Blinding,
    /// The focused text (question, reference, target, answer), if any.
    focus: Option<usize>,
    /// The focused text fills the pane.
    zoom: bool,
    scroll: [Scroll; 4],
    /// (rows, wrapped lines) of each text as last drawn, for page moves.
    geometry: Cell<[(usize, usize); 4]>,
    /// Active time per item ([`crate::core::timing`]), fed by every key.
    clock: ActiveClock,
    /// The clock's zero.
    started: std::time::Instant,
    /// The guidelines overlay (`i`) is open.
    guidelines: bool,
}

/// What the Annotate pane starts with, fixed for its life: who labels (a name typed
/// later replaces `None`), whether they lead the study (the lead sees every label and
/// each reviewer's progress, and labels nothing), the study's rubric, and the seed of
/// each reviewer's own item order.
#[derive(Clone, Debug)]
pub struct AnnotateSettings {
    pub reviewer: Option<String>,
    pub lead: bool,
    pub rubric: Rubric,
    pub order_seed: u64,
}

impl Default for AnnotateSettings {
    /// No one yet, not the lead, the shipped rubric, the configured default seed.
    fn default() -> Self {
        Self {
            reviewer: None,
            lead: false,
            rubric: crate::service::base::default_rubric(),
            order_seed: crate::config::defaults::ORDER_SEED,
        }
    }
}

/// Who may label in a study and by which rules, as last read: the roster (empty in
/// an unsigned study), this user's public key (a typed name must be this key's on the
/// roster), the stored rows that do not count, and the rubric the lead pinned (None:
/// none pinned, the pane keeps its own).
#[derive(Debug, Default)]
pub struct StudyTrust {
    pub roster: Roster,
    pub my_key: Option<String>,
    pub refused: Vec<Refusal>,
    pub rubric: Option<Rubric>,
}

/// The four texts of an item, in display order.
pub const TEXTS: [&str; 4] = ["Question", "Reference", "Target", "Answer"];

impl AnnotatePane {
    /// The reviewer's name, once given (and on the roster when there is one).
    pub fn reviewer(&self) -> Option<&str> {
        self.reviewer.as_deref()
    }

    /// The study's items as last read.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Every label version known (this and other reviewers, the judge), in log order.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// Submissions and reveals as last computed from the labels.
    pub fn blinding(&self) -> &Blinding {
        &self.blinding
    }

    /// The place of the item on screen in this reviewer's queue.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The criterion the cursor is on (an index into the shown rubric).
    pub fn criterion(&self) -> usize {
        self.criterion
    }

    /// This reviewer's items in their own order (the lead's: every item, in stored
    /// order), as `]` steps through them.
    pub fn queue(&self) -> impl Iterator<Item = &Item> {
        self.order.iter().map(|&n| &self.items[n])
    }

    /// The pane's last message, if any.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Show `message` in the pane's status line.
    pub fn say(&mut self, message: impl Into<String>) {
        self.status = Some(message.into());
    }

    /// A note is being typed (`n`).
    pub fn is_typing_note(&self) -> bool {
        self.note_input.is_active()
    }

    /// Labels sent for commit and not yet confirmed (quitting waits for them).
    pub fn in_flight(&self) -> impl Iterator<Item = &Label> {
        self.pending.values()
    }

    /// How many labels are in flight.
    pub fn saves_in_flight(&self) -> usize {
        self.pending.len()
    }

    /// What was typed and not saved: labels whose commit failed and notes dropped on
    /// leaving their item, each named, for the report printed on quitting.
    pub fn unsaved(&self) -> impl Iterator<Item = &String> {
        self.failed.iter().chain(&self.dropped_notes)
    }

    /// The study was read (start-up, or another process committed): who may label,
    /// then its items, labels and assignments. Returns whether the reviewer's name was
    /// dropped because it is not this user's key's on the roster read (every view must
    /// then be drawn again, for no one).
    pub fn on_study_read(
        &mut self,
        trust: StudyTrust,
        items: Vec<Item>,
        labels: Vec<Label>,
        schedule: Schedule,
    ) -> bool {
        // A lead may pin a new rubric while the session runs: labels are given and
        // checked against it from this read on.
        if let Some(r) = trust.rubric.filter(|r| *r != self.rubric) {
            let last = r.criteria.len().saturating_sub(1);
            self.set_rubric(r);
            self.criterion = self.criterion.min(last);
        }
        self.roster = trust.roster;
        self.my_key = trust.my_key;
        self.refused = trust.refused;
        // A label this session saved is held until a read holds it; a read that
        // refuses it (its key replaced, its reviewer removed) decides here as in every
        // other view: it stops counting.
        let refused_rows: std::collections::HashSet<&str> = self
            .refused
            .iter()
            .filter_map(|r| r.row.as_deref())
            .collect();
        self.labels
            .retain(|l| !refused_rows.contains(l.label_id.as_str()));
        self.load_with(items, labels, schedule);
        self.recheck_name()
    }

    /// The pane for `settings`; the study's items and labels come with
    /// [`Self::on_study_read`] (or [`Self::load`]).
    pub fn new(settings: AnnotateSettings) -> Self {
        let AnnotateSettings {
            reviewer,
            lead,
            rubric,
            order_seed,
        } = settings;
        Self {
            reviewer,
            reviewer_input: TextInput::default(),
            items: Vec::new(),
            pair_rubric: rubric.pairwise(),
            rubric,
            pos: 0,
            criterion: 0,
            labels: Vec::new(),
            pending: BTreeMap::new(),
            pressed: BTreeMap::new(),
            key_to_saved_ms: Vec::new(),
            ticket: 0,
            revealed: false,
            note_input: TextInput::default(),
            pending_note: None,
            note_warned: false,
            dropped_notes: Vec::new(),
            status: None,
            last_save_ms: None,
            history: Vec::new(),
            failed: Vec::new(),
            lead,
            order: Vec::new(),
            order_seed,
            set_filter: None,
            assigned: HashMap::new(),
            schedule: Schedule::default(),
            roster: Roster::default(),
            my_key: None,
            study_read: false,
            refused: Vec::new(),
            blinding: Blinding::default(),
            focus: None,
            zoom: false,
            scroll: [Scroll::default(); 4],
            geometry: Cell::new([(1, 0); 4]),
            clock: ActiveClock::new(IDLE_GAP_MS),
            started: std::time::Instant::now(),
            guidelines: false,
        }
    }

    /// The rubric of the item on screen: the study's, or its pairwise form (first,
    /// second, tie on the same criteria) on a pair item.
    pub fn shown_rubric(&self) -> &Rubric {
        match self.item() {
            Some(i) if crate::core::preference::is_pair_item(&i.item_id) => &self.pair_rubric,
            _ => &self.rubric,
        }
    }

    /// The study's rubric (its plain form).
    pub fn rubric(&self) -> &Rubric {
        &self.rubric
    }

    /// Replace the study's rubric (and with it the pairwise form).
    pub fn set_rubric(&mut self, rubric: Rubric) {
        self.pair_rubric = rubric.pairwise();
        self.rubric = rubric;
    }

    pub fn item(&self) -> Option<&Item> {
        self.items.get(*self.order.get(self.pos)?)
    }

    /// Who is looking (for blinding): the lead, the named reviewer, or, before a
    /// name is given, no one (who is shown no one's labels).
    pub fn viewer(&self) -> Viewer {
        Viewer::of(self.reviewer.as_deref(), self.lead)
    }

    /// Answers (item ids for items naming none) whose judge labels the viewer may not
    /// see yet: the study items not revealed to them.
    pub fn blind_answers(&self) -> std::collections::HashSet<String> {
        let sight = Sight::new(self.viewer(), self.blinding.clone(), &self.items);
        self.items
            .iter()
            .map(|i| i.answer_id.clone().unwrap_or_else(|| i.item_id.clone()))
            .filter(|a| !sight.judgement(a))
            .collect()
    }

    /// New study data from the workspace (start-up, or another process committed).
    /// Labels are an append-only log, so the union by label id of what is shown and
    /// what was read is never wrong: a label confirmed while the read was running
    /// stays shown.
    pub fn load(
        &mut self,
        items: Vec<Item>,
        labels: Vec<Label>,
        assignments: HashMap<String, (String, String)>,
    ) {
        self.load_with(items, labels, Schedule::from_pairs(&assignments));
    }

    /// [`load`](Self::load) with the assignments as a schedule over `labels`'
    /// positions (each in force from the moment it was made).
    pub fn load_with(&mut self, items: Vec<Item>, labels: Vec<Label>, schedule: Schedule) {
        let read: std::collections::HashSet<&str> =
            labels.iter().map(|l| l.label_id.as_str()).collect();
        let keep: Vec<Label> = self
            .labels
            .iter()
            .filter(|l| l.reviewer != JUDGE && !read.contains(l.label_id.as_str()))
            .cloned()
            .collect();
        self.labels = labels;
        self.labels.extend(keep);
        self.items = items;
        self.assigned = schedule.newest_reviewers();
        self.schedule = schedule;
        self.study_read = true;
        self.relabel();
        self.rebuild_order();
    }

    /// After a read of the study: a reviewer name this user holds must still be
    /// this key's on the (possibly new) roster. A name taken in an unsigned study,
    /// or whose key the lead has since replaced, is dropped, and the name asked for
    /// again; returns whether it was (every view must then be drawn for no one).
    /// The lead's view is checked the same way: a lead whose study has since been
    /// founded with another key as its lead leads no more.
    fn recheck_name(&mut self) -> bool {
        if self.lead {
            return self.recheck_lead();
        }
        let Some(name) = self.reviewer.clone() else {
            return false;
        };
        match self.check_key(&name) {
            Ok(()) => false,
            Err(e) => {
                self.reviewer = None;
                self.reviewer_input.clear();
                self.status = Some(format!("{e}; name dropped, type yours"));
                self.rebuild_order();
                true
            }
        }
    }

    /// The lead's view stays open while the study is unsigned or its roster's lead
    /// key is this user's; otherwise it closes (returns true).
    fn recheck_lead(&mut self) -> bool {
        let Some((name, key)) = self.roster.lead().filter(|_| self.roster.is_signed()) else {
            return false;
        };
        let me = self.my_key.as_deref().unwrap_or_default();
        if key == me {
            return false;
        }
        self.status = Some(format!(
            "you are not this study's lead: the roster's lead is {name} (key {}), yours is {}; the lead's view is closed",
            short(key),
            short(me)
        ));
        self.lead = false;
        self.rebuild_order();
        true
    }

    /// Whether this user leads the study (as last checked against the roster).
    pub fn is_lead(&self) -> bool {
        self.lead
    }

    /// Recompute submissions and reveals after the labels changed.
    fn relabel(&mut self) {
        let keys: Vec<&str> = self
            .rubric
            .criteria
            .iter()
            .map(|c| c.key.as_str())
            .collect();
        self.blinding = Blinding::replay(&self.labels, &keys, &self.schedule);
    }

    /// This reviewer's items in their order (the lead: every item, in stored order),
    /// keeping the current item selected.
    fn rebuild_order(&mut self) {
        let current = self.item().map(|i| i.item_id.clone());
        let me = self.reviewer.clone().unwrap_or_default();
        let assigned_to_me = |i: &Item| self.assigned_to(&i.item_id, &me);
        let mine: Vec<usize> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, i)| self.set_filter.as_ref().is_none_or(|s| &i.set == s))
            .filter(|(_, i)| self.lead || assigned_to_me(i))
            .map(|(n, _)| n)
            .collect();
        self.order = if self.lead {
            mine
        } else {
            reviewer_order(self.order_seed, &me, mine.len())
                .into_iter()
                .map(|k| mine[k])
                .collect()
        };
        self.pos = current
            .and_then(|id| self.order.iter().position(|&n| self.items[n].item_id == id))
            .unwrap_or(0);
    }

    /// The item sets, for the `s` filter.
    fn sets(&self) -> Vec<String> {
        let mut v: Vec<String> = self.items.iter().map(|i| i.set.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Whether `c` is a label key of the current criterion (label keys come first in
    /// this pane: a rubric may give `n` to "no").
    pub fn is_label_key(&self, c: char) -> bool {
        let rubric = self.shown_rubric();
        self.reviewer.is_some()
            && !self.lead
            && rubric
                .criteria
                .get(self.criterion)
                .is_some_and(|cr| rubric.label_for_key(cr, c).is_some())
    }

    /// ScrollMove the focused text (or the answer, when none is focused).
    fn scroll_text(&mut self, m: ScrollMove) {
        let i = self.focus.unwrap_or(3);
        let (rows, total) = self.geometry.get()[i];
        self.scroll[i].apply(m, rows, total);
    }

    /// The newest label of (item, reviewer, criterion), if not retracted.
    pub fn label_of(&self, item: &str, reviewer: &str, criterion: &str) -> Option<&Label> {
        self.labels
            .iter()
            .rfind(|l| l.item_id == item && l.reviewer == reviewer && l.criterion == criterion)
            .filter(|l| l.label.is_some())
    }

    /// Whether this reviewer has labelled every criterion of the item.
    pub fn complete(&self, item: &str) -> bool {
        let Some(me) = &self.reviewer else {
            return false;
        };
        self.rubric
            .criteria
            .iter()
            .all(|c| self.label_of(item, me, &c.key).is_some())
    }

    pub fn done_count(&self) -> usize {
        self.order
            .iter()
            .filter(|&&n| self.complete(&self.items[n].item_id))
            .count()
    }

    /// Whether `item` is in `reviewer`'s queue: one of its assigned reviewers, or
    /// any item while the study has no assignment (every reviewer labels every item).
    pub fn assigned_to(&self, item: &str, reviewer: &str) -> bool {
        match self.assigned.get(item) {
            Some(all) => all.iter().any(|r| r == reviewer),
            None => self.assigned.is_empty(),
        }
    }

    /// Items of `reviewer`'s assignment (all items without assignments) and how many
    /// they have submitted: the lead's progress view.
    pub fn progress_of(&self, reviewer: &str) -> (usize, usize) {
        let mine: Vec<&Item> = self
            .items
            .iter()
            .filter(|i| self.assigned_to(&i.item_id, reviewer))
            .collect();
        let done = mine
            .iter()
            .filter(|i| self.blinding.submitted(&i.item_id, reviewer))
            .count();
        (done, mine.len())
    }

    /// Human reviewers with labels or assignments.
    fn reviewers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .labels
            .iter()
            .map(|l| l.reviewer.clone())
            .chain(self.assigned.values().flatten().cloned())
            .filter(|r| r != JUDGE && r != crate::core::annotation::FINAL)
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The newest note of `reviewer` on (item, criterion), if any.
    pub fn note_of(&self, item: &str, reviewer: &str, criterion: &str) -> Option<&str> {
        self.labels
            .iter()
            .rfind(|l| {
                l.item_id == item
                    && l.reviewer == reviewer
                    && l.criterion == criterion
                    && l.note
                        .as_deref()
                        .is_some_and(|n| !n.is_empty() && n != "undo")
            })
            .and_then(|l| l.note.as_deref())
    }

    /// This reviewer's active ms on `item` so far: this session's clock, started
    /// from the largest time their stored labels of it carry.
    pub fn active_ms_of(&mut self, item: &str) -> u64 {
        let me = self.reviewer.as_deref().unwrap_or_default();
        let stored = self
            .labels
            .iter()
            .filter(|l| l.item_id == item && l.reviewer == me)
            .filter_map(|l| l.active_ms)
            .max();
        if let Some(ms) = stored {
            self.clock.resume(item, ms);
        }
        self.clock.active_ms(item)
    }

    /// Hold `label` as pending and ask for its commit; the reviewer's own labels
    /// carry their active time on the item.
    fn send(&mut self, mut label: Label) -> Option<Effect> {
        if self.reviewer.as_deref() == Some(label.reviewer.as_str()) {
            label.active_ms = Some(self.active_ms_of(&label.item_id));
        }
        self.ticket += 1;
        self.pending.insert(self.ticket, label.clone());
        self.pressed.insert(self.ticket, std::time::Instant::now());
        self.status = Some("saving…".into());
        Some(Effect::SaveLabel {
            ticket: self.ticket,
            label,
        })
    }

    /// Queue a label decided elsewhere (a lead's final label from the Agreement
    /// pane): saved, waited for at quit and reported like the reviewer's own.
    pub fn queue_external(&mut self, label: Label) -> Option<Effect> {
        self.send(label)
    }

    /// A commit finished.
    pub fn on_saved(&mut self, ticket: u64, result: Result<f64, SaveError>) {
        let Some(label) = self.pending.remove(&ticket) else {
            return;
        };
        let pressed = self.pressed.remove(&ticket);
        match result {
            Ok(ms) => {
                self.last_save_ms = Some(ms);
                if let Some(t) = pressed {
                    let key_ms = t.elapsed().as_secs_f64() * 1e3;
                    self.key_to_saved_ms.push(key_ms);
                    tracing::info!(key_to_saved_ms = key_ms, commit_ms = ms, "label saved");
                }
                let revealed = self.blinding.reveal_at(&label.item_id).is_some();
                self.status = Some(
                    if revealed && label.reviewer != crate::core::annotation::FINAL {
                        format!(
                            "saved ✓ ({ms:.0} ms) · changed after reveal: kept and marked; agreement uses your blind label by default"
                        )
                    } else {
                        format!("saved ✓ ({ms:.0} ms)")
                    },
                );
                if Some(&label.reviewer) != self.reviewer.as_ref() || self.lead {
                    // Not the reviewer's own label (a final label): no undo entry.
                } else if label.label.is_some() {
                    self.history.push(label.clone());
                } else {
                    self.history.retain(|l| {
                        !(l.item_id == label.item_id && l.criterion == label.criterion)
                    });
                }
                self.labels.push(label);
                self.relabel();
            }
            Err(e) => {
                self.failed.push(format!(
                    "{} {} = {}: {e}",
                    label.item_id,
                    label.criterion,
                    label.label.as_deref().unwrap_or("(undo)")
                ));
                // A refusal would be refused again; a failed store may take it next
                // time, and the reviewer is told to give the label again.
                self.status = Some(match e {
                    SaveError::Refused(why) => format!("NOT saved (refused): {why}"),
                    SaveError::Failed(why) => {
                        format!("NOT saved (storing failed; give the label again): {why}")
                    }
                });
            }
        }
    }

    fn label_current(&mut self, value: &str) -> Option<Effect> {
        let (Some(me), Some(item)) = (
            self.reviewer.clone(),
            self.item().map(|i| i.item_id.clone()),
        ) else {
            return None;
        };
        // What the label needs from the shown rubric, owned (the pane changes below).
        let checked = {
            let rubric = self.shown_rubric();
            let c = rubric.criteria.get(self.criterion)?;
            if rubric.labels_of(c).iter().any(|l| l == value) {
                Ok((c.key.clone(), rubric.version.clone(), rubric.criteria.len()))
            } else {
                Err(format!("`{value}` is not a label of {}", c.name))
            }
        };
        let (criterion, version, criteria) = match checked {
            Ok(owned) => owned,
            Err(message) => {
                self.status = Some(message);
                return None;
            }
        };
        let note = match self.pending_note.take() {
            Some((key, note)) if key == criterion => {
                self.note_warned = false;
                Some(note)
            }
            // A note waiting for another criterion's label keeps waiting; relabelling
            // keeps the criterion's stored note.
            other => {
                self.pending_note = other;
                self.note_of(&item, &me, &criterion).map(str::to_string)
            }
        };
        let label = Label::new(
            &item,
            &me,
            &criterion,
            Some(value),
            note.as_deref(),
            &version,
        );
        if self.criterion + 1 < criteria {
            self.criterion += 1;
        }
        self.send(label)
    }

    fn undo(&mut self) -> Option<Effect> {
        let Some(last) = self.history.pop() else {
            self.status = Some("nothing to undo".into());
            return None;
        };
        let retract = Label::new(
            &last.item_id,
            &last.reviewer,
            &last.criterion,
            None,
            Some("undo"),
            &last.rubric_version,
        );
        if let Some(i) = self.items.iter().position(|i| i.item_id == last.item_id) {
            self.pos = i;
        }
        self.criterion = self
            .rubric
            .criteria
            .iter()
            .position(|c| c.key == last.criterion)
            .unwrap_or(0);
        self.send(retract)
    }

    fn goto(&mut self, pos: usize) {
        self.pos = pos.min(self.order.len().saturating_sub(1));
        self.criterion = 0;
        self.revealed = false;
        self.scroll = [Scroll::default(); 4];
        self.pending_note = None;
        self.note_warned = false;
    }

    /// Whether the reviewer may leave this item (move to another, or quit): not while
    /// a note waits for its criterion's label, the first time. That try is refused
    /// with what to do (`Some(why)`); the next one leaves, and the dropped note is
    /// named in the status and in the report printed on quitting.
    pub fn refuse_leaving(&mut self) -> Option<String> {
        let (key, note) = self.pending_note.as_ref()?;
        let name = self
            .rubric
            .criteria
            .iter()
            .find(|c| &c.key == key)
            .map_or_else(|| key.clone(), |c| c.name.clone());
        let item = self.item().map(|i| i.item_id.clone()).unwrap_or_default();
        if !self.note_warned {
            self.note_warned = true;
            let why = format!(
                "your note on {name} is not saved yet: label {name} to save it, or repeat the key to leave without it"
            );
            self.status = Some(why.clone());
            return Some(why);
        }
        let dropped = format!("note on item {item}, {name}: {}", clean(note));
        self.status = Some(format!("NOT saved: {dropped}"));
        self.dropped_notes.push(dropped);
        self.pending_note = None;
        self.note_warned = false;
        None
    }

    /// A note typed with `n`: attached to the current criterion's label (a new version
    /// with the same label), or to its next label when it has none yet.
    fn finish_note(&mut self, note: String) -> Option<Effect> {
        let (Some(me), Some(item)) = (
            self.reviewer.clone(),
            self.item().map(|i| i.item_id.clone()),
        ) else {
            return None;
        };
        let c = self.rubric.criteria.get(self.criterion)?.key.clone();
        if note.is_empty() {
            return None;
        }
        match self.label_of(&item, &me, &c).and_then(|l| l.label.clone()) {
            Some(v) => {
                let version = self.shown_rubric().version.clone();
                let label = Label::new(&item, &me, &c, Some(&v), Some(&note), &version);
                self.send(label)
            }
            None => {
                let name = self.rubric.criteria[self.criterion].name.clone();
                self.pending_note = Some((c, note));
                self.note_warned = false;
                self.status = Some(format!(
                    "note kept for {name}: it is saved with {name}'s label"
                ));
                None
            }
        }
    }
}

impl AnnotatePane {
    /// Asks who is labelling when no `--reviewer` was given.
    fn draw_reviewer_prompt(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        f.render_widget(
            Paragraph::new(vec![
                Line::styled(
                    "Who is labelling? Type your reviewer name and press enter.",
                    theme.text,
                ),
                Line::styled(
                    "(Labels are stored per reviewer; `raglab --reviewer NAME` skips this.)",
                    theme.muted,
                ),
                Line::raw(""),
                {
                    let mut name = self.reviewer_input.clone();
                    name.open_with(self.reviewer_input.text()); // always shows its cursor
                    name.line(theme.filter)
                },
                Line::styled(
                    clean(self.status.as_deref().unwrap_or_default()),
                    theme.error,
                ),
            ])
            .block(block(" Reviewer ".into(), true)),
            area,
        );
    }

    /// Reviewer, item position, items done, the set filter, the save status; for the
    /// lead, each reviewer's progress.
    fn draw_progress(&self, f: &mut Frame, progress: Rect, me: &str, theme: &Theme) {
        let me = clean(me);
        let done = self.done_count();
        let status = clean(self.status.as_deref().unwrap_or_default());
        let set = self
            .set_filter
            .as_ref()
            .map(|s| format!(" · set {}", clean(s)))
            .unwrap_or_default();
        let who = if self.lead {
            let each: Vec<String> = self
                .reviewers()
                .iter()
                .map(|r| {
                    let (d, n) = self.progress_of(r);
                    format!("{} {d}/{n}", clean(r))
                })
                .collect();
            format!(
                " lead {me} · item {}/{}{set} · submitted: {} ",
                self.pos + 1,
                self.order.len(),
                each.join(", ")
            )
        } else {
            format!(
                " {me} · item {}/{} · {done}/{} done{set} ",
                self.pos + 1,
                self.order.len(),
                self.order.len()
            )
        };
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(who, theme.title),
                Span::styled(
                    format!(" {status}"),
                    if status.starts_with("NOT") {
                        theme.error
                    } else {
                        theme.filter
                    },
                ),
                Span::styled(self.trust_note(), theme.muted),
            ])),
            progress,
        );
    }

    /// Last on the progress line: an unsigned study says so, and stored rows that do
    /// not count are named (the first; `raglab agree` lists them all).
    fn trust_note(&self) -> String {
        let signed = if self.roster.is_signed() {
            ""
        } else {
            " · unsigned study"
        };
        match self.refused.first() {
            Some(r) => format!(
                "{signed} · {} stored rows not counted: {}",
                self.refused.len(),
                clean(&r.why)
            ),
            None => signed.to_string(),
        }
    }

    /// One text, wrapped and scrolled, its position in the title.
    fn draw_text(&self, f: &mut Frame, area: Rect, i: usize, text: &str, theme: &Theme) {
        let width = usize::from(area.width.saturating_sub(2)).max(1);
        let rows = usize::from(area.height.saturating_sub(2));
        let lines = wrap(&clean(text), width);
        let mut geo = self.geometry.get();
        geo[i] = (rows, lines.len());
        self.geometry.set(geo);
        let (start, end) = self.scroll[i].window(rows, lines.len());
        let focused = self.focus == Some(i);
        let title = format!(
            " {} {}{} ",
            TEXTS[i],
            position(start, end, lines.len()),
            if focused && !self.zoom {
                " · enter zoom"
            } else {
                ""
            },
        );
        let body: Vec<Line> = lines[start..end]
            .iter()
            .map(|l| Line::styled(l.clone(), theme.text))
            .collect();
        f.render_widget(
            Paragraph::new(body).block(theme.block(title, focused)),
            area,
        );
    }

    /// The four texts side by side (or the focused one zoomed to the whole area).
    fn draw_texts(&self, f: &mut Frame, texts: Rect, item: &Item, theme: &Theme) {
        let all = [
            &item.question,
            &item.reference_answer,
            &item.target_chunk,
            &item.answer,
        ];
        if let (true, Some(i)) = (self.zoom, self.focus) {
            self.draw_text(f, texts, i, all[i], theme);
            return;
        }
        let cols = Layout::horizontal([Constraint::Ratio(1, 4); 4]).split(texts);
        for (i, (area, text)) in cols.iter().zip(all).enumerate() {
            self.draw_text(f, *area, i, text, theme);
        }
    }

    /// The rubric: each criterion with this reviewer's label and note and, once the
    /// item is revealed to them, the others' labels and notes; the note being typed.
    fn draw_rubric(&self, f: &mut Frame, rubric_area: Rect, item: &Item, me: &str, theme: &Theme) {
        // Computed once per draw, not once per criterion (a scan of every label).
        let others = self
            .shows_others(&item.item_id)
            .then(|| self.others(&item.item_id));
        let mut lines = Vec::new();
        let rubric = self.shown_rubric();
        for (i, c) in rubric.criteria.iter().enumerate() {
            lines.push(self.label_row(item, me, i, others.as_deref(), theme));
            let keys: Vec<String> = rubric
                .labels_of(c)
                .iter()
                .map(|l| format!("{}={l}", rubric.key_of(l)))
                .collect();
            lines.push(Line::styled(
                format!("      [{}] {}", keys.join(" "), c.definition),
                theme.muted,
            ));
            let notes = self.notes_on(&item.item_id, me, &c.key, others.as_deref());
            if !notes.is_empty() {
                lines.push(Line::styled(
                    format!("      {}", notes.join(" · ")),
                    theme.filter,
                ));
            }
        }
        let note = match (self.note_input.is_active(), &self.pending_note) {
            (true, _) => format!(" note: {}▏ ", clean(self.note_input.text())),
            (false, Some((key, n))) => format!(" note for {} ready: {} ", clean(key), clean(n)),
            _ => String::new(),
        };
        let n = self.rubric.criteria.len();
        f.render_widget(
            Paragraph::new(lines).block(theme.block(
                format!(
                    " Rubric {} v{} · 1-{n} pick · label keys in [ ] · n note · [ ] items · u unlabelled · z undo · r reveal · h/l text · ? help{note}",
                    clean(&rubric.name),
                    clean(&rubric.version)
                ),
                self.focus.is_none(),
            )),
            rubric_area,
        );
    }

    /// Criterion `i`'s row: its name, this reviewer's label (the rubric's first label
    /// in the pass colour, any other in the fail colour), "saving…" while a commit is
    /// out, then each other's label when `others` may be shown (a disagreement in the
    /// error colour) or a reminder that they are hidden.
    fn label_row(
        &self,
        item: &Item,
        me: &str,
        i: usize,
        others: Option<&[String]>,
        theme: &Theme,
    ) -> Line<'static> {
        let c = &self.rubric.criteria[i];
        let mine = self
            .label_of(&item.item_id, me, &c.key)
            .and_then(|l| l.label.clone());
        let pending = self
            .pending
            .values()
            .any(|l| l.item_id == item.item_id && l.criterion == c.key);
        let first = self.shown_rubric().labels_of(c).first().cloned();
        let style = |v: &Option<String>| match v {
            None => theme.muted,
            Some(v) if Some(v) == first.as_ref() => theme.pass,
            Some(_) => theme.fail,
        };
        let selected = i == self.criterion;
        let mut spans = vec![
            Span::styled(
                format!(
                    "{}{} {:<20}",
                    if selected { "▶" } else { " " },
                    i + 1,
                    c.name
                ),
                if selected { theme.selected } else { theme.text },
            ),
            Span::styled(
                format!(" {:<7}", mine.clone().unwrap_or_else(|| "-".into())),
                style(&mine),
            ),
            Span::styled(if pending { " saving… " } else { "         " }, theme.muted),
        ];
        match others {
            Some(others) => {
                for other in others {
                    let theirs = self
                        .label_of(&item.item_id, other, &c.key)
                        .and_then(|l| l.label.clone());
                    let disagree = theirs.is_some() && theirs != mine;
                    spans.push(Span::styled(
                        format!(
                            " {}: {}",
                            clean(other),
                            clean(&theirs.clone().unwrap_or_else(|| "-".into()))
                        ),
                        if disagree {
                            theme.error
                        } else {
                            style(&theirs)
                        },
                    ));
                }
            }
            None if !self.lead => {
                spans.push(Span::styled(" (others hidden: blind)", theme.muted));
            }
            None => {}
        }
        Line::from(spans)
    }

    /// This reviewer's note on a criterion and, when `others` may be shown, theirs.
    fn notes_on(
        &self,
        item: &str,
        me: &str,
        criterion: &str,
        others: Option<&[String]>,
    ) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(n) = self.note_of(item, me, criterion) {
            notes.push(format!("your note: {}", clean(n)));
        }
        for other in others.unwrap_or_default() {
            if let Some(n) = self.note_of(item, other, criterion) {
                notes.push(format!("{}'s note: {}", clean(other), clean(n)));
            }
        }
        notes
    }

    /// Rows the rubric block needs: two per criterion, one more per criterion with
    /// notes to show.
    fn rubric_rows(&self, item: &Item, me: &str) -> u16 {
        let notes = self
            .rubric
            .criteria
            .iter()
            .filter(|c| {
                self.labels.iter().any(|l| {
                    l.item_id == item.item_id
                        && l.criterion == c.key
                        && (l.reviewer == me || self.shows_others(&item.item_id))
                        && l.note
                            .as_deref()
                            .is_some_and(|n| !n.is_empty() && n != "undo")
                })
            })
            .count();
        (self.rubric.criteria.len() * 2 + notes + 2) as u16
    }

    /// Whether the rubric shows the others' (and the judge's) labels and notes on
    /// `item`: asked for (`r`, or always for the lead) and allowed by blinding.
    fn shows_others(&self, item: &str) -> bool {
        (self.revealed || self.lead) && self.blinding.visible(&self.viewer(), item)
    }

    /// Other reviewers (and the judge) with labels on this item.
    fn others(&self, item: &str) -> Vec<String> {
        let me = self.reviewer.as_deref().unwrap_or_default();
        let mut v: Vec<String> = self
            .labels
            .iter()
            .filter(|l| l.item_id == item && l.reviewer != me)
            .map(|l| l.reviewer.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// In a study with a roster, a name is taken only from the holder of its key.
    pub fn check_key(&self, name: &str) -> Result<(), String> {
        if !self.roster.is_signed() {
            return Ok(());
        }
        let me = self.my_key.as_deref().unwrap_or_default();
        match self.roster.key_of(name) {
            Some(k) if k == me => Ok(()),
            Some(k) => Err(format!(
                "you are not {name} on this study's roster: {name}'s key is {}, yours is {}",
                short(k),
                short(me)
            )),
            None => Err(format!(
                "{name} is not on this study's roster: the study lead adds your key ({me})"
            )),
        }
    }

    fn select_criterion(&mut self, n: usize) {
        self.criterion = n.min(self.rubric.criteria.len().saturating_sub(1));
    }

    /// Keys while the reviewer's name is asked for: a name is taken only when it is
    /// well formed and, in a signed study, this user's key is on the roster under it.
    fn update_name_prompt(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::SubmitInput if !self.reviewer_input.text().trim().is_empty() => {
                let name = self.reviewer_input.text().trim().to_string();
                let read = if self.study_read {
                    Ok(())
                } else {
                    Err("the study is still being read (its roster decides who may take a name): press enter again in a moment".to_string())
                };
                match read
                    .and_then(|()| crate::core::annotation::check_reviewer(&name))
                    .and_then(|()| self.check_key(&name))
                {
                    Ok(()) => {
                        self.reviewer = Some(name);
                        self.status = None;
                        self.reviewer_input.submit();
                        self.relabel();
                        self.rebuild_order();
                        // Every other view was drawn for no one: redraw them all.
                        return Some(Effect::IdentityChanged);
                    }
                    Err(e) => self.status = Some(e),
                }
            }
            Action::InputBackspace => {
                self.reviewer_input.backspace();
            }
            _ => {}
        }
        None
    }

    /// Keys while a note is typed: enter keeps it (for the next label), esc drops it.
    fn update_note(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::SubmitInput => {
                let note = self.note_input.text().trim().to_string();
                self.note_input.cancel();
                return self.finish_note(note);
            }
            Action::CancelInput => {
                self.note_input.cancel();
            }
            Action::InputBackspace => {
                self.note_input.backspace();
            }
            _ => {}
        }
        None
    }

    /// Keys that pick a criterion, label, note, undo or move between items.
    /// `Some(effect)` when the key was one of them (the effect itself may be none).
    fn update_labelling(&mut self, action: Action) -> Option<Option<Effect>> {
        let criterion = match action {
            Action::SelectCriterion1 => Some(0),
            Action::SelectCriterion2 => Some(1),
            Action::SelectCriterion3 => Some(2),
            Action::SelectCriterion4 => Some(3),
            Action::SelectCriterion5 => Some(4),
            Action::SelectCriterion6 => Some(5),
            Action::SelectCriterion7 => Some(6),
            Action::SelectCriterion8 => Some(7),
            Action::SelectCriterion9 => Some(8),
            Action::Down => Some(self.criterion + 1),
            _ => None,
        };
        if let Some(n) = criterion {
            self.select_criterion(n);
            return Some(None);
        }
        Some(match action {
            Action::Up => {
                self.criterion = self.criterion.saturating_sub(1);
                None
            }
            Action::LabelKey(c) => {
                let rubric = self.shown_rubric();
                let label = rubric
                    .criteria
                    .get(self.criterion)
                    .and_then(|cr| rubric.label_for_key(cr, c))
                    .map(str::to_string);
                label.and_then(|l| self.label_current(&l))
            }
            Action::LabelPass => self.label_current("pass"),
            Action::LabelFail => self.label_current("fail"),
            Action::AddNote if !self.lead => {
                self.note_input.open();
                None
            }
            Action::UndoLabel if !self.lead => self.undo(),
            Action::NextItem | Action::PrevItem | Action::FirstUnlabelled
                if self.refuse_leaving().is_some() =>
            {
                None
            }
            Action::NextItem => {
                self.goto(self.pos + 1);
                None
            }
            Action::PrevItem => {
                self.goto(self.pos.saturating_sub(1));
                None
            }
            Action::FirstUnlabelled => {
                self.first_unlabelled();
                None
            }
            _ => return None,
        })
    }

    /// Keys that change only what is shown: reveal, focus, scroll, zoom, item set.
    fn update_view(&mut self, action: Action) {
        match action {
            Action::Reveal => self.toggle_reveal(),
            Action::FocusRight => self.move_focus(true),
            Action::FocusLeft => self.move_focus(false),
            Action::ScrollDown => self.scroll_text(ScrollMove::Line(1)),
            Action::ScrollUp => self.scroll_text(ScrollMove::Line(-1)),
            Action::PageDown => self.scroll_text(ScrollMove::Page(1)),
            Action::PageUp => self.scroll_text(ScrollMove::Page(-1)),
            Action::Top => self.scroll_text(ScrollMove::Top),
            Action::Bottom => self.scroll_text(ScrollMove::Bottom),
            Action::Zoom => {
                if self.focus.is_none() {
                    self.focus = Some(3);
                }
                self.zoom = !self.zoom;
            }
            Action::CloseOverlay => {
                self.zoom = false;
                self.guidelines = false;
            }
            Action::ShowGuidelines => self.guidelines = !self.guidelines,
            Action::CycleSet if self.refuse_leaving().is_none() => self.cycle_set(),
            _ => {}
        }
    }

    fn first_unlabelled(&mut self) {
        match self
            .order
            .iter()
            .position(|&n| !self.complete(&self.items[n].item_id))
        {
            Some(p) => self.goto(p),
            None => self.status = Some("every item is labelled".into()),
        }
    }

    /// `r`: the other labels show only once blinding allows this viewer to see them;
    /// otherwise say what the item still waits for.
    fn toggle_reveal(&mut self) {
        let item = self.item().map(|i| i.item_id.clone()).unwrap_or_default();
        if self.blinding.visible(&self.viewer(), &item) {
            self.revealed = !self.revealed;
            return;
        }
        let me = self.reviewer.clone().unwrap_or_default();
        // Says nothing of how many reviewers the item has, so a gold item (which
        // every reviewer labels) reads like any other.
        let waiting = if self.blinding.submitted(&item, &me) {
            "waiting for its other reviewers to submit it"
        } else {
            "label every criterion of this item first"
        };
        self.status = Some(format!(
            "blind until every reviewer of this item submits it: {waiting}"
        ));
    }

    /// Focus cycles through none and the four texts; zoom needs a focused text.
    fn move_focus(&mut self, right: bool) {
        self.focus = match (self.focus, right) {
            (None, true) => Some(0),
            (Some(3), true) => None,
            (Some(i), true) => Some(i + 1),
            (None, false) => Some(3),
            (Some(0), false) => None,
            (Some(i), false) => Some(i - 1),
        };
        self.zoom = self.zoom && self.focus.is_some();
    }

    /// `s`: all sets, then each set in turn, then all sets again.
    fn cycle_set(&mut self) {
        let sets = self.sets();
        self.set_filter = match &self.set_filter {
            None => sets.first().cloned(),
            Some(s) => sets
                .iter()
                .position(|x| x == s)
                .and_then(|i| sets.get(i + 1).cloned()),
        };
        self.rebuild_order();
        self.goto(0);
        self.status = Some(match &self.set_filter {
            Some(s) => format!("items of set {s}"),
            None => "all sets".into(),
        });
    }
}

impl PaneView for AnnotatePane {
    /// Apply an action; a label to commit is returned as an effect. Until a reviewer
    /// is named, keys go to the name prompt; while a note is typed, to the note.
    fn update(&mut self, action: Action) -> Option<Effect> {
        if self.reviewer.is_none() {
            return self.update_name_prompt(action);
        }
        // The interval since the previous key goes to the item shown during it.
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let shown = self.item().map(|i| i.item_id.clone());
        self.clock.key(now, shown.as_deref());
        let effect = if self.note_input.is_active() {
            self.update_note(action)
        } else if let Some(effect) = self.update_labelling(action) {
            effect
        } else {
            self.update_view(action);
            None
        };
        let shown = self.item().map(|i| i.item_id.clone());
        self.clock.shown(shown.as_deref());
        effect
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        let Some(me) = &self.reviewer else {
            self.draw_reviewer_prompt(f, area, theme);
            return;
        };
        let Some(item) = self.item() else {
            f.render_widget(
                Paragraph::new(if self.items.is_empty() {
                    "No annotation items: create them with `raglab annotate create --from-run RUN` or `--from-file FILE`, or press `a` on an answer in the Generate pane."
                } else {
                    "No items for you here: none is assigned to you (`raglab annotate assign`) or in the chosen set (`s` cycles sets)."
                })
                    .style(theme.muted)
                    .block(block(" Annotate ".into(), false)),
                area,
            );
            return;
        };
        let [progress, rest] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(4)]).areas(area);
        self.draw_progress(f, progress, me, theme);
        if self.zoom {
            self.draw_texts(f, rest, item, theme);
            return;
        }
        let [texts, rubric_area] = Layout::vertical([
            Constraint::Min(8),
            Constraint::Length(self.rubric_rows(item, me)),
        ])
        .areas(rest);
        self.draw_texts(f, texts, item, theme);
        self.draw_rubric(f, rubric_area, item, me, theme);
        if self.guidelines {
            guidelines::draw(f, area, &self.rubric, self.criterion, theme);
        }
    }

    /// Whether typed characters go to a text field (reviewer name or note).
    fn editing(&self) -> bool {
        self.reviewer.is_none() || self.note_input.is_active()
    }

    fn input_char(&mut self, c: char) {
        if self.note_input.is_active() {
            self.note_input.push(c);
        } else {
            self.reviewer_input.push(c);
        }
    }
}

#[cfg(test)]
mod tests;
