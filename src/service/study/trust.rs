//! Who is who: the user's signing key, the study roster in the workspace
//! (`roster.lance`, written by the lead), signing the rows this user writes, and
//! reading the study's logs as they count (every row checked against the roster by
//! the rules of `core::signing`, the rubric pins by those of `core::pinned`). Every
//! read of the roster goes through the study's memory ([`super::founding`]): a
//! roster missing or replaced in a workspace that held a signed study is an error.

use std::collections::HashMap;

use anyhow::{Result, bail};
use serde::Serialize;

use super::founding::{self, founded_table};
use super::labels::{Assignment, Item, Label, assignments_table, items_table, labels_table};
use super::pin::pins_table;
use crate::core::blinding::{Schedule, Viewer};
use crate::core::pinned::{self, PinnedRubric, RubricPin};
use crate::core::rubric::Rubric;
use crate::core::signing::{
    self, Binding, LEAD, REVIEWER, Refusal, Roster, RosterEntry, check_public_key, short,
};
use crate::service::base::{Context, now_rfc3339};
use crate::store::keys::{self, Keypair};
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub use super::founding::ROSTER;
pub use crate::service::base::my_key;

pub fn roster_table(ws: &Workspace) -> Table<'_> {
    Table::of::<RosterEntry>(ws, ROSTER)
}

/// Where this user's signing key is kept: a file of the config folder, so each
/// `RAGLAB_CONFIG_DIR` is one identity. It exists once a command needed the key.
pub fn key_file(paths: &crate::config::Paths) -> std::path::PathBuf {
    paths.config_dir.join(crate::store::keys::KEY_FILE)
}

/// Sign `label` as this key's holder for the study bound as `study` (the key and
/// signature are set on it).
pub fn sign_label(label: &mut Label, key: &Keypair, study: &Binding) {
    label.signer = Some(key.public_hex());
    label.signature = Some(key.sign_hex(&signing::label_bytes(label, study)));
}

/// Sign `a` as this key's holder for the study bound as `study`.
pub fn sign_assignment(a: &mut Assignment, key: &Keypair, study: &Binding) {
    a.signer = Some(key.public_hex());
    a.signature = Some(key.sign_hex(&signing::assignment_bytes(a, study)));
}

/// The study's items as they count, each id once, and the rows refused: the first
/// stored row of an id wins (two processes creating items at once, two `annotate
/// create` or one beside the TUI sending an answer, may both append the same item,
/// and stored rows are never rewritten); under a roster only the lead's sealed rows
/// are items ([`crate::core::signing::check_items`]). Every view and command reads
/// the items here.
pub async fn checked_items(ctx: &Context) -> Result<(Vec<Item>, Vec<Refusal>)> {
    let rows = async { anyhow::Ok(items_table(&ctx.workspace).read_all::<Item>().await?) };
    let (rows, (roster, _)) = futures::try_join!(rows, roster(ctx))?;
    Ok(super::labels::items_under(rows, &roster))
}

/// [`checked_items`] under `roster`, which the caller read already (a write that
/// needs the roster for several steps reads it once).
pub async fn items_under_roster(
    ctx: &Context,
    roster: &Roster,
) -> Result<(Vec<Item>, Vec<Refusal>)> {
    let rows: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    Ok(super::labels::items_under(rows, roster))
}

/// The study's items as they count ([`checked_items`] without the refusals).
pub async fn read_items(ctx: &Context) -> Result<Vec<Item>> {
    Ok(checked_items(ctx).await?.0)
}

/// Seal `item` as the lead (this key's holder) for the study bound as `study`.
pub fn seal_item(item: &mut Item, key: &Keypair, study: &Binding) {
    item.signer = Some(key.public_hex());
    item.signature = Some(key.sign_hex(&signing::item_bytes(item, study)));
}

/// Make `items` ready to append: in a signed study each is sealed with `key`, the
/// lead's ([`lead_key`] checked it before anything was read or written); an
/// unsigned study takes them as they are.
pub fn seal_new_items(items: &mut [Item], key: &Keypair, roster: &Roster) {
    if roster.is_signed() {
        for i in items.iter_mut() {
            seal_item(i, key, roster.binding());
        }
    }
}

/// The verified roster and the roster rows refused; an error when the workspace or
/// this user remembers a signed study that this roster is not ([`founding::guard`]).
pub async fn roster(ctx: &Context) -> Result<(Roster, Vec<Refusal>)> {
    let (roster, refused, _) = roster_rows(ctx).await?;
    Ok((roster, refused))
}

/// [`roster`], with the stored roster rows.
pub(super) async fn roster_rows(ctx: &Context) -> Result<(Roster, Vec<Refusal>, Vec<RosterEntry>)> {
    let ws = &ctx.workspace;
    let (roster, founded) = (roster_table(ws), founded_table(ws));
    let (rows, founded) = futures::try_join!(
        roster.read_all::<RosterEntry>(),
        founded.read_all::<RosterEntry>(),
    )?;
    let (roster, refused) = Roster::from_rows(&rows, &keys::verify_cached);
    founding::guard(ws, &roster, &founded, Some(&memory(ctx)))?;
    Ok((roster, refused, rows))
}

/// This user's memory of the workspace's study.
fn memory(ctx: &Context) -> std::path::PathBuf {
    founding::memory_file(&ctx.paths.data_dir, &ctx.workspace.location())
}

/// The roster of `ws` for signing (no user's memory: the workspace's own only).
async fn roster_of(ws: &Workspace) -> Result<(Roster, Vec<Refusal>)> {
    let rows: Vec<RosterEntry> = roster_table(ws).read_all().await?;
    let (roster, refused) = Roster::from_rows(&rows, &keys::verify_cached);
    if roster.founding().is_none() {
        let founded: Vec<RosterEntry> = founded_table(ws).read_all().await?;
        founding::guard(ws, &roster, &founded, None)?;
    }
    Ok((roster, refused))
}

/// The study's pinned rubric as it counts (the newest pin that counts, if any), and
/// the pin rows refused.
pub async fn pinned_rubric(ctx: &Context) -> Result<(Option<PinnedRubric>, Vec<Refusal>)> {
    let (roster, _) = roster(ctx).await?;
    let rows: Vec<RubricPin> = pins_table(&ctx.workspace).read_all().await?;
    let mut checked = pinned::check_pins(rows, &roster, &keys::verify_cached);
    Ok((checked.kept.pop(), checked.refused))
}

/// Study ids already read, by workspace location. Why: a label commit signs for the
/// study, and reading the roster for it every time would add a dataset read to the
/// TUI's every keypress; a bound study's id never changes (it is the signature of
/// the roster's founding entry, which stays first), so once read it is kept. An
/// unbound or roster-less study is read again each time, since a roster may be
/// founded at any moment.
static STUDY_IDS: std::sync::LazyLock<std::sync::Mutex<HashMap<String, String>>> =
    std::sync::LazyLock::new(Default::default);

/// What rows written for the study in `ws` must be signed for.
pub async fn binding(ws: &Workspace) -> Result<Binding> {
    let location = ws.location();
    let known = STUDY_IDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&location)
        .cloned();
    if let Some(id) = known {
        return Ok(Binding::Study(id));
    }
    let (roster, _) = roster_of(ws).await?;
    let bound = roster.binding().clone();
    if let Binding::Study(id) = &bound {
        STUDY_IDS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(location, id.clone());
    }
    Ok(bound)
}

/// The study's logs as they count.
#[derive(Debug, Clone, Default)]
pub struct TrustedLog {
    /// Labels, notes and final labels that count, in log order.
    pub labels: Vec<Label>,
    /// Assignments that count, in log order.
    pub assignments: Vec<Assignment>,
    /// The assignments over `labels`' positions.
    pub schedule: Schedule,
    pub roster: Roster,
    /// The study's rubric: the newest rubric pin that counts (none: no rubric is
    /// pinned, and each viewer's rubric decides submission as before).
    pub rubric: Option<Rubric>,
    /// Every stored row left out, named.
    pub refused: Vec<Refusal>,
}

impl TrustedLog {
    /// Whether the study has a roster (an old study without one is unsigned).
    pub fn signed(&self) -> bool {
        self.roster.is_signed()
    }

    /// item -> its newest assigned pair.
    pub fn pairs(&self) -> HashMap<String, (String, String)> {
        self.schedule.newest()
    }

    /// The stored logs checked against the roster rows (all four in log order): the
    /// schedule holds the assignments and the pinned rubrics' criteria, each in force
    /// from its position. Signatures go through this process's cache of verified
    /// ones ([`keys::VERIFIED`]): a reload checks in full only the rows it has not
    /// seen.
    pub fn check(
        labels: Vec<Label>,
        assignments: Vec<Assignment>,
        pins: Vec<RubricPin>,
        roster: Roster,
        mut refused: Vec<Refusal>,
    ) -> Self {
        let labels = signing::check_labels(labels, &roster, &keys::verify_cached);
        let assignments = signing::check_assignments(assignments, &roster, &keys::verify_cached);
        let pins = pinned::check_pins(pins, &roster, &keys::verify_cached);
        refused.extend(labels.refused);
        refused.extend(assignments.refused);
        refused.extend(pins.refused);
        let mut schedule = signing::schedule_of(&assignments.kept, &labels.rows);
        pinned::require_pinned(&mut schedule, &pins.kept, &labels.rows);
        Self {
            schedule,
            labels: labels.kept,
            assignments: assignments.kept,
            rubric: pins.kept.last().map(|p| p.rubric.clone()),
            roster,
            refused,
        }
    }

    /// The rubric a study use case works with: the study's pinned one when there is
    /// one, else `given` (the front's, as before pins). The fronts resolve theirs with
    /// [`super::study_rubric`]; this holds whatever a front passes.
    pub fn rubric_or(&self, given: &Rubric) -> Rubric {
        self.rubric.clone().unwrap_or_else(|| given.clone())
    }
}

/// Read labels, assignments and the roster, and keep what counts. The log order is
/// the datasets' row order: lance appends each commit's rows as new fragments after
/// every earlier one, and a scan reads fragments in that order.
pub async fn trusted_log(ctx: &Context) -> Result<TrustedLog> {
    let ws = &ctx.workspace;
    let (labels, assignments, pins) = (labels_table(ws), assignments_table(ws), pins_table(ws));
    let logs = async {
        anyhow::Ok(futures::try_join!(
            labels.read_all::<Label>(),
            assignments.read_all::<Assignment>(),
            pins.read_all::<RubricPin>(),
        )?)
    };
    let ((labels, assignments, pins), (roster, refused, _)) =
        futures::try_join!(logs, roster_rows(ctx))?;
    Ok(TrustedLog::check(
        labels,
        assignments,
        pins,
        roster,
        refused,
    ))
}

/// Check that this user's key is the key `viewer` stands for on the roster: the
/// lead's key for the lead, the named reviewer's for a reviewer. An unsigned study
/// (no roster) takes names as given.
pub async fn confirm(ctx: &Context, viewer: &Viewer) -> Result<()> {
    if *viewer == Viewer::Nobody {
        return Ok(());
    }
    let (roster, _) = roster(ctx).await?;
    if !roster.is_signed() {
        return Ok(());
    }
    let me = my_key(ctx)?.public_hex();
    match viewer {
        Viewer::Lead => match roster.lead() {
            Some((_, k)) if k == me => Ok(()),
            Some((name, k)) => bail!(
                "--role lead needs the study lead's key: the roster's lead is {name} (key {}), and yours is {} (`raglab study key`)",
                short(k),
                short(&me)
            ),
            None => bail!("--role lead: the study roster has no lead"),
        },
        Viewer::Reviewer(r) => match roster.key_of(r) {
            Some(k) if k == me => Ok(()),
            Some(k) => bail!(
                "you are not {r} on this study's roster: {r}'s key is {}, yours is {} (`raglab study key`)",
                short(k),
                short(&me)
            ),
            None => bail!(
                "{r} is not on this study's roster: the study lead adds you with `raglab study roster add {r} {me}`"
            ),
        },
        Viewer::Nobody => Ok(()),
    }
}

/// Refuse unless this user holds the lead's key (for assignments and adjudication);
/// an unsigned study lets anyone. Returns the key.
pub async fn require_lead(ctx: &Context, what: &str) -> Result<Keypair> {
    let (roster, _) = roster(ctx).await?;
    lead_key(ctx, &roster, what)
}

/// This user's key, when `roster` makes them the lead (any user's in an unsigned
/// study); else an error saying `what` needs the lead's key and whose it is.
pub fn lead_key(ctx: &Context, roster: &Roster, what: &str) -> Result<Keypair> {
    let key = my_key(ctx)?;
    match roster.lead() {
        _ if !roster.is_signed() => Ok(key),
        Some((_, k)) if k == key.public_hex() => Ok(key),
        Some((name, k)) => bail!(
            "{what} needs the study lead's key: the roster's lead is {name} (key {}), and yours is {}",
            short(k),
            short(&key.public_hex())
        ),
        None => bail!("{what} needs the study lead's key, and the roster has no lead"),
    }
}

/// Refuse labels whose claimed author's key on the roster is not `key` (a label
/// import in another reviewer's name, a final label by someone who is not the
/// lead): they would be written only to be left out.
pub fn check_authorship(roster: &Roster, labels: &[Label], key: &Keypair) -> Result<()> {
    if !roster.is_signed() {
        return Ok(());
    }
    let me = key.public_hex();
    for l in labels {
        let (who, want) = if l.reviewer == super::labels::FINAL {
            ("the lead", roster.lead().map(|(_, k)| k))
        } else {
            (l.reviewer.as_str(), roster.key_of(&l.reviewer))
        };
        if want != Some(me.as_str()) {
            bail!(
                "label {} of item {} claims {} {who}, but your key ({}) is not {who}'s on the study roster",
                l.label_id,
                l.item_id,
                if l.reviewer == super::labels::FINAL {
                    "to be adjudicated by"
                } else {
                    "reviewer"
                },
                short(&me)
            );
        }
    }
    Ok(())
}

/// What `raglab study roster add` wrote.
#[derive(Debug, Clone)]
pub struct RosterAdded {
    pub entry: RosterEntry,
    /// On founding: label rows already in the workspace. They were signed without
    /// the new study's id, so the signed study does not count them.
    pub earlier_labels: u64,
    /// On founding: items already in the workspace, now sealed by the lead.
    pub sealed_items: usize,
}

/// Add `name` with `key` to the roster (signed by this user, who must be the lead;
/// `lead` founds the roster with this user's own key and makes the study id).
pub async fn roster_add(ctx: &Context, name: &str, key: &str, lead: bool) -> Result<RosterAdded> {
    crate::core::annotation::check_reviewer(name).map_err(anyhow::Error::msg)?;
    let key = check_public_key(key).map_err(anyhow::Error::msg)?;
    let me = my_key(ctx)?;
    let mine = me.public_hex();
    let (roster, _) = roster(ctx).await?;
    match roster.lead() {
        None if !lead => bail!(
            "this study has no roster yet: its lead founds it with `raglab study roster add NAME KEY --lead`, giving their own key (`raglab study key`)"
        ),
        None if key != mine => {
            bail!("the lead's entry is signed by the lead's own key: KEY must be yours ({mine})")
        }
        Some((lead_name, _)) if lead => {
            bail!("this study has its lead ({lead_name}); a study has one lead")
        }
        Some((lead_name, k)) if k != mine => bail!(
            "only the study lead ({lead_name}) adds to the roster; your key is {}",
            short(&mine)
        ),
        _ => {}
    }
    if let Some(other) = roster.name_of(&key).filter(|n| *n != name) {
        bail!(
            "key {} is {other}'s on the roster already: one key, one name",
            short(&key)
        );
    }
    let mut entry = RosterEntry {
        name: name.to_string(),
        role: if lead { LEAD } else { REVIEWER }.to_string(),
        public_key: key,
        added_at: now_rfc3339(),
        signer: Some(mine),
        signature: None,
        nonce: lead
            .then(|| {
                let mut n = [0u8; 16];
                getrandom::fill(&mut n).map(|()| signing::to_hex(&n))
            })
            .transpose()
            .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?,
        // Where the entry stands in the label log (a later entry for a name is in
        // force from there); the founding entry's bytes stay as before.
        label_rows: if lead {
            None
        } else {
            Some(labels_table(&ctx.workspace).count_rows().await?)
        },
    };
    // The founding entry's signature becomes the study id that every later row
    // of the study is signed with.
    let bytes = if lead {
        signing::founding_bytes(&entry)
    } else {
        signing::roster_bytes(&entry, roster.binding())
    };
    entry.signature = Some(me.sign_hex(&bytes));
    roster_table(&ctx.workspace)
        .append(std::slice::from_ref(&entry))
        .await?;
    // The workspace remembers its study from its founding on (and, for a study
    // founded before this memory, from the lead's next roster entry).
    let (roster, _, rows) = roster_rows(ctx).await?;
    founding::record(&ctx.workspace, &rows, &roster).await?;
    let (earlier_labels, sealed_items) = if lead {
        let labels = labels_table(&ctx.workspace).count_rows().await?;
        (labels, seal_unsealed_items(ctx, &me, &roster).await?.len())
    } else {
        (0, 0)
    };
    Ok(RosterAdded {
        entry,
        earlier_labels,
        sealed_items,
    })
}

/// Seal, as the lead holding `key`, every item id of the workspace that has no
/// sealed item under `roster`: its first stored row, as an unsigned study reads it
/// (at founding, the items the study had; later, items a study founded before items
/// were sealed still lacks). Returns the items sealed, in log order.
async fn seal_unsealed_items(ctx: &Context, key: &Keypair, roster: &Roster) -> Result<Vec<Item>> {
    let rows: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let (counted, _) = super::labels::items_under(rows.clone(), roster);
    let sealed: std::collections::HashSet<&str> =
        counted.iter().map(|i| i.item_id.as_str()).collect();
    let (first_rows, _) = super::labels::items_under(rows, &Roster::default());
    let mut new: Vec<Item> = first_rows
        .into_iter()
        .filter(|i| !sealed.contains(i.item_id.as_str()))
        .collect();
    for i in &mut new {
        seal_item(i, key, roster.binding());
    }
    if !new.is_empty() {
        items_table(&ctx.workspace).append(&new).await?;
    }
    Ok(new)
}

/// `raglab study seal-items`: the lead seals every item that has no sealed row yet
/// (items of a study founded before items were sealed, or of a founding whose
/// sealing did not finish); returns them, for the lead to check what was accepted.
pub async fn seal_items(ctx: &Context) -> Result<Vec<Item>> {
    let (roster, _) = roster(ctx).await?;
    let key = lead_key(ctx, &roster, "study seal-items")?;
    if !roster.is_signed() {
        bail!("study seal-items: this study has no roster yet, so its items need no seal");
    }
    seal_unsealed_items(ctx, &key, &roster).await
}

/// Write a roster entry changing `name` (the lead only; `name` on the roster and not
/// the lead): a new key (`Some`, a rotation) or a removal (`None`). In force from the
/// current end of the label log: labels written before keep counting under the
/// entry then in force.
async fn roster_change(ctx: &Context, name: &str, key: Option<&str>) -> Result<RosterEntry> {
    let what = if key.is_some() {
        "study roster rotate"
    } else {
        "study roster remove"
    };
    let (roster, _, rows) = roster_rows(ctx).await?;
    let me = lead_key(ctx, &roster, what)?;
    let Some((lead, _)) = roster.lead().filter(|_| roster.is_signed()) else {
        bail!("{what}: this study has no roster yet");
    };
    if name == lead {
        bail!("{what}: {name} leads the study (the lead's key is the study's own)");
    }
    let Some(current) = roster.key_of(name).map(str::to_string) else {
        bail!("{name} is not on this study's roster (`raglab study roster list`)");
    };
    let (role, public_key) = match key {
        None => (signing::REMOVED, current),
        Some(k) => {
            let k = check_public_key(k).map_err(anyhow::Error::msg)?;
            if k == current {
                bail!("{name}'s key is {} already", short(&k));
            }
            if let Some(other) = roster.name_of(&k) {
                bail!(
                    "key {} is {other}'s on the roster already: one key, one name",
                    short(&k)
                );
            }
            (REVIEWER, k)
        }
    };
    let mut entry = RosterEntry {
        name: name.to_string(),
        role: role.to_string(),
        public_key,
        added_at: now_rfc3339(),
        signer: Some(me.public_hex()),
        signature: None,
        nonce: None,
        label_rows: Some(labels_table(&ctx.workspace).count_rows().await?),
    };
    entry.signature = Some(me.sign_hex(&signing::roster_bytes(&entry, roster.binding())));
    roster_table(&ctx.workspace)
        .append(std::slice::from_ref(&entry))
        .await?;
    founding::record(&ctx.workspace, &rows, &roster).await?;
    Ok(entry)
}

/// Give `name` a new key (`raglab study roster rotate`): their labels signed with
/// the old key before it keep counting; from it on only the new key counts.
pub async fn roster_rotate(ctx: &Context, name: &str, key: &str) -> Result<RosterEntry> {
    roster_change(ctx, name, Some(key)).await
}

/// Remove `name` from the roster (`raglab study roster remove`): their labels
/// written before count; from it on none of theirs does.
pub async fn roster_remove(ctx: &Context, name: &str) -> Result<RosterEntry> {
    roster_change(ctx, name, None).await
}

/// The roster as `raglab study roster list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RosterView {
    /// (name, role, public key), the lead first.
    pub entries: Vec<(String, String, String)>,
    pub refused: Vec<Refusal>,
    /// This user's public key.
    pub me: String,
    pub signed: bool,
    /// The id every row of the study is signed with (none: an unsigned study, or
    /// one founded before study ids, whose signatures are not bound to it).
    pub study_id: Option<String>,
}

pub async fn roster_list(ctx: &Context) -> Result<RosterView> {
    let (roster, refused) = roster(ctx).await?;
    let me = my_key(ctx)?.public_hex();
    Ok(RosterView {
        entries: roster
            .entries()
            .into_iter()
            .map(|(n, r, k)| (n.to_string(), r.to_string(), k.to_string()))
            .collect(),
        refused,
        me,
        signed: roster.is_signed(),
        study_id: roster.binding().study_id().map(str::to_string),
    })
}

/// What `roster list` says of a signed study founded before study ids.
pub const UNBOUND: &str = "this study's signatures carry no study id (its roster was founded by an earlier raglab): a signed row copied from another study whose roster gives its author the same key would count here; found a new study to bind them";

/// The line every view of an unsigned study shows.
pub const UNSIGNED: &str =
    "unsigned study (no roster): every label counts under the name it carries";
