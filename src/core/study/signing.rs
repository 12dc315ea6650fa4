//! Who is who in a study: the roster of reviewers' public keys, the exact bytes each
//! study row is signed over, and the rules that decide which rows count.
//!
//! Every label, note, adjudication and assignment row carries its writer's public
//! key (`signer`) and an ed25519 signature over *all* its other fields, encoded
//! canonically ([`label_bytes`], [`assignment_bytes`], [`roster_bytes`]): each field
//! in a fixed order, length-prefixed, with a tag per record type, so no two
//! different rows share their bytes and a changed field (a label, a note, a clock)
//! breaks the signature. The cryptography itself lives outside `core` (the rules
//! here take a `verify` function), so this module stays pure.
//!
//! Every signature is bound to its study: the signed bytes of a row carry the
//! study's id, the signature of the lead's founding roster entry (unique to that
//! lead and moment, and made by no one else). So a genuine row copied from another
//! study whose roster holds the same keys (a pilot on the same answers, last year's
//! study) does not verify here. Studies founded before ids existed keep their
//! unbound (v1) signatures and say so ([`Binding::Unbound`]).
//!
//! The roster is written by the lead: its first entry is the lead's own, signed by
//! the lead's key; every later entry must be signed by that key. A study without a
//! roster is an *unsigned* study (every study before keys existed): its rows all
//! count, and every view says it is unsigned. With a roster, a row counts only when
//! it is signed by the key the roster gives its claimed author *where the row was
//! written*; otherwise it is left out and named.
//!
//! Roster entries have a position: each signs how many label rows were stored when
//! it was written (`label_rows`). A name's first entry is in force from the start of
//! the label log (a reviewer added late may have labelled with their key before); each
//! later entry for the name (a key rotation, a removal) from its position. So rotating
//! a key keeps every label signed with the old key before the rotation, a label signed
//! with the old key after it is refused (a stolen key outlives no re-key), and a
//! removed reviewer's later labels are refused while their earlier ones count. A
//! roster row whose signed fields repeat an earlier counted row's (a byte-for-byte copy,
//! appended to bring an old key back) is refused and named, as is one whose position
//! lies before the entry it follows (the log was rewritten).
//!
//! Repeats: every signed row (roster, assignment, gold, pair order) that repeats an
//! earlier counted row of its log is refused and named, in a signed study and in an
//! unsigned one alike. A repeat is told by the row's signed fields, never by the text of
//! its signature: a copy whose signature is written in capital hex digits verifies all
//! the same. Two rows raglab writes never share their fields (each carries its writer's
//! clock in nanoseconds, and rows of one batch differ by item), so only a copy repeats.
//! Why it matters: assignments and gold rows are read newest-wins (a re-assignment and
//! a changed expected label are the newest row), so a copy of an old row appended after
//! the newest would undo a re-assignment or bring an old expected label back.
//!
//! Pair orders (which run a pair item shows first) are read first-wins: an item's
//! order is fixed when the item is made, so any later row for it (a copy, or one with
//! the runs swapped to invert the ranking) is refused and named. Under a roster they
//! count only when signed by the lead's key.
//!
//! Items (what reviewers label: question, reference, target chunk, answer) are read
//! first-wins too, and under a roster only the lead's sealed rows are items. Why:
//! item ids can be foreseen (an item made from an answer takes the answer's id, which
//! names its run and question), so a member who can append could otherwise write an
//! item row under the id of one the lead is about to make, and first-wins would show
//! every reviewer the member's text. An unsealed row is passed over without a word
//! when the lead sealed an item of its id (the lead seals the items of an unsigned
//! study when founding its roster, after their unsealed rows); one whose id has no
//! sealed item is refused and named.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::core::annotation::{Assignment, FINAL, Item, Label};
use crate::core::gold::GoldLabel;
use crate::core::preference::PairItem;

/// The role of a roster entry that leads the study.
pub const LEAD: &str = "lead";
/// The role of a roster entry that reviews items.
pub const REVIEWER: &str = "reviewer";
/// The role of a roster entry that removes a reviewer (from its position on).
pub const REMOVED: &str = "removed";

/// One roster row: a name and its public key, signed by the lead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RosterEntry {
    pub name: String,
    /// [`LEAD`] or [`REVIEWER`].
    pub role: String,
    /// ed25519 public key, 64 hex digits.
    pub public_key: String,
    pub added_at: String,
    pub signer: Option<String>,
    pub signature: Option<String>,
    /// On the founding entry of a bound study: 32 random hex digits, so that its
    /// signature (the study id) differs between two studies one lead founds in the
    /// same second. Added with study ids, so nullable and last.
    #[serde(default)]
    pub nonce: Option<String>,
    /// Label rows stored when the entry was written: a rotation or removal is in
    /// force from there. Added with positions, so nullable and last (an entry
    /// without it is in force from the start, as every entry was before).
    #[serde(default)]
    pub label_rows: Option<u64>,
}

/// A stored row that does not count, and why (one sentence naming the row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The item the row is about (none for a roster entry).
    pub item: Option<String>,
    /// The refused row's own id where it has one (a label's `label_id`): a view that
    /// holds the row since writing it lets it go once a read refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<String>,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// What the signatures of a study's rows are bound to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Binding {
    /// Signed bytes without a study id (v1): a study whose roster an earlier raglab
    /// founded, or one with no roster yet. A row signed so for one study verifies
    /// in any other study whose roster gives its author the same key.
    #[default]
    Unbound,
    /// The study's id (the founding lead entry's signature, 128 hex digits) is in
    /// every row's signed bytes (v2).
    Study(String),
}

impl Binding {
    /// The tagged start of a row's signed bytes: `record` v1 without a study id,
    /// v2 followed by the id.
    pub(crate) fn canon(&self, record: &str) -> Canon {
        match self {
            Self::Unbound => Canon::new(&format!("raglab {record} v1")),
            Self::Study(id) => {
                let mut c = Canon::new(&format!("raglab {record} v2"));
                c.str(id);
                c
            }
        }
    }

    /// The study id, if bound.
    pub fn study_id(&self) -> Option<&str> {
        match self {
            Self::Unbound => None,
            Self::Study(id) => Some(id),
        }
    }
}

/// Checks one signature: (public key hex, message, signature hex) -> valid.
pub type Verify<'a> = &'a dyn Fn(&str, &[u8], &str) -> bool;

/// Canonical bytes: a record tag, then each field as a presence byte, a u64
/// length and the bytes, so field boundaries can never be shifted.
/// Length-tagged canonical bytes of a row, built field by field ([`Binding::canon`]).
pub(crate) struct Canon(pub(crate) Vec<u8>);

impl Canon {
    fn new(tag: &str) -> Self {
        let mut c = Self(Vec::with_capacity(256));
        c.str(tag);
        c
    }
    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.opt(Some(s))
    }
    pub(crate) fn opt(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.0.push(0),
            Some(s) => {
                self.0.push(1);
                self.0.extend_from_slice(&(s.len() as u64).to_le_bytes());
                self.0.extend_from_slice(s.as_bytes());
            }
        }
        self
    }
    pub(crate) fn num(&mut self, n: Option<u64>) -> &mut Self {
        match n {
            None => self.0.push(0),
            Some(n) => {
                self.0.push(2);
                self.0.extend_from_slice(&n.to_le_bytes());
            }
        }
        self
    }
}

/// The bytes a label row is signed over in a study bound as `study`: every field but
/// the signature (the signer's key included, so a row cannot be re-attributed to
/// another key).
pub fn label_bytes(l: &Label, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("label");
    c.str(&l.label_id)
        .str(&l.item_id)
        .str(&l.reviewer)
        .str(&l.criterion)
        .opt(l.label.as_deref())
        .opt(l.note.as_deref())
        .str(&l.timestamp)
        .num(Some(l.seq))
        .str(&l.rubric_version)
        .opt(l.adjudicator.as_deref())
        .opt(l.signer.as_deref());
    if let Binding::Study(_) = study {
        c.num(l.log_rows);
    }
    // Signed only when present, so every earlier label keeps its exact bytes; the
    // field is length-tagged, so it can be neither stripped nor added.
    if l.active_ms.is_some() {
        c.num(l.active_ms);
    }
    c.0
}

/// The bytes an assignment row is signed over in a study bound as `study` (every
/// field but the signature). `more_reviewers` (k of n) is signed only when present,
/// so every pair assignment keeps the exact bytes it was signed over before k-of-n
/// assignments; since every field is length-prefixed, a row with it and a row
/// without it never share bytes, so it can be neither stripped nor added.
pub fn assignment_bytes(a: &Assignment, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("assignment");
    c.str(&a.item_id)
        .str(&a.first)
        .str(&a.second)
        .str(&a.assigned_at)
        .num(Some(a.seq))
        .num(a.label_rows)
        .opt(a.signer.as_deref());
    if a.more_reviewers.is_some() {
        c.opt(a.more_reviewers.as_deref());
    }
    c.0
}

/// The bytes a gold row (an expected label the lead set) is signed over in a study
/// bound as `study` (every field but the signature; a tag of its own).
pub fn gold_bytes(g: &GoldLabel, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("gold");
    c.str(&g.item_id)
        .str(&g.criterion)
        .opt(g.label.as_deref())
        .str(&g.set_at)
        .num(Some(g.seq))
        .opt(g.signer.as_deref());
    if g.log_rows.is_some() {
        // Signed only when present, so earlier rows keep their exact bytes
        // (type-tagged: it can be neither stripped nor added).
        c.num(g.log_rows);
    }
    c.0
}

/// The bytes a pair order (which run a pair item shows first) is signed over in a
/// study bound as `study` (every field but the signature; a tag of its own).
pub fn pair_order_bytes(p: &PairItem, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("pair order");
    c.str(&p.item_id)
        .str(&p.question_id)
        .str(&p.first_run)
        .str(&p.first_answer_id)
        .str(&p.second_run)
        .str(&p.second_answer_id)
        .num(Some(p.seed))
        .opt(p.signer.as_deref());
    c.0
}

/// The bytes an item row is sealed over by the lead in a study bound as `study`
/// (every field but the signature; a tag of its own).
pub fn item_bytes(i: &Item, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("item");
    c.str(&i.item_id)
        .str(&i.set)
        .str(&i.question)
        .str(&i.reference_answer)
        .str(&i.target_chunk)
        .str(&i.answer)
        .opt(i.answer_id.as_deref())
        .opt(i.signer.as_deref());
    c.0
}

/// The bytes a roster row after the founding one is signed over in a study bound as
/// `study` (every field but the signature).
pub fn roster_bytes(r: &RosterEntry, study: &Binding) -> Vec<u8> {
    roster_fields(study.canon("roster"), r)
}

/// The bytes the lead's founding entry is signed over: its signature becomes the
/// study id, so these bytes carry no id themselves (a tag of their own keeps them
/// apart from every other record).
pub fn founding_bytes(r: &RosterEntry) -> Vec<u8> {
    roster_fields(Canon::new("raglab study founding v2"), r)
}

fn roster_fields(mut c: Canon, r: &RosterEntry) -> Vec<u8> {
    if r.nonce.is_some() {
        // Only rows that carry a nonce sign it: v1 rows keep their exact bytes.
        c.opt(r.nonce.as_deref());
    }
    c.str(&r.name)
        .str(&r.role)
        .str(&r.public_key)
        .str(&r.added_at)
        .opt(r.signer.as_deref());
    if r.label_rows.is_some() {
        // Signed only when present, so every earlier entry keeps its exact bytes
        // (length-tagged: it can be neither stripped nor added).
        c.num(r.label_rows);
    }
    c.0
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// The bytes of a hex string (either case); `None` when it is not hex.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    s.as_bytes()
        .chunks(2)
        .map(|p| u8::try_from(digit(p[0])? * 16 + digit(p[1])?).ok())
        .collect()
}

/// Check a public key as typed: 64 hex digits (an ed25519 key's 32 bytes).
pub fn check_public_key(key: &str) -> Result<String, String> {
    let key = key.trim().to_ascii_lowercase();
    match from_hex(&key) {
        Some(b) if b.len() == 32 => Ok(key),
        _ => Err(format!(
            "`{}` is not a public key: give the 64 hex digits `raglab study key` prints",
            crate::core::text::sanitize_for_terminal(&key)
        )),
    }
}

/// The first hex digits of a key, for messages.
pub fn short(key: &str) -> String {
    key.chars().take(12).collect::<String>() + "…"
}

/// Why a row's seal does not hold, said after "is not signed by …'s key". `bytes`
/// gives the row's signed bytes under a binding: the study's own, and for a bound
/// study the unbound form too, to name a row signed without the study's id.
pub(super) fn seal_fault(
    signer: Option<&str>,
    signature: Option<&str>,
    want: &str,
    study: &Binding,
    bytes: &dyn Fn(&Binding) -> Vec<u8>,
    verify: Verify,
) -> Option<String> {
    match (signer, signature) {
        (None, _) | (_, None) => Some(" (it carries no signature)".into()),
        (Some(k), _) if k != want => Some(format!(" (it is signed by key {})", short(k))),
        (Some(k), Some(sig)) if !verify(k, &bytes(study), sig) => Some(match study {
            Binding::Unbound => " (its signature does not match its fields)".into(),
            Binding::Study(_) if verify(k, &bytes(&Binding::Unbound), sig) => {
                " (it is signed without this study's id: written before the roster was founded, or taken from another study)".into()
            }
            Binding::Study(_) => {
                " (its signature does not match its fields and this study's id)".into()
            }
        }),
        _ => None,
    }
}

/// The verified roster: who holds which key, and who leads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roster {
    /// (name, key) of the lead.
    lead: Option<(String, String)>,
    /// name -> (first stored label position in force, its key; none once
    /// removed), in roster order (the lead's name included).
    keys: BTreeMap<String, Vec<(usize, Option<String>)>>,
    /// Whether any roster row exists (a study with a roster is a signed study).
    present: bool,
    /// What the study's signatures are bound to (set by the founding entry).
    binding: Binding,
    /// The founding entry's signature (the study id of a bound study; in an unbound
    /// one, the v1 signature of the lead's entry): what a workspace remembers of the
    /// study it holds.
    founding: Option<String>,
}

impl Roster {
    /// The roster of `rows` (in log order) and the rows refused: the first lead entry
    /// signed by its own key founds it; later entries count when the lead's key
    /// signed them, once each and in label-row order (a later entry for a name gives
    /// it a new key, or removes it, from its position on).
    pub fn from_rows(rows: &[RosterEntry], verify: Verify) -> (Self, Vec<Refusal>) {
        let mut out = Self {
            present: !rows.is_empty(),
            ..Self::default()
        };
        let mut refused = Vec::new();
        let mut seen = Counted::default();
        let mut last_from = 0;
        for r in rows {
            // Every field but the signature (the founding entry's too: a nonce is
            // in them when present).
            let fields = roster_bytes(r, &Binding::Unbound);
            let repeated = seen.repeats(&fields);
            let from = r.label_rows.unwrap_or(0);
            let result = if repeated {
                Err(" repeats an earlier roster entry (a copied row changes nothing)".into())
            } else if from < last_from {
                Err(format!(
                    " is in force from label row {from}, before the entry it follows (from row {last_from}): the log was rewritten"
                ))
            } else {
                out.admit(r, verify)
            };
            match result {
                Err(why) => refused.push(Refusal {
                    item: None,
                    row: None,
                    why: format!("roster entry {}{why}", r.name),
                }),
                Ok(()) => {
                    seen.count(fields);
                    last_from = from;
                }
            }
        }
        (out, refused)
    }

    fn admit(&mut self, r: &RosterEntry, verify: Verify) -> Result<(), String> {
        crate::core::annotation::check_reviewer(&r.name).map_err(|e| format!(": {e}"))?;
        let key = check_public_key(&r.public_key).map_err(|e| format!(": {e}"))?;
        let from = usize::try_from(r.label_rows.unwrap_or(0)).unwrap_or(usize::MAX);
        if let Some(other) = self.name_of(&key).filter(|n| *n != r.name) {
            return Err(format!(" gives {other}'s key to a second name"));
        }
        let sig = (r.signer.as_deref(), r.signature.as_deref());
        let lead = self.lead.clone();
        match (lead, r.role.as_str()) {
            (None, LEAD) => {
                // A founding entry in the bound form founds a bound study whose id
                // is its signature; one in the v1 form, an unbound study.
                let bound = sig
                    .1
                    .filter(|s| sig.0 == Some(&key) && verify(&key, &founding_bytes(r), s));
                if let Some(id) = bound {
                    self.binding = Binding::Study(id.to_string());
                } else if let Some(why) = seal_fault(
                    sig.0,
                    sig.1,
                    &key,
                    &Binding::Unbound,
                    &|b| roster_bytes(r, b),
                    verify,
                ) {
                    return Err(format!(" (lead) is not signed by its own key{why}"));
                }
                self.lead = Some((r.name.clone(), key.clone()));
                self.founding = sig.1.map(str::to_string);
            }
            (None, _) => {
                return Err(
                    " comes before the roster has a lead (the lead's own entry comes first)".into(),
                );
            }
            (Some((lead, lead_key)), role) => {
                let bytes = |b: &Binding| roster_bytes(r, b);
                if let Some(why) =
                    seal_fault(sig.0, sig.1, &lead_key, &self.binding, &bytes, verify)
                {
                    return Err(format!(" is not signed by the lead's key{why}"));
                }
                if r.name == *lead {
                    return Err(format!(" names the lead ({lead}) as a reviewer"));
                }
                match role {
                    REVIEWER => {}
                    REMOVED if self.key_of(&r.name) == Some(key.as_str()) => {
                        self.keys
                            .entry(r.name.clone())
                            .or_default()
                            .push((from, None));
                        return Ok(());
                    }
                    REMOVED => {
                        return Err(format!(
                            " removes {} with key {}, which is not {}'s key on the roster",
                            r.name,
                            short(&key),
                            r.name
                        ));
                    }
                    _ => {
                        return Err(format!(
                            " claims role `{role}`, but the study has its lead ({lead})"
                        ));
                    }
                }
            }
        }
        self.keys
            .entry(r.name.clone())
            .or_default()
            .push((from, Some(key)));
        Ok(())
    }

    /// Whether the study has a roster (its rows must be signed).
    pub fn is_signed(&self) -> bool {
        self.present
    }

    /// What the study's signatures are bound to: every row this study counts is
    /// signed over bytes made with it, and every row written for it must be.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// The signature of the entry that founded the roster: the study id of a bound
    /// study, the lead's v1 signature in an unbound one; none without a lead.
    pub fn founding(&self) -> Option<&str> {
        self.founding.as_deref()
    }

    /// The lead's name and key.
    pub fn lead(&self) -> Option<(&str, &str)> {
        self.lead.as_ref().map(|(n, k)| (n.as_str(), k.as_str()))
    }

    /// The key the roster gives `name` now (its newest entry; none once removed).
    pub fn key_of(&self, name: &str) -> Option<&str> {
        self.keys.get(name)?.last()?.1.as_deref()
    }

    /// The key in force for `name` at stored label position `pos`: its newest entry
    /// made at or before it, its first entry before any was made; `Err` with the
    /// position it was removed at when the entry in force removes it, `Ok(None)`
    /// when the name is on no roster entry.
    pub fn key_at(&self, name: &str, pos: usize) -> Result<Option<&str>, usize> {
        let Some(v) = self.keys.get(name) else {
            return Ok(None);
        };
        let entry = v.iter().rev().find(|(from, _)| *from <= pos).or(v.first());
        match entry {
            Some((from, None)) => Err(*from),
            Some((_, Some(k))) => Ok(Some(k.as_str())),
            None => Ok(None),
        }
    }

    /// The name the roster gives `key` now.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(n, _)| self.key_of(n) == Some(key))
            .map(|(n, _)| n.as_str())
    }

    /// Every (name, role, key), the lead first.
    pub fn entries(&self) -> Vec<(&str, &'static str, &str)> {
        let lead = self.lead.as_ref().map(|(n, _)| n.as_str());
        let mut v: Vec<(&str, &'static str, &str)> = self
            .keys
            .keys()
            .filter_map(|n| Some((n, self.key_of(n)?)))
            .map(|(n, k)| {
                let role = if Some(n.as_str()) == lead {
                    LEAD
                } else {
                    REVIEWER
                };
                (n.as_str(), role, k)
            })
            .collect();
        v.sort_by_key(|(n, role, _)| (*role != LEAD, n.to_string()));
        v
    }
}

/// Rows that count, with their positions in the stored log, and those refused.
#[derive(Debug, Clone)]
pub struct Checked<T> {
    pub kept: Vec<T>,
    /// Position in the stored log of each kept row.
    pub rows: Vec<usize>,
    /// One per refused row, naming it and why.
    pub refused: Vec<Refusal>,
}

impl<T> Checked<T> {
    /// Keep `row`, stored at `pos`, or refuse it with `fault`, naming `item` (and the
    /// row's own id, where it has one); returns whether it was kept.
    fn keep_or_refuse(
        &mut self,
        row: T,
        pos: usize,
        item: &str,
        row_id: Option<&str>,
        fault: Option<String>,
    ) -> bool {
        match fault {
            Some(why) => {
                self.refused.push(Refusal {
                    item: Some(item.to_string()),
                    row: row_id.map(str::to_string),
                    why,
                });
                false
            }
            None => {
                self.kept.push(row);
                self.rows.push(pos);
                true
            }
        }
    }
}

/// Why a row the lead must sign is not signed by the roster's lead key (None: it
/// is), as a suffix after "is not signed by the lead's key".
fn lead_seal_fault(
    roster: &Roster,
    signer: Option<&str>,
    signature: Option<&str>,
    bytes: &dyn Fn(&Binding) -> Vec<u8>,
    verify: Verify,
) -> Option<String> {
    let key = roster.lead().map_or("", |(_, k)| k);
    seal_fault(signer, signature, key, roster.binding(), bytes, verify)
}

impl<T> Default for Checked<T> {
    fn default() -> Self {
        Self {
            kept: Vec::new(),
            rows: Vec::new(),
            refused: Vec::new(),
        }
    }
}

/// The signed fields of the rows of one log counted so far, to tell a row that
/// repeats one of them (see the module's rule on repeats).
#[derive(Debug, Default)]
pub struct Counted(HashSet<Vec<u8>>);

impl Counted {
    /// Whether a row with these signed fields was counted already.
    pub fn repeats(&self, fields: &[u8]) -> bool {
        self.0.contains(fields)
    }

    /// Remember a counted row's signed fields.
    pub fn count(&mut self, fields: Vec<u8>) {
        self.0.insert(fields);
    }
}

/// Why label `l` does not count under `roster`, if it does not, checked against the
/// keys in force now (the end of the log).
pub fn label_fault(l: &Label, roster: &Roster, verify: Verify) -> Option<String> {
    label_fault_at(l, usize::MAX, roster, verify)
}

/// Why label `l`, stored at label log position `pos`, does not count under
/// `roster`: checked against the key its reviewer held at that position.
pub fn label_fault_at(l: &Label, pos: usize, roster: &Roster, verify: Verify) -> Option<String> {
    let study = roster.binding();
    let bytes = |b: &Binding| label_bytes(l, b);
    let (signer, sig) = (l.signer.as_deref(), l.signature.as_deref());
    if l.reviewer == FINAL {
        let lead = roster.lead();
        let claimed = l.adjudicator.as_deref().unwrap_or("(none)");
        return match lead {
            Some((name, _)) if name != claimed => Some(format!(
                "final label {} of item {} claims adjudicator {claimed}, who is not the study lead ({name})",
                l.label_id, l.item_id
            )),
            Some((_, key)) => seal_fault(signer, sig, key, study, &bytes, verify).map(|why| {
                format!(
                    "final label {} of item {} claims adjudicator {claimed} but is not signed by the lead's key{why}",
                    l.label_id, l.item_id
                )
            }),
            None => Some(format!(
                "final label {} of item {} claims adjudicator {claimed}, but the roster has no lead",
                l.label_id, l.item_id
            )),
        };
    }
    let r = &l.reviewer;
    match roster.key_at(r, pos) {
        Ok(None) => Some(format!(
            "label {} of item {} claims reviewer {r}, who is not on the study roster",
            l.label_id, l.item_id
        )),
        Err(from) => Some(format!(
            "label {} of item {} claims reviewer {r}, who was removed from the study roster from label row {from}",
            l.label_id, l.item_id
        )),
        Ok(Some(key)) => seal_fault(signer, sig, key, study, &bytes, verify).map(|why| {
            let when = if roster.key_of(r) == Some(key) {
                String::new()
            } else {
                " in force where it was written".into()
            };
            format!(
                "label {} of item {} claims reviewer {r} but is not signed by {r}'s key{when}{why}",
                l.label_id, l.item_id
            )
        }),
    }
}

/// Why a validly signed label stored at row `pos` of the log cannot be where it is:
/// in a bound study its signed `log_rows` says how many rows its writer had read,
/// and appends never land before that. A row stored earlier was moved forward (a
/// label given after a reveal, placed before it to pass as blind), or rows before
/// it were removed; either way the log was rewritten, and the row is not counted.
fn moved_fault(l: &Label, pos: usize, roster: &Roster) -> Option<String> {
    let Binding::Study(_) = roster.binding() else {
        return None;
    };
    let read = l.log_rows?;
    (read > pos as u64).then(|| {
        format!(
            "label {} of item {} was written when the label log held {read} rows but is stored at row {pos}: rows before it were removed or it was moved forward (the log was rewritten)",
            l.label_id, l.item_id
        )
    })
}

/// The labels of a stored log (in log order) that count: all of them in an unsigned
/// study; under a roster, those signed by their author's key. A label id already
/// seen is refused in both (a copied row is no new label).
pub fn check_labels(labels: Vec<Label>, roster: &Roster, verify: Verify) -> Checked<Label> {
    let mut out = Checked::default();
    let mut seen: HashSet<String> = HashSet::new();
    for (pos, l) in labels.into_iter().enumerate() {
        let fault = if seen.contains(&l.label_id) {
            Some(format!(
                "label {} of item {} repeats the id of an earlier label",
                l.label_id, l.item_id
            ))
        } else if roster.is_signed() {
            label_fault_at(&l, pos, roster, verify).or_else(|| moved_fault(&l, pos, roster))
        } else {
            None
        };
        let (item, id) = (l.item_id.clone(), l.label_id.clone());
        if out.keep_or_refuse(l, pos, &item, Some(&id), fault) {
            seen.insert(id);
        }
    }
    out
}

/// The assignments that count: all in an unsigned study; under a roster, those
/// signed by the lead's key. In both, a row that repeats an earlier counted one is
/// refused: assignments are read newest-wins, so a copy of an old assignment
/// appended after a re-assignment would undo it.
pub fn check_assignments(
    rows: Vec<Assignment>,
    roster: &Roster,
    verify: Verify,
) -> Checked<Assignment> {
    let mut out = Checked::default();
    let mut seen = Counted::default();
    for (pos, a) in rows.into_iter().enumerate() {
        let fields = assignment_bytes(&a, roster.binding());
        let what = || {
            format!(
                "assignment of item {} to {}",
                a.item_id,
                names_and(&a.reviewers())
            )
        };
        let fault = if seen.repeats(&fields) {
            Some(format!(
                "{} repeats an earlier assignment (a copied row changes nothing)",
                what()
            ))
        } else if roster.is_signed() {
            let bytes = |b: &Binding| assignment_bytes(&a, b);
            lead_seal_fault(
                roster,
                a.signer.as_deref(),
                a.signature.as_deref(),
                &bytes,
                verify,
            )
            .map(|why| format!("{} is not signed by the lead's key{why}", what()))
        } else {
            None
        };
        let item = a.item_id.clone();
        if out.keep_or_refuse(a, pos, &item, None, fault) {
            seen.count(fields);
        }
    }
    out
}

/// The gold rows that count: all in an unsigned study; under a roster, those signed
/// by the lead's key (a reviewer cannot forge the expected labels they are scored
/// against) and stored no earlier than their signed `log_rows` (a rewrite of the log
/// that moves the lead's newer row before an older one, so the older wins, is
/// named). In both, a row that repeats an earlier counted one is refused: gold rows
/// are read newest-wins, so a copy of an old expected label appended after the lead
/// changed it would bring it back.
pub fn check_gold(rows: Vec<GoldLabel>, roster: &Roster, verify: Verify) -> Checked<GoldLabel> {
    let mut out = Checked::default();
    let mut seen = Counted::default();
    for (pos, g) in rows.into_iter().enumerate() {
        let fields = gold_bytes(&g, roster.binding());
        let what = format!("gold label of item {} on {}", g.item_id, g.criterion);
        let fault = if seen.repeats(&fields) {
            Some(format!(
                "{what} repeats an earlier gold label (a copied row changes nothing)"
            ))
        } else if roster.is_signed() {
            let bytes = |b: &Binding| gold_bytes(&g, b);
            lead_seal_fault(
                roster,
                g.signer.as_deref(),
                g.signature.as_deref(),
                &bytes,
                verify,
            )
            .map(|why| format!("{what} is not signed by the lead's key{why}"))
            .or_else(|| {
                let read = g.log_rows.filter(|&r| r > pos as u64)?;
                Some(format!(
                    "{what} was written when the gold log held {read} rows but is stored at row {pos}: rows before it were removed or it was moved forward (the log was rewritten)"
                ))
            })
        } else {
            None
        };
        let item = g.item_id.clone();
        if out.keep_or_refuse(g, pos, &item, None, fault) {
            seen.count(fields);
        }
    }
    out
}

/// The pair orders that count, first-wins: an item's first counted order, and no
/// later row for it (a copy, or one with the runs swapped, which would invert the
/// ranking). Under a roster a pair order counts only when signed by the lead's key;
/// in an unsigned study (no roster, as before pair orders were signed) every first
/// order counts as written.
pub fn check_pair_orders(
    rows: Vec<PairItem>,
    roster: &Roster,
    verify: Verify,
) -> Checked<PairItem> {
    let mut out = Checked::default();
    let mut ordered: HashSet<String> = HashSet::new();
    for (pos, p) in rows.into_iter().enumerate() {
        let what = format!("pair order of item {}", p.item_id);
        let fault = if ordered.contains(&p.item_id) {
            Some(format!(
                "{what} comes after the item's first pair order, which counts (an item's order is fixed when it is made)"
            ))
        } else if roster.is_signed() {
            let bytes = |b: &Binding| pair_order_bytes(&p, b);
            lead_seal_fault(
                roster,
                p.signer.as_deref(),
                p.signature.as_deref(),
                &bytes,
                verify,
            )
            .map(|why| format!("{what} is not signed by the lead's key{why}"))
        } else {
            None
        };
        let item = p.item_id.clone();
        if out.keep_or_refuse(p, pos, &item, None, fault) {
            ordered.insert(item);
        }
    }
    out
}

/// The items that count, first-wins, in log order. In an unsigned study (no roster)
/// an id's first row is its item and later rows for it are passed over (two
/// processes making the same item at once both append it). Under a roster an id's
/// item is its first row sealed by the lead's key; a later sealed row for the id is
/// refused (an item is fixed when it is made); an unsealed or forged row is passed
/// over when its id has a sealed item, and refused and named when it has none.
pub fn check_items(rows: Vec<Item>, roster: &Roster, verify: Verify) -> Checked<Item> {
    let mut out = Checked::default();
    if !roster.is_signed() {
        let mut seen: HashSet<String> = HashSet::new();
        for (pos, i) in rows.into_iter().enumerate() {
            if seen.insert(i.item_id.clone()) {
                out.kept.push(i);
                out.rows.push(pos);
            }
        }
        return out;
    }
    let mut sealed: HashSet<String> = HashSet::new();
    let mut unsealed: Vec<(String, String)> = Vec::new();
    for (pos, i) in rows.into_iter().enumerate() {
        let bytes = |b: &Binding| item_bytes(&i, b);
        let fault = lead_seal_fault(
            roster,
            i.signer.as_deref(),
            i.signature.as_deref(),
            &bytes,
            verify,
        );
        let id = i.item_id.clone();
        match fault {
            Some(why) => unsealed.push((id, why)),
            None if sealed.contains(&id) => out.refused.push(Refusal {
                item: Some(id.clone()),
                row: None,
                why: format!(
                    "item {id} comes after the item's first sealed row, which counts (an item is fixed when it is made)"
                ),
            }),
            None => {
                out.kept.push(i);
                out.rows.push(pos);
                sealed.insert(id);
            }
        }
    }
    let mut named: HashSet<String> = HashSet::new();
    for (id, why) in unsealed {
        if !sealed.contains(&id) && named.insert(id.clone()) {
            out.refused.push(Refusal {
                item: Some(id.clone()),
                row: None,
                why: format!(
                    "item {id} is not sealed by the lead's key{why}: only the lead puts items in a signed study (`raglab study seal-items` seals what the lead accepts)"
                ),
            });
        }
    }
    out
}

/// The schedule of `assignments` (in log order) over the kept labels: an
/// assignment made when the stored log held `label_rows` rows is in force from the
/// first kept label at or after that stored position (`label_rows` from `rows`,
/// the stored positions of the kept labels).
pub fn schedule_of(assignments: &[Assignment], rows: &[usize]) -> crate::core::blinding::Schedule {
    let mut s = crate::core::blinding::Schedule::default();
    for a in assignments {
        let stored = usize::try_from(a.label_rows.unwrap_or(0)).unwrap_or(usize::MAX);
        let from = rows.partition_point(|&p| p < stored);
        s.assign_all(&a.item_id, from, a.reviewers());
    }
    s
}

/// `a and b`, `a, b and c`: names for a message.
fn names_and(names: &[String]) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// A stand-in signature scheme and a small bound study for the rules' tests (here,
/// and in the modules of the signed rows); the real ed25519 is tested where it lives.
#[cfg(test)]
pub(crate) mod toy {
    use super::*;

    /// A stand-in signature scheme for the rules (the real ed25519 is tested where
    /// it lives): a "signature" is the hex of the key's first byte xor'd over the
    /// message, so it depends on both key and every byte.
    pub(crate) fn toy_sign(key: &str, msg: &[u8]) -> String {
        let k = from_hex(key).unwrap_or_default();
        let mut acc = [0u8; 8];
        for (i, b) in msg.iter().enumerate() {
            acc[i % 8] = acc[i % 8].rotate_left(3) ^ b ^ k[i % k.len()];
        }
        to_hex(&acc)
    }
    pub(crate) fn toy_verify(key: &str, msg: &[u8], sig: &str) -> bool {
        toy_sign(key, msg) == sig
    }
    pub(crate) const LENA: &str =
        "1111111111111111111111111111111111111111111111111111111111111111";
    pub(crate) const ANN: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    pub(crate) const MAL: &str = "3333333333333333333333333333333333333333333333333333333333333333";

    pub(crate) fn entry(
        name: &str,
        role: &str,
        key: &str,
        by: &str,
        study: &Binding,
    ) -> RosterEntry {
        let mut r = RosterEntry {
            name: name.into(),
            role: role.into(),
            public_key: key.into(),
            added_at: "t".into(),
            signer: Some(by.into()),
            signature: None,
            nonce: None,
            label_rows: None,
        };
        r.signature = Some(toy_sign(by, &roster_bytes(&r, study)));
        r
    }

    /// The lead's founding entry of a bound study with nonce `nonce`, and the binding.
    pub(crate) fn founding(name: &str, key: &str, nonce: &str) -> (RosterEntry, Binding) {
        let mut r = RosterEntry {
            name: name.into(),
            role: LEAD.into(),
            public_key: key.into(),
            added_at: "t".into(),
            signer: Some(key.into()),
            signature: None,
            nonce: Some(nonce.into()),
            label_rows: None,
        };
        let sig = toy_sign(key, &founding_bytes(&r));
        r.signature = Some(sig.clone());
        (r, Binding::Study(sig))
    }

    /// A bound study founded by lena with `nonce`, with ann on its roster.
    pub(crate) fn study(nonce: &str) -> (Roster, Binding) {
        let (lead, bound) = founding("lena", LENA, nonce);
        let rows = vec![lead, entry("ann", REVIEWER, ANN, LENA, &bound)];
        let (roster, refused) = Roster::from_rows(&rows, &toy_verify);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(roster.binding(), &bound);
        (roster, bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::toy::*;

    fn label(id: &str, who: &str, by: &str, study: &Binding) -> Label {
        let mut l = Label {
            label_id: id.into(),
            item_id: "i".into(),
            reviewer: who.into(),
            criterion: "a".into(),
            label: Some("pass".into()),
            note: Some("n".into()),
            timestamp: "t".into(),
            seq: 1,
            rubric_version: "1".into(),
            adjudicator: None,
            signer: Some(by.into()),
            signature: None,
            log_rows: None,
            active_ms: None,
        };
        l.signature = Some(toy_sign(by, &label_bytes(&l, study)));
        l
    }

    #[test]
    fn every_field_is_in_the_signed_bytes() {
        let unbound = Binding::Unbound;
        let l = label("x", "ann", ANN, &unbound);
        let bytes = |l: &Label| label_bytes(l, &unbound);
        let base = bytes(&l);
        let changed: Vec<Label> = vec![
            Label {
                label_id: "y".into(),
                ..l.clone()
            },
            Label {
                item_id: "j".into(),
                ..l.clone()
            },
            Label {
                reviewer: "bob".into(),
                ..l.clone()
            },
            Label {
                criterion: "b".into(),
                ..l.clone()
            },
            Label {
                label: None,
                ..l.clone()
            },
            Label {
                note: None,
                ..l.clone()
            },
            Label {
                note: Some(String::new()),
                ..l.clone()
            },
            Label {
                timestamp: "u".into(),
                ..l.clone()
            },
            Label {
                seq: 2,
                ..l.clone()
            },
            Label {
                rubric_version: "2".into(),
                ..l.clone()
            },
            Label {
                adjudicator: Some("lena".into()),
                ..l.clone()
            },
            Label {
                signer: Some(MAL.into()),
                ..l.clone()
            },
            // Time per item: signed when present (0 ms differs from no time).
            Label {
                active_ms: Some(0),
                ..l.clone()
            },
        ];
        // In a bound study the rows read before writing are signed too.
        let a = Binding::Study("a".into());
        let read = Label {
            log_rows: Some(3),
            active_ms: None,
            ..l.clone()
        };
        assert_ne!(label_bytes(&read, &a), label_bytes(&l, &a));
        for c in &changed {
            assert_ne!(bytes(c), base, "{c:?}");
        }
        // The study id is in the bytes: each study, and the unbound form, differ.
        let (a, b) = (Binding::Study("a".into()), Binding::Study("b".into()));
        assert_ne!(label_bytes(&l, &a), label_bytes(&l, &b));
        assert_ne!(label_bytes(&l, &a), base);
        // Shifting a boundary between two fields changes the bytes.
        let a = Label {
            label_id: "ab".into(),
            item_id: "c".into(),
            ..l.clone()
        };
        let b = Label {
            label_id: "a".into(),
            item_id: "bc".into(),
            ..l
        };
        assert_ne!(bytes(&a), bytes(&b));
    }

    #[test]
    fn hex_round_trips_and_keys_are_checked() {
        assert_eq!(to_hex(&[0, 15, 16, 255]), "000f10ff");
        assert_eq!(from_hex("000F10ff"), Some(vec![0, 15, 16, 255]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert!(check_public_key(LENA).is_ok());
        assert!(check_public_key(&LENA[2..]).is_err());
    }

    #[test]
    fn the_roster_is_founded_by_its_lead_and_grown_by_the_leads_key() {
        let (lead, bound) = founding("lena", LENA, "t");
        let rows = vec![
            entry("ann", REVIEWER, ANN, ANN, &bound),  // before any lead
            lead,                                      // founds
            entry("ann", REVIEWER, ANN, LENA, &bound), // added by the lead
            entry("mal", REVIEWER, MAL, MAL, &bound),  // adds himself: refused
            entry("mal", LEAD, MAL, LENA, &bound),     // a second lead: refused
            // The lead's entry for carol in another study: refused here.
            entry("carol", REVIEWER, MAL, LENA, &founding("lena", LENA, "u").1),
        ];
        let (r, refused) = Roster::from_rows(&rows, &toy_verify);
        assert_eq!(r.binding(), &bound);
        assert_eq!(r.key_of("carol"), None);
        assert_eq!(r.lead(), Some(("lena", LENA)));
        assert_eq!(r.key_of("ann"), Some(ANN));
        assert_eq!(r.key_of("mal"), None);
        assert_eq!(r.name_of(ANN), Some("ann"));
        assert_eq!(refused.len(), 4, "{refused:?}");
        assert!(
            refused[3]
                .why
                .ends_with("does not match its fields and this study's id)")
        );
        assert!(
            refused[1]
                .why
                .contains("roster entry mal is not signed by the lead's key")
        );
        assert_eq!(r.entries()[0], ("lena", LEAD, LENA));
    }

    #[test]
    fn forged_unsigned_and_repeated_labels_are_refused_and_named() {
        let (roster, bound) = study("t");
        let good = label("g", "ann", ANN, &bound);
        let by_mal = label("m", "ann", MAL, &bound);
        let mut unsigned = label("u", "ann", ANN, &bound);
        unsigned.signature = None;
        let mut edited = label("e", "ann", ANN, &bound);
        edited.label = Some("fail".into()); // changed after signing
        let stranger = label("s", "bob", MAL, &bound);
        // ann's genuine rows of two other studies with the same keys: a later one
        // (bound to its own id) and an unbound one.
        let elsewhere = label("x", "ann", ANN, &study("u").1);
        let unbound = label("v", "ann", ANN, &Binding::Unbound);
        let checked = check_labels(
            vec![
                good.clone(),
                by_mal,
                unsigned,
                edited,
                stranger,
                good,
                elsewhere,
                unbound,
            ],
            &roster,
            &toy_verify,
        );
        assert_eq!(checked.kept.len(), 1);
        assert_eq!(checked.rows, vec![0]);
        let r: Vec<&str> = checked.refused.iter().map(|x| x.why.as_str()).collect();
        assert_eq!(r.len(), 7, "{r:?}");
        assert!(
            r[0].starts_with(
                "label m of item i claims reviewer ann but is not signed by ann's key"
            )
        );
        assert!(r[1].ends_with("(it carries no signature)"));
        assert!(r[2].ends_with("(its signature does not match its fields and this study's id)"));
        assert!(r[3].contains("bob, who is not on the study roster"));
        assert!(r[4].contains("repeats the id"));
        assert!(r[5].starts_with("label x of item i claims reviewer ann but is not signed by ann's key (its signature does not match its fields and this study's id)"));
        assert!(r[6].ends_with("(it is signed without this study's id: written before the roster was founded, or taken from another study)"));
        // Each refusal names the refused row, so a view holding it can let it go.
        let rows: Vec<Option<&str>> = checked.refused.iter().map(|x| x.row.as_deref()).collect();
        assert_eq!(rows, ["m", "u", "e", "s", "g", "x", "v"].map(Some).to_vec());
        // Unsigned study: every label counts.
        let all = check_labels(
            vec![label("m", "ann", MAL, &Binding::Unbound)],
            &Roster::default(),
            &toy_verify,
        );
        assert_eq!(all.kept.len(), 1);
    }

    /// A bound study's label stored before the position its writer had read is
    /// refused (moved forward, or rows before it removed); at or after it, kept.
    #[test]
    fn a_label_stored_before_what_its_writer_read_is_refused() {
        let (roster, bound) = study("t");
        let at = |id: &str, read: u64| {
            let mut l = label(id, "ann", ANN, &bound);
            l.log_rows = Some(read);
            l.signature = Some(toy_sign(ANN, &label_bytes(&l, &bound)));
            l
        };
        let checked = check_labels(
            vec![at("a", 0), at("b", 0), at("c", 3), at("d", 3)],
            &roster,
            &toy_verify,
        );
        assert_eq!(checked.rows, vec![0, 1, 3]);
        assert_eq!(checked.refused.len(), 1);
        assert!(checked.refused[0].why.starts_with(
            "label c of item i was written when the label log held 3 rows but is stored at row 2"
        ));
        // Its claim is signed: lowered after signing, the signature breaks.
        let mut lowered = at("e", 9);
        lowered.log_rows = Some(0);
        let checked = check_labels(vec![lowered], &roster, &toy_verify);
        assert!(checked.refused[0].why.contains("does not match its fields"));
    }

    /// A study founded by an earlier raglab (v1 founding entry) stays unbound: its
    /// v1 rows count, and so would a v1 row of another study with the same keys.
    #[test]
    fn an_unbound_study_keeps_its_v1_signatures() {
        let v1 = Binding::Unbound;
        let rows = vec![
            entry("lena", LEAD, LENA, LENA, &v1),
            entry("ann", REVIEWER, ANN, LENA, &v1),
        ];
        let (roster, refused) = Roster::from_rows(&rows, &toy_verify);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(roster.binding(), &Binding::Unbound);
        let kept = check_labels(vec![label("g", "ann", ANN, &v1)], &roster, &toy_verify);
        assert_eq!(kept.kept.len(), 1);
        let bound = check_labels(
            vec![label("b", "ann", ANN, &study("t").1)],
            &roster,
            &toy_verify,
        );
        assert_eq!(bound.refused.len(), 1, "a row bound elsewhere");
    }

    #[test]
    fn finals_and_assignments_need_the_leads_key() {
        let (roster, bound) = study("t");
        let mut fin = label("f", FINAL, LENA, &bound);
        fin.adjudicator = Some("lena".into());
        fin.signature = Some(toy_sign(LENA, &label_bytes(&fin, &bound)));
        assert_eq!(label_fault(&fin, &roster, &toy_verify), None);
        let mut forged = label("f2", FINAL, ANN, &bound);
        forged.adjudicator = Some("lena".into());
        forged.signature = Some(toy_sign(ANN, &label_bytes(&forged, &bound)));
        let why = label_fault(&forged, &roster, &toy_verify).unwrap_or_default();
        assert!(
            why.contains("claims adjudicator lena but is not signed by the lead's key"),
            "{why}"
        );
        let assign = |by: &str, rows: u64| {
            let mut a = Assignment {
                item_id: "i".into(),
                first: "ann".into(),
                second: "bob".into(),
                assigned_at: "t".into(),
                seq: 1,
                label_rows: Some(rows),
                signer: Some(by.into()),
                signature: None,
                more_reviewers: None,
            };
            a.signature = Some(toy_sign(by, &assignment_bytes(&a, &bound)));
            a
        };
        let checked =
            check_assignments(vec![assign(LENA, 3), assign(ANN, 0)], &roster, &toy_verify);
        assert_eq!(checked.kept.len(), 1);
        assert!(
            checked.refused[0]
                .why
                .contains("to ann and bob is not signed by the lead's key")
        );
        // Stored position 3 is the first kept label at or after it: kept labels sit
        // at stored rows 0, 2, 5, so the assignment starts at kept index 2.
        let s = schedule_of(&checked.kept, &[0, 2, 5]);
        assert_eq!(s.in_force("i", 1), None);
        assert_eq!(
            s.in_force("i", 2),
            Some(&["ann".to_string(), "bob".to_string()][..])
        );
        // A k-of-n assignment signs its further reviewers: stripping or adding them
        // breaks the lead's signature, and the schedule holds all three.
        let mut three = assign(LENA, 0);
        three.more_reviewers = Some("carol".into());
        three.signature = Some(toy_sign(LENA, &assignment_bytes(&three, &bound)));
        let mut stripped = three.clone();
        stripped.more_reviewers = None;
        let mut added = assign(LENA, 0);
        added.more_reviewers = Some("mallory".into());
        let mut widened = three.clone();
        widened.more_reviewers = Some("carol,mallory".into());
        let checked =
            check_assignments(vec![three, stripped, added, widened], &roster, &toy_verify);
        assert_eq!(checked.kept.len(), 1, "{:?}", checked.refused);
        assert!(
            checked.refused[1]
                .why
                .contains("to ann, bob and mallory is not signed by the lead's key"),
            "{}",
            checked.refused[1].why
        );
        let s = schedule_of(&checked.kept, &[]);
        assert_eq!(
            s.in_force("i", 0),
            Some(&["ann".to_string(), "bob".into(), "carol".into()][..])
        );
    }

    /// Positions: ann's key rotated at label row 4 and bob removed at row 6. ann's
    /// labels at rows 0 and 2 signed with her old key count, one at row 5 does not;
    /// bob's labels at rows 1 and 3 count, one at row 7 does not; a copy of ann's old
    /// entry and an entry placed before the one it follows are refused.
    #[test]
    fn entries_are_in_force_from_their_position() {
        const BOB: &str = "4444444444444444444444444444444444444444444444444444444444444444";
        let (lead, bound) = founding("lena", LENA, "t");
        let at = |mut e: RosterEntry, rows: u64| {
            e.label_rows = Some(rows);
            e.signature = Some(toy_sign(LENA, &roster_bytes(&e, &bound)));
            e
        };
        let ann_old = at(entry("ann", REVIEWER, ANN, LENA, &bound), 0);
        let rows = vec![
            lead,
            ann_old.clone(),
            at(entry("bob", REVIEWER, BOB, LENA, &bound), 0),
            at(entry("ann", REVIEWER, MAL, LENA, &bound), 4), // rotated
            at(entry("bob", REMOVED, BOB, LENA, &bound), 6),  // removed
            ann_old,                                          // replayed
            at(entry("carol", REVIEWER, LENA, LENA, &bound), 2), // before row 6
        ];
        let (roster, refused) = Roster::from_rows(&rows, &toy_verify);
        let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "roster entry ann repeats an earlier roster entry (a copied row changes nothing)",
                "roster entry carol is in force from label row 2, before the entry it follows (from row 6): the log was rewritten",
            ]
        );
        assert_eq!(roster.key_of("ann"), Some(MAL));
        assert_eq!(roster.key_at("ann", 3), Ok(Some(ANN)));
        assert_eq!(roster.key_at("ann", 4), Ok(Some(MAL)));
        assert_eq!(roster.key_of("bob"), None);
        assert_eq!(roster.key_at("bob", 5), Ok(Some(BOB)));
        assert_eq!(roster.key_at("bob", 6), Err(6));
        assert_eq!(roster.entries().len(), 2, "lena and ann");
        let labelled = |id: &str, who: &str, key: &str| {
            let mut l = label(id, who, key, &bound);
            l.log_rows = Some(0);
            l.signature = Some(toy_sign(key, &label_bytes(&l, &bound)));
            l
        };
        // Stored rows 0 to 7, each label's key as the comment says.
        let log = vec![
            labelled("a0", "ann", ANN), // row 0: old key, before the rotation
            labelled("b1", "bob", BOB), // row 1
            labelled("a2", "ann", ANN), // row 2
            labelled("b3", "bob", BOB), // row 3
            labelled("a4", "ann", MAL), // row 4: new key
            labelled("a5", "ann", ANN), // row 5: old key after the rotation
            labelled("a6", "ann", MAL), // row 6
            labelled("b7", "bob", BOB), // row 7: after bob's removal
        ];
        let checked = check_labels(log, &roster, &toy_verify);
        assert_eq!(checked.rows, vec![0, 1, 2, 3, 4, 6]);
        let why: Vec<&str> = checked.refused.iter().map(|r| r.why.as_str()).collect();
        assert!(
            why[0].starts_with("label a5 of item i claims reviewer ann but is not signed by ann's key (it is signed by key"),
            "{why:?}"
        );
        assert_eq!(
            why[1],
            "label b7 of item i claims reviewer bob, who was removed from the study roster from label row 6"
        );
    }
}

#[cfg(test)]
mod repeats {
    //! Repeated rows of every signed log, by hand: which rows count and which are
    //! refused, with the sentence that names each.
    use super::*;

    /// The toy scheme of the tests above, checked as the real one is: hex digits of
    /// either case (ed25519 verification reads `AB` as `ab`).
    fn sign(key: &str, msg: &[u8]) -> String {
        let k = from_hex(key).unwrap_or_default();
        let mut acc = [0u8; 8];
        for (i, b) in msg.iter().enumerate() {
            acc[i % 8] = acc[i % 8].rotate_left(3) ^ b ^ k[i % k.len()];
        }
        to_hex(&acc)
    }
    fn verify(key: &str, msg: &[u8], sig: &str) -> bool {
        sign(key, msg) == sig.to_ascii_lowercase()
    }
    const LENA: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const ANN: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    const MAL: &str = "3333333333333333333333333333333333333333333333333333333333333333";

    /// A bound study: lena founds it, ann and carol at label row 0.
    fn study() -> (Roster, Binding) {
        let mut lead = RosterEntry {
            name: "lena".into(),
            role: LEAD.into(),
            public_key: LENA.into(),
            added_at: "t".into(),
            signer: Some(LENA.into()),
            signature: None,
            nonce: Some("n".into()),
            label_rows: None,
        };
        let id = sign(LENA, &founding_bytes(&lead));
        lead.signature = Some(id.clone());
        let bound = Binding::Study(id);
        let rows = vec![
            lead,
            reviewer("ann", ANN, 0, &bound),
            reviewer("carol", MAL, 0, &bound),
        ];
        let (roster, refused) = Roster::from_rows(&rows, &verify);
        assert!(refused.is_empty(), "{refused:?}");
        (roster, bound)
    }

    fn reviewer(name: &str, key: &str, rows: u64, bound: &Binding) -> RosterEntry {
        let mut e = RosterEntry {
            name: name.into(),
            role: REVIEWER.into(),
            public_key: key.into(),
            added_at: format!("t{rows}"),
            signer: Some(LENA.into()),
            signature: None,
            nonce: None,
            label_rows: Some(rows),
        };
        e.signature = Some(sign(LENA, &roster_bytes(&e, bound)));
        e
    }

    /// The same row with its signature in capital hex digits: it verifies.
    fn shouted<T: Clone>(row: &T, sig: impl Fn(&mut T) -> &mut Option<String>) -> T {
        let mut copy = row.clone();
        let s = sig(&mut copy);
        *s = s.as_deref().map(str::to_ascii_uppercase);
        copy
    }

    fn assignment(to: (&str, &str), rows: u64, seq: u64, bound: &Binding) -> Assignment {
        let mut a = Assignment {
            item_id: "i0".into(),
            first: to.0.into(),
            second: to.1.into(),
            assigned_at: format!("t{seq}"),
            seq,
            label_rows: Some(rows),
            signer: Some(LENA.into()),
            signature: None,
            more_reviewers: None,
        };
        a.signature = Some(sign(LENA, &assignment_bytes(&a, bound)));
        a
    }

    fn why<T>(c: &Checked<T>) -> Vec<&str> {
        c.refused.iter().map(|r| r.why.as_str()).collect()
    }

    /// i0 to ann and bob at label row 0, re-assigned to ann and carol at row 4; a copy
    /// of the first row appended after (as stored, and with its signature shouted) is
    /// refused, so ann and carol stay in force from kept label 4 on and are the newest.
    #[test]
    fn a_replayed_assignment_is_refused_and_the_reassignment_holds() {
        let (roster, bound) = study();
        let first = assignment(("ann", "bob"), 0, 1, &bound);
        let second = assignment(("ann", "carol"), 4, 2, &bound);
        let loud = shouted(&first, |a| &mut a.signature);
        let rows = vec![first.clone(), second, first, loud];
        let checked = check_assignments(rows, &roster, &verify);
        assert_eq!(checked.rows, vec![0, 1]);
        let repeat = "assignment of item i0 to ann and bob repeats an earlier assignment (a copied row changes nothing)";
        assert_eq!(why(&checked), [repeat, repeat]);
        assert_eq!(checked.refused[0].item.as_deref(), Some("i0"));
        // Kept labels at stored rows 0..6: the re-assignment is in force from 4.
        let s = schedule_of(&checked.kept, &[0, 1, 2, 3, 4, 5]);
        let (ab, ac) = (
            ["ann".to_string(), "bob".into()],
            ["ann".to_string(), "carol".into()],
        );
        assert_eq!(s.in_force("i0", 3), Some(&ab[..]));
        assert_eq!(s.in_force("i0", 4), Some(&ac[..]));
        assert_eq!(s.in_force("i0", 5), Some(&ac[..]));
        assert_eq!(
            s.newest().get("i0"),
            Some(&("ann".to_string(), "carol".to_string()))
        );
        // A second guard: even read without the rule, the copy (in force from row 0)
        // stands before the re-assignment in the schedule, which orders an item's
        // assignments by position, so ann and carol stay in force from 4.
        let unchecked = [
            checked.kept[0].clone(),
            checked.kept[1].clone(),
            checked.kept[0].clone(),
        ];
        let s = schedule_of(&unchecked, &[0, 1, 2, 3, 4, 5]);
        assert_eq!(s.in_force("i0", 5), Some(&ac[..]));
    }

    /// An unsigned study (no roster) refuses a copied assignment too; a new row with
    /// the same reviewers (another clock) is no copy and counts.
    #[test]
    fn an_unsigned_study_refuses_copies_but_not_a_new_row() {
        let unbound = Binding::Unbound;
        let a = assignment(("ann", "bob"), 0, 1, &unbound);
        let again = assignment(("ann", "bob"), 0, 2, &unbound);
        let mut bare = a.clone();
        (bare.signer, bare.signature) = (None, None);
        let checked = check_assignments(vec![a.clone(), again, a], &Roster::default(), &verify);
        assert_eq!(checked.rows, vec![0, 1]);
        assert_eq!(checked.refused.len(), 1);
        // Unsigned rows of an old study count once each, as before.
        let old = check_assignments(vec![bare], &Roster::default(), &verify);
        assert_eq!(old.rows, vec![0]);
    }

    fn gold(label: &str, seq: u64, bound: &Binding) -> GoldLabel {
        let mut g = GoldLabel {
            item_id: "g1".into(),
            criterion: "clarity".into(),
            label: Some(label.into()),
            set_at: format!("t{seq}"),
            seq,
            signer: Some(LENA.into()),
            signature: None,
            log_rows: Some(seq - 1),
        };
        g.signature = Some(sign(LENA, &gold_bytes(&g, bound)));
        g
    }

    /// The lead sets g1/clarity to pass (the log held 0 rows), then to fail (1 row);
    /// a rewrite that stores fail first, so pass would win newest-wins, is named:
    /// fail was written after a row it now stands before. A field added or stripped
    /// breaks the signature.
    #[test]
    fn a_gold_row_moved_before_the_rows_its_writer_read_is_refused() {
        let (roster, bound) = study();
        let (pass, fail) = (gold("pass", 1, &bound), gold("fail", 2, &bound));
        let kept = check_gold(vec![pass.clone(), fail.clone()], &roster, &verify);
        assert_eq!(kept.rows, vec![0, 1]);
        let swapped = check_gold(vec![fail.clone(), pass.clone()], &roster, &verify);
        assert_eq!(swapped.rows, vec![1]);
        assert_eq!(
            why(&swapped),
            [
                "gold label of item g1 on clarity was written when the gold log held 1 rows but is stored at row 0: rows before it were removed or it was moved forward (the log was rewritten)"
            ]
        );
        for log_rows in [None, Some(0)] {
            let changed = GoldLabel {
                log_rows,
                ..fail.clone()
            };
            let checked = check_gold(vec![pass.clone(), changed], &roster, &verify);
            assert_eq!(checked.rows, vec![0], "log_rows {log_rows:?}");
            assert!(why(&checked)[0].contains("not signed by the lead's key"));
        }
    }

    /// The lead sets g1/clarity to pass, then to fail; a copy of the pass row
    /// appended after is refused, so fail stays the expected label.
    #[test]
    fn a_replayed_gold_row_is_refused_and_the_change_holds() {
        let (roster, bound) = study();
        let pass = gold("pass", 1, &bound);
        let rows = vec![pass.clone(), gold("fail", 2, &bound), pass];
        let checked = check_gold(rows, &roster, &verify);
        assert_eq!(checked.rows, vec![0, 1]);
        assert_eq!(
            why(&checked),
            [
                "gold label of item g1 on clarity repeats an earlier gold label (a copied row changes nothing)"
            ]
        );
        let want = BTreeMap::from([(
            ("g1".to_string(), "clarity".to_string()),
            "fail".to_string(),
        )]);
        assert_eq!(crate::core::gold::expected(&checked.kept), want);
    }

    fn order(first: &str, second: &str, by: Option<&str>, bound: &Binding) -> PairItem {
        let mut p = PairItem {
            item_id: "pair-1".into(),
            question_id: "q1".into(),
            first_run: first.into(),
            first_answer_id: format!("{first}/q1"),
            second_run: second.into(),
            second_answer_id: format!("{second}/q1"),
            seed: 42,
            signer: by.map(str::to_string),
            signature: None,
        };
        p.signature = by.map(|k| sign(k, &pair_order_bytes(&p, bound)));
        p
    }

    /// Under a roster: an unsigned order and one signed by ann are refused, the
    /// lead's first order counts, and a later order (the runs swapped, even signed by
    /// the lead) and a copy of the first are refused: first-wins.
    #[test]
    fn pair_orders_are_the_leads_and_the_first_wins() {
        let (roster, bound) = study();
        let lead = order("alpha", "beta", Some(LENA), &bound);
        let rows = vec![
            order("beta", "alpha", None, &bound),
            order("beta", "alpha", Some(ANN), &bound),
            lead.clone(),
            order("beta", "alpha", Some(LENA), &bound),
            shouted(&lead, |p| &mut p.signature),
        ];
        let checked = check_pair_orders(rows, &roster, &verify);
        assert_eq!(checked.rows, vec![2]);
        assert_eq!(checked.kept[0].first_run, "alpha");
        let later = "pair order of item pair-1 comes after the item's first pair order, which counts (an item's order is fixed when it is made)";
        let by_ann = format!(
            "pair order of item pair-1 is not signed by the lead's key (it is signed by key {})",
            short(ANN)
        );
        assert_eq!(
            why(&checked),
            [
                "pair order of item pair-1 is not signed by the lead's key (it carries no signature)",
                by_ann.as_str(),
                later,
                later,
            ]
        );
        // Every field is signed: the runs swapped under the lead's signature break it.
        let mut swapped = lead.clone();
        std::mem::swap(&mut swapped.first_run, &mut swapped.second_run);
        let c = check_pair_orders(vec![swapped], &roster, &verify);
        assert!(
            why(&c)[0].ends_with("(its signature does not match its fields and this study's id)")
        );
    }

    /// An unsigned study (no roster): orders count unsigned, as before, but first-wins
    /// holds there too.
    #[test]
    fn an_unsigned_study_reads_pair_orders_first_wins() {
        let unbound = Binding::Unbound;
        let rows = vec![
            order("alpha", "beta", None, &unbound),
            order("beta", "alpha", None, &unbound),
        ];
        let checked = check_pair_orders(rows, &Roster::default(), &verify);
        assert_eq!(checked.rows, vec![0]);
        assert_eq!(checked.kept[0].first_run, "alpha");
        assert_eq!(checked.refused.len(), 1);
    }

    fn item(id: &str, answer: &str, by: Option<&str>, bound: &Binding) -> Item {
        let mut i = Item {
            item_id: id.into(),
            set: "s".into(),
            question: "How is flu prevented?".into(),
            answer: answer.into(),
            answer_id: Some(id.into()),
            signer: by.map(str::to_string),
            ..Item::default()
        };
        i.signature = by.map(|k| sign(k, &item_bytes(&i, bound)));
        i
    }

    /// Under a roster: ann writes an item under the id the lead will use, and one
    /// under an id of her own; mal forges the lead's key as signer. The lead's sealed
    /// item counts though it comes after ann's row (which is then passed over); ann's
    /// own item is refused and named once; a later sealed row for the lead's id (even
    /// the lead's, with another answer) is refused; a copy of the lead's item too.
    #[test]
    fn items_are_the_leads_sealed_rows_and_the_first_wins() {
        let (roster, bound) = study();
        let lead = item("run/q1", "A yearly vaccine.", Some(LENA), &bound);
        let mut forged = item("run/q2", "Nothing helps.", None, &bound);
        forged.signer = Some(LENA.into());
        forged.signature = Some("00".into());
        let rows = vec![
            item("run/q1", "Drink bleach.", Some(ANN), &bound),
            item("run/q2", "Nothing helps.", None, &bound),
            lead.clone(),
            item("run/q1", "Another answer.", Some(LENA), &bound),
            forged,
            lead.clone(),
        ];
        let checked = check_items(rows, &roster, &verify);
        assert_eq!(checked.rows, vec![2]);
        assert_eq!(checked.kept[0].answer, "A yearly vaccine.");
        let later = "item run/q1 comes after the item's first sealed row, which counts (an item is fixed when it is made)";
        assert_eq!(
            why(&checked),
            [
                later,
                later,
                "item run/q2 is not sealed by the lead's key (it carries no signature): only the lead puts items in a signed study (`raglab study seal-items` seals what the lead accepts)",
            ]
        );
        // Every field is sealed: the answer changed under the lead's signature breaks it.
        let mut changed = lead;
        changed.answer = "Drink bleach.".into();
        let c = check_items(vec![changed], &roster, &verify);
        assert!(
            why(&c)[0].contains("(its signature does not match its fields and this study's id)")
        );
    }

    /// An unsigned study reads items first-wins, unsealed, passing repeats over
    /// without a word (two processes may append the same new item).
    #[test]
    fn an_unsigned_study_reads_items_first_wins() {
        let unbound = Binding::Unbound;
        let rows = vec![
            item("i0", "first", None, &unbound),
            item("i1", "other", None, &unbound),
            item("i0", "second", None, &unbound),
        ];
        let checked = check_items(rows, &Roster::default(), &verify);
        assert_eq!(checked.rows, vec![0, 1]);
        assert_eq!(checked.kept[0].answer, "first");
        assert!(checked.refused.is_empty());
    }

    /// ann's key rotated to mal's at label row 0 (before any label); a copy of her
    /// first entry with its signature in capitals verifies, but repeats that entry's
    /// fields: refused, and ann keeps her new key.
    #[test]
    fn a_roster_copy_with_its_signature_in_capitals_is_refused() {
        let (_, bound) = study();
        let mut lead = RosterEntry {
            name: "lena".into(),
            role: LEAD.into(),
            public_key: LENA.into(),
            added_at: "t".into(),
            signer: Some(LENA.into()),
            signature: None,
            nonce: Some("n".into()),
            label_rows: None,
        };
        lead.signature = Some(sign(LENA, &founding_bytes(&lead)));
        const NEW: &str = "4444444444444444444444444444444444444444444444444444444444444444";
        let old = reviewer("ann", ANN, 0, &bound);
        let rows = vec![
            lead,
            old.clone(),
            reviewer("ann", NEW, 0, &bound),
            shouted(&old, |e| &mut e.signature),
        ];
        let (roster, refused) = Roster::from_rows(&rows, &verify);
        let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(
            why,
            ["roster entry ann repeats an earlier roster entry (a copied row changes nothing)"]
        );
        assert_eq!(roster.key_of("ann"), Some(NEW));
    }
}
