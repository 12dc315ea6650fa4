//! Agreement pane: the agreement table (criteria and Overall; kappa and macro-F1 with
//! bootstrap CIs for R1 vs R2, Judge vs R1, Judge vs R2) with the paper's values as a
//! reference row, a chart of kappa per criterion with CI whiskers, the confusion matrix
//! of the selected pair and criterion, and the items on which that pair disagrees.
//! The bootstrap runs as a background job (`r` recomputes; another process's commits
//! recompute it by themselves). A reviewer sees statistics and per-item detail only
//! over items revealed to them, no one without a reviewer name (typing it
//! in the Annotate pane recomputes the pane); the lead (`--role lead`) sees everything and
//! adjudicates disagreements: `enter` on one, its label key, a rationale, `enter`.
//! Also: judge within human noise (paired bootstrap Δκ with its CI), the judge against
//! the final labels, the reviewer pair (`p`), the judge model (`m`), the label version
//! (`v`: blind labels or the newest) and an export as CSV and markdown (`e`).
//! With more than two reviewers (or ordered labels) a band shows every reviewer at
//! once: Fleiss' kappa and Krippendorff's alpha per criterion, and the pairwise kappa
//! matrix of the selected criterion. Tables fit their columns to the widest cell and
//! scroll sideways (`h`/`l`) rather than cut a number. Under them, agreement over
//! time: alpha and the pair's kappa per window of items in the order they were
//! revealed (`agreement_drift`); for the lead, each reviewer's accuracy on gold items
//! and time per item (`agreement_lead`).

mod drift;
mod grid;
mod lead;
mod preferences;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::core::agreement::raters::RaterReport;
use crate::core::agreement::{AgreementReport, Estimate, NoiseReport};
use crate::core::blinding::LabelVersion;
use crate::core::rubric::Rubric;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::study::noise_verdict;
use crate::service::study::{Agreement, RaterPair};
use crate::service::study::{AgreementRow, Disagreement, Label};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;
use grid::Grid;

/// What the Agreement pane asks a recomputation for.
pub struct AgreementAsk {
    pub pair_choice: Option<(String, String)>,
    pub pair: RaterPair,
    pub version: LabelVersion,
    pub judge_model: Option<String>,
}

#[derive(Default)]
pub struct AgreementPane {
    /// A final label decided in the adjudication, for the app to commit like any label.
    final_to_save: Option<Label>,
    rows: Vec<AgreementRow>,
    reviewers: Option<(String, String)>,
    computing: bool,
    /// The newest recomputation asked for; older results are dropped.
    ticket: u64,
    pair: RaterPair,
    criterion: usize,
    status: Option<String>,
    /// Items where the selected pair disagrees: (item id, criterion, label a, label b).
    disagreements: Vec<Disagreement>,
    /// The selected disagreement.
    selected: usize,
    /// The whole last result (noise, judge vs final, provenance).
    last: Option<Box<Agreement>>,
    version: LabelVersion,
    /// The judge model compared: `None` all, else an index into the result's models.
    judge_model: Option<String>,
    /// The reviewer pair asked for (`None`: the two with most labels).
    pair_choice: Option<(String, String)>,
    /// The study lead (adjudicates; sees everything).
    lead: bool,
    /// The lead's name, recorded with each final label.
    lead_name: Option<String>,
    rubric: Option<Rubric>,
    /// The adjudication being made: the chosen final label and the rationale.
    adjudication: Option<(Option<String>, TextInput)>,
    /// Columns the wide tables are scrolled by (`h`/`l`).
    scroll: usize,
    /// The lead's ranking of a pairwise study's runs (`None`: not the lead, or no
    /// pair items).
    preferences: Option<Box<crate::service::study::Preferences>>,
}

/// What the Agreement pane is set up with: whether the viewer is the study's lead
/// (who adjudicates and sees everything), the lead's name (recorded with each final
/// label), and the rubric the final labels are checked against.
#[derive(Debug, Clone, Default)]
pub struct AgreementSettings {
    pub lead: bool,
    pub lead_name: Option<String>,
    pub rubric: Option<Rubric>,
}

impl AgreementPane {
    pub fn new(settings: AgreementSettings) -> Self {
        Self {
            lead: settings.lead,
            lead_name: settings.lead_name,
            rubric: settings.rubric,
            ..Self::default()
        }
    }

    /// The rubric final labels are made with: the study's pinned one once a read of
    /// the study found it, else the one the pane started with.
    pub fn rubric(&self) -> Option<&Rubric> {
        self.rubric.as_ref()
    }

    /// The study was read and its lead has pinned `rubric`: adjudicate with it from
    /// now on. Why here: a pin made after the TUI started would otherwise leave the
    /// lead adjudicating under the rubric read at start-up, whose final labels the
    /// study refuses, until a restart.
    pub fn on_study_rubric(&mut self, rubric: Rubric) {
        self.rubric = Some(rubric);
    }

    /// The newest recomputation asked for (0: none yet).
    pub fn ticket(&self) -> u64 {
        self.ticket
    }

    /// Whether a recomputation is running.
    pub fn is_computing(&self) -> bool {
        self.computing
    }

    /// The rater pair whose disagreements are listed.
    pub fn pair(&self) -> RaterPair {
        self.pair
    }

    /// The disagreements of the pair on screen.
    pub fn disagreements(&self) -> &[Disagreement] {
        &self.disagreements
    }

    /// The lead's ranking of a pairwise study's runs, once computed.
    pub fn preferences(&self) -> Option<&crate::service::study::Preferences> {
        self.preferences.as_deref()
    }

    /// Say `what` in the pane's status line.
    pub fn say(&mut self, what: String) {
        self.status = Some(what);
    }

    /// The ranking of a pairwise study finished (for the newest request only); an
    /// error is shown when there is no agreement table to show instead.
    pub fn on_preferences(
        &mut self,
        ticket: u64,
        result: Result<Option<Box<crate::service::study::Preferences>>, String>,
    ) {
        if ticket != self.ticket {
            return;
        }
        match result {
            Ok(p) => self.preferences = p,
            Err(e) => {
                self.preferences = None;
                if self.rows.is_empty() {
                    self.status = Some(e);
                }
            }
        }
    }

    /// A recomputation starts: its ticket (a newer one drops an older result) and what
    /// the pane asks for (the reviewer pair, the rater pair, the label version, the
    /// judge model).
    pub fn start_refresh(&mut self) -> (u64, AgreementAsk) {
        self.ticket += 1;
        self.computing = true;
        let ask = AgreementAsk {
            pair_choice: self.pair_choice.clone(),
            pair: self.pair,
            version: self.version,
            judge_model: self.judge_model.clone(),
        };
        (self.ticket, ask)
    }

    /// A read of the roster found that this user does not lead the study: no
    /// adjudication, no lead's view from now on.
    pub fn not_the_lead(&mut self) {
        self.lead = false;
        self.lead_name = None;
    }

    /// The viewer's name changed: a lead's band names the new name.
    pub fn on_viewer_named(&mut self, name: Option<String>) {
        if self.lead {
            self.lead_name = name;
        }
    }

    /// The agreement on screen (what an export writes).
    pub fn shown(&self) -> Option<&Agreement> {
        self.last.as_deref()
    }

    /// The final label the lead just decided in the adjudication, taken once.
    pub fn take_final(&mut self) -> Option<Label> {
        self.final_to_save.take()
    }

    /// Apply a finished computation.
    pub fn on_result(&mut self, a: Agreement) {
        self.rows = a.rows.clone();
        self.reviewers = Some(a.reviewers.clone());
        self.disagreements = a.disagreements.clone();
        self.selected = self
            .selected
            .min(self.disagreements.len().saturating_sub(1));
        self.status = None;
        self.last = Some(Box::new(a));
    }

    /// A computation finished; a result whose ticket is not the newest request's is
    /// dropped (a newer request is on its way).
    pub fn on_agreement(&mut self, ticket: u64, result: Result<Agreement, String>) {
        if ticket != self.ticket {
            return;
        }
        self.computing = false;
        match result {
            Ok(a) => self.on_result(a),
            Err(e) => self.on_error(e),
        }
    }

    /// The agreement export finished: where it went, or why it failed.
    pub fn on_exported(&mut self, result: Result<String, String>) {
        self.status = Some(result.unwrap_or_else(|e| e));
    }

    /// A computation failed or was refused (blind, no identity): nothing of an
    /// earlier result stays on screen, only the reason.
    pub fn on_error(&mut self, e: String) {
        self.rows.clear();
        self.reviewers = None;
        self.disagreements.clear();
        self.selected = 0;
        self.adjudication = None;
        self.last = None;
        self.status = Some(e);
    }

    /// Whether the adjudication panel is open.
    pub fn adjudicating(&self) -> bool {
        self.adjudication.is_some()
    }

    /// Whether `c` picks a final label of the disagreement being adjudicated.
    pub fn is_label_key(&self, c: char) -> bool {
        matches!(&self.adjudication, Some((None, _))) && self.label_for_key(c).is_some()
    }

    fn label_for_key(&self, c: char) -> Option<String> {
        let d = self.disagreements.get(self.selected)?;
        let r = self.rubric.as_ref()?;
        let crit = r.criterion(&d.criterion)?;
        r.label_for_key(crit, c).map(str::to_string)
    }

    /// The label keys of the selected disagreement's criterion, for the panel.
    fn label_keys(&self) -> String {
        let (Some(d), Some(r)) = (self.disagreements.get(self.selected), &self.rubric) else {
            return String::new();
        };
        r.criterion(&d.criterion)
            .map(|c| {
                r.labels_of(c)
                    .iter()
                    .map(|l| format!("{}={l}", r.key_of(l)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }

    /// The next reviewer pair among the reviewers of the last result.
    fn next_reviewer_pair(&mut self) {
        let Some(a) = &self.last else { return };
        let names = &a.reviewer_names;
        let pairs: Vec<(String, String)> = names
            .iter()
            .enumerate()
            .flat_map(|(i, x)| names[i + 1..].iter().map(move |y| (x.clone(), y.clone())))
            .collect();
        if pairs.is_empty() {
            self.status = Some("only one reviewer has labels".into());
            return;
        }
        let cur = pairs.iter().position(|p| *p == a.reviewers).unwrap_or(0);
        self.pair_choice = Some(pairs[(cur + 1) % pairs.len()].clone());
    }

    /// The next judge model: all, then each model file.
    fn next_judge_model(&mut self) {
        let Some(a) = &self.last else { return };
        let models = &a.judge_models;
        self.judge_model = match &self.judge_model {
            None => models.first().cloned(),
            Some(m) => models
                .iter()
                .position(|x| x == m)
                .and_then(|i| models.get(i + 1).cloned()),
        };
    }

    /// Apply an adjudication key; returns the final label to save when complete.
    fn adjudicate_step(&mut self, action: Action) -> Option<Label> {
        let (chosen, rationale) = self.adjudication.as_mut()?;
        match action {
            Action::CloseOverlay | Action::CancelInput => {
                self.adjudication = None;
            }
            Action::LabelKey(c) if chosen.is_none() => {
                let l = self.label_for_key(c)?;
                if let Some((chosen, rationale)) = self.adjudication.as_mut() {
                    *chosen = Some(l);
                    rationale.open();
                }
            }
            Action::InputBackspace => {
                rationale.backspace();
            }
            Action::SubmitInput => {
                let text = rationale.text().trim().to_string();
                if text.is_empty() {
                    self.status = Some("a rationale is required: type why, then enter".into());
                    return None;
                }
                let label = chosen.clone()?;
                let d = self.disagreements.get(self.selected)?.clone();
                let rubric = self.rubric.as_ref()?;
                let lead = self.lead_name.clone().unwrap_or_else(|| "lead".into());
                self.adjudication = None;
                self.status = Some(format!(
                    "saving the final label of {} {}…",
                    d.item_id, d.criterion
                ));
                return Some(crate::service::study::final_label(
                    rubric,
                    &lead,
                    &d.item_id,
                    &d.criterion,
                    &label,
                    &text,
                ));
            }
            _ => {}
        }
        None
    }
}

fn est(e: &Estimate) -> String {
    match (e.value, e.lo, e.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2},{hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "undefined".into(),
    }
}

/// Whether the study is signed, and the first stored row that does not count
/// (`raglab agree` lists them all).
fn trust_note(a: &crate::service::study::Agreement) -> String {
    let signed = if a.signed { "" } else { " · unsigned study" };
    match a.refused.first() {
        Some(r) => format!(
            "{signed} · {} stored rows not counted: {}{}",
            a.refused.len(),
            clean(&r.why),
            if a.refused.len() > 1 { " …" } else { "" }
        ),
        None => signed.to_string(),
    }
}

impl AgreementPane {
    /// The pair table's cells: kappa and macro-F1 per criterion for the three pairs,
    /// judge within noise, the judge against the final labels, and the paper's row.
    fn table_grid(&self, theme: &Theme) -> Grid {
        let (r1, r2) = self.reviewers.clone().unwrap_or_default();
        let (r1, r2) = (clean(&r1), clean(&r2));
        let mut g = Grid::new(vec![
            "criterion".to_string(),
            format!("κ {r1}/{r2}"),
            format!("F1 {r1}/{r2}"),
            format!("κ judge/{r1}"),
            format!("F1 judge/{r1}"),
            format!("κ judge/{r2}"),
            format!("F1 judge/{r2}"),
            format!("Δκ j/{r1}−{r1}/{r2}"),
            format!("Δκ j/{r2}−{r1}/{r2}"),
            "κ judge/final".to_string(),
        ]);
        for (i, r) in self.rows.iter().enumerate() {
            let mut cells = vec![clean(&r.criterion)];
            for (_, rep) in &r.pairs {
                match rep {
                    Some(rep) => cells.extend([est(&rep.kappa), est(&rep.macro_f1)]),
                    None => cells.extend(["no data".into(), String::new()]),
                }
            }
            cells.extend(self.noise_cells(i));
            cells.push(self.vs_final(i));
            let style = if i == self.criterion {
                theme.selected
            } else {
                theme.text
            };
            g.push(cells, style);
        }
        let paper = [
            "paper Overall n=100",
            "0.56 [0.48,0.64]",
            "0.78 [0.74,0.82]",
            "0.42",
            "0.71",
            "0.55",
            "0.78",
        ];
        g.push(paper.map(String::from).to_vec(), theme.muted);
        g
    }

    /// Judge within human noise of row `i`, against each reviewer.
    fn noise_cells(&self, i: usize) -> [String; 2] {
        let Some((_, n)) = self.last.as_ref().and_then(|a| a.noise.get(i)) else {
            return [String::new(), String::new()];
        };
        let one = |e: &Estimate| {
            let mark = match noise_verdict(e) {
                "within noise" => " ≈",
                "outside noise" => " ≠",
                _ => "",
            };
            format!("{}{mark}", est(e))
        };
        let n: &NoiseReport = n;
        [one(&n.vs_first), one(&n.vs_second)]
    }

    /// The judge's kappa against the final labels in row `i`.
    fn vs_final(&self, i: usize) -> String {
        self.last
            .as_ref()
            .and_then(|a| a.judge_vs_final.get(i))
            .and_then(|(_, r)| r.as_ref())
            .map(|r| est(&r.kappa))
            .unwrap_or_else(|| "-".into())
    }

    /// The line above the table: the bootstrap, judge model, label version, trust.
    fn meta_line(&self) -> Option<String> {
        let a = self.last.as_ref()?;
        let hidden = if a.hidden_items > 0 {
            format!(
                " · {} items not yet revealed to you left out",
                a.hidden_items
            )
        } else {
            String::new()
        };
        let judge = a
            .judge_model
            .clone()
            .unwrap_or_else(|| format!("all ({})", a.judge_models.join(", ")));
        let version = match a.version {
            LabelVersion::BeforeReveal => "blind (last before reveal)",
            LabelVersion::Latest => "newest",
        };
        Some(format!(
            "B = {} · seed {} · judge model: {} · labels: {version} · {} changed after reveal{hidden}{}",
            a.bootstrap.resamples,
            a.bootstrap.seed,
            clean(&judge),
            a.changed_after_reveal,
            trust_note(a)
        ))
    }

    /// The table: kappa and macro-F1 per criterion for the three pairs, and the paper.
    fn draw_table(&self, f: &mut Frame, table_area: Rect, theme: &Theme) {
        let [meta_area, table_rect] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(table_area);
        // A message (an export, a refusal) takes the line until the next action.
        let line = match &self.status {
            Some(s) => Line::styled(clean(s), theme.filter),
            None => Line::styled(self.meta_line().unwrap_or_default(), theme.muted),
        };
        f.render_widget(Paragraph::new(line), meta_area);
        let title = format!(
            " Agreement (95% bootstrap CI; ≈ judge within human noise) · j/k criterion · x pair · p reviewers · m judge · v labels · e export · r recompute{}",
            if self.computing {
                " · computing…"
            } else {
                ""
            }
        );
        self.table_grid(theme)
            .render(f, table_rect, self.scroll, &title, theme);
    }

    /// The all-reviewer report when it has more than two reviewers (or ordered labels).
    fn raters(&self) -> Option<&RaterReport> {
        self.last.as_ref()?.raters.as_ref()
    }

    /// The all-reviewer table: units, Fleiss' kappa, alpha, AC1 and Brennan-Prediger
    /// per criterion.
    fn raters_grid(&self, r: &RaterReport, theme: &Theme) -> Grid {
        let mut header: Vec<String> = ["criterion", "units", "all", "Fleiss κ", "α nominal"]
            .map(String::from)
            .to_vec();
        if r.ordered {
            header.extend(["α ordinal".into(), "α interval".into()]);
        }
        header.extend(["AC1".into(), "BP".into()]);
        let mut g = Grid::new(header);
        let opt = |e: &Option<Estimate>| e.as_ref().map(est).unwrap_or_default();
        for (i, row) in r.rows.iter().enumerate() {
            let mut cells = vec![
                clean(&row.criterion),
                row.units.to_string(),
                row.complete_units.to_string(),
                est(&row.fleiss_kappa),
                est(&row.alpha_nominal),
            ];
            if r.ordered {
                cells.extend([opt(&row.alpha_ordinal), opt(&row.alpha_interval)]);
            }
            cells.extend([
                est(&row.ac1.as_estimate()),
                est(&row.brennan_prediger.as_estimate()),
            ]);
            let style = if i == self.criterion {
                theme.selected
            } else {
                theme.text
            };
            g.push(cells, style);
        }
        g
    }

    /// The pairwise kappa matrix of the selected criterion: Cohen's kappa above the
    /// diagonal, quadratic weighted kappa below it for ordered labels (else kappa).
    fn matrix_grid(&self, r: &RaterReport, theme: &Theme) -> Grid {
        let names: Vec<String> = r.raters.iter().map(|n| clean(n)).collect();
        let mut header = vec![String::new()];
        header.extend(names.iter().cloned());
        let mut g = Grid::new(header);
        let Some(row) = r.rows.get(self.criterion) else {
            return g;
        };
        for (i, a) in r.raters.iter().enumerate() {
            let mut cells = vec![names[i].clone()];
            for (j, b) in r.raters.iter().enumerate() {
                let cell = match row.pair(a, b) {
                    None => "—".to_string(),
                    Some(p) if i > j && r.ordered => {
                        p.quadratic.as_ref().map(est).unwrap_or_default()
                    }
                    Some(p) => est(&p.kappa),
                };
                cells.push(cell);
            }
            g.push(cells, theme.text);
        }
        g
    }

    /// Every reviewer at once: the all-reviewer table and the pairwise matrix.
    fn draw_raters(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let Some(r) = self.raters() else { return };
        let (table, matrix) = (self.raters_grid(r, theme), self.matrix_grid(r, theme));
        let left = table.needed().min(area.width.saturating_mul(3) / 5);
        let [left_area, right_area] =
            Layout::horizontal([Constraint::Length(left), Constraint::Min(10)]).areas(area);
        let title = format!(
            " Every reviewer ({}) · {} items · α: units with 2+ labels · Fleiss: all labelled",
            r.raters.len(),
            r.items
        );
        table.render(f, left_area, self.scroll, &title, theme);
        let criterion = r.rows.get(self.criterion).map(|row| clean(&row.criterion));
        let title = format!(
            " Pairwise κ · {} · {}",
            criterion.unwrap_or_default(),
            if r.ordered {
                "above: Cohen's κ, below: quadratic weighted κ"
            } else {
                "Cohen's κ"
            }
        );
        matrix.render(f, right_area, self.scroll, &title, theme);
    }

    /// Kappa per criterion with its CI as whiskers, for the selected pair.
    fn draw_chart(&self, f: &mut Frame, chart_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        // Kappa per criterion with CI whiskers on a [-1, 1] axis.
        let width = usize::from(chart_area.width.saturating_sub(24)).max(10);
        let pos = |v: f64| {
            (((v + 1.0) / 2.0) * (width - 1) as f64)
                .round()
                .clamp(0.0, (width - 1) as f64) as usize
        };
        let mut lines = vec![Line::styled(
            format!("{:<20}-1{}+1", "", " ".repeat(width.saturating_sub(4))),
            theme.muted,
        )];
        for r in &self.rows {
            let mut bar = vec![' '; width];
            bar[pos(0.0)] = '┆';
            if let Some(Some(rep)) = r.pairs.get(self.pair.index()).map(|p| p.1.as_ref()) {
                if let (Some(lo), Some(hi)) = (rep.kappa.lo, rep.kappa.hi) {
                    for c in bar.iter_mut().take(pos(hi) + 1).skip(pos(lo)) {
                        *c = '─';
                    }
                    bar[pos(lo)] = '├';
                    bar[pos(hi)] = '┤';
                }
                if let Some(v) = rep.kappa.value {
                    bar[pos(v)] = '●';
                }
            }
            lines.push(Line::from(vec![
                Span::styled(format!("{:<20}", clean(&r.criterion)), theme.text),
                Span::styled(bar.into_iter().collect::<String>(), theme.score_bar),
            ]));
        }
        let pair_name = self
            .rows
            .first()
            .and_then(|r| r.pairs.get(self.pair.index()))
            .map(|p| clean(&p.0))
            .unwrap_or_default();
        f.render_widget(
            Paragraph::new(lines).block(block(format!(" κ with 95% CI · {pair_name} "))),
            chart_area,
        );
    }

    /// The confusion matrix of the selected pair and criterion.
    fn draw_confusion(&self, f: &mut Frame, matrix_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        let mut m = vec![];
        if let Some(rep) = self.selected() {
            let c = &rep.confusion;
            m.push(Line::styled(
                format!(
                    "{:>8} {}",
                    "",
                    c.labels
                        .iter()
                        .map(|l| format!("{l:>6}"))
                        .collect::<String>()
                ),
                theme.title,
            ));
            for (i, l) in c.labels.iter().enumerate() {
                m.push(Line::styled(
                    format!(
                        "{l:>8} {}",
                        c.counts[i]
                            .iter()
                            .map(|n| format!("{n:>6}"))
                            .collect::<String>()
                    ),
                    theme.text,
                ));
            }
            m.push(Line::styled(
                format!("n = {} labels on {} items", rep.units, rep.items),
                theme.muted,
            ));
        }
        f.render_widget(
            Paragraph::new(m).block(block(" Confusion (rows: first) ".into())),
            matrix_area,
        );
    }

    /// The items on which the selected pair disagrees (only items revealed to the
    /// viewer), the selected one's notes, judge and final labels, and the
    /// adjudication panel.
    fn draw_disagreements(&self, f: &mut Frame, list_area: Rect, theme: &Theme) {
        let detail_rows = 6u16;
        let [list_rect, detail_rect] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(detail_rows + 2)])
                .areas(list_area);
        let height = usize::from(list_rect.height.saturating_sub(2)).max(1);
        let resolved = self
            .disagreements
            .iter()
            .filter(|d| d.final_label.is_some())
            .count();
        let title = format!(
            " Disagreements ({}, {resolved} adjudicated) · [ ] select{} ",
            self.disagreements.len(),
            if self.lead {
                " · enter adjudicate"
            } else {
                ""
            }
        );
        f.render_widget(
            Paragraph::new(self.disagreement_lines(height, theme)).block(theme.block(title, false)),
            list_rect,
        );
        f.render_widget(
            Paragraph::new(self.detail_lines(theme))
                .wrap(Wrap { trim: false })
                .block(theme.block(" Selected disagreement ", self.adjudicating())),
            detail_rect,
        );
    }

    /// The list of disagreements, scrolled so the selected one shows.
    fn disagreement_lines(&self, height: usize, theme: &Theme) -> Vec<Line<'static>> {
        let first = self.selected.saturating_sub(height - 1);
        self.disagreements
            .iter()
            .enumerate()
            .skip(first)
            .take(height)
            .map(|(i, d)| {
                let done = d
                    .final_label
                    .as_ref()
                    .map(|(l, _)| format!(" → final {l}"))
                    .unwrap_or_default();
                let style = if i == self.selected {
                    theme.selected
                } else if d.final_label.is_some() {
                    theme.muted
                } else {
                    theme.error
                };
                let mark = if i == self.selected { "▶" } else { " " };
                let text = format!(
                    "{mark}{}  {}: {} vs {}{done}",
                    d.item_id, d.criterion, d.first, d.second
                );
                Line::styled(clean(&text), style)
            })
            .collect()
    }

    /// The selected disagreement: both labels with notes, the judge's, and the
    /// adjudication's state.
    fn detail_lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let Some(d) = self.disagreements.get(self.selected) else {
            return Vec::new();
        };
        let (a, b) = self.pair.raters(
            self.reviewers
                .as_ref()
                .map(|(x, y)| (x.as_str(), y.as_str()))
                .unwrap_or(("R1", "R2")),
        );
        let note = |n: &Option<String>| {
            n.as_deref()
                .map(|n| format!(" · note: {}", clean(n)))
                .unwrap_or_default()
        };
        let judge = clean(d.judge.as_deref().unwrap_or("not judged"));
        let mut lines = vec![
            Line::styled(
                clean(&format!("{} · {}", d.item_id, d.criterion)),
                theme.title,
            ),
            Line::styled(
                format!("{}: {}{}", clean(&a), clean(&d.first), note(&d.first_note)),
                theme.text,
            ),
            Line::styled(
                format!(
                    "{}: {}{}",
                    clean(&b),
                    clean(&d.second),
                    note(&d.second_note)
                ),
                theme.text,
            ),
            Line::styled(format!("judge: {judge}"), theme.muted),
        ];
        let state = match (&self.adjudication, &d.final_label) {
            (Some((None, _)), _) => Some((
                format!("final label? {} (esc cancels)", self.label_keys()),
                theme.filter,
            )),
            (Some((Some(l), input)), _) => Some((
                format!(
                    "final {}: rationale: {}▏ (enter saves)",
                    clean(l),
                    clean(input.text())
                ),
                theme.filter,
            )),
            (None, Some((l, why))) => {
                Some((format!("final: {} · {}", clean(l), clean(why)), theme.pass))
            }
            (None, None) => None,
        };
        lines.extend(state.map(|(text, style)| Line::styled(text, style)));
        lines
    }

    /// The most columns any table can be scrolled by (each table stops earlier
    /// once its last column shows).
    fn scroll_limit(&self) -> usize {
        let raters = self.raters().map_or(0, |r| r.raters.len());
        // The pair table has nine data columns.
        9usize.max(raters).saturating_sub(1)
    }

    fn selected(&self) -> Option<&AgreementReport> {
        self.rows
            .get(self.criterion)?
            .pairs
            .get(self.pair.index())?
            .1
            .as_ref()
    }
}

impl PaneView for AgreementPane {
    /// Apply an action; a recomputation is returned as an effect.
    fn update(&mut self, action: Action) -> Option<Effect> {
        if !self.adjudicating() {
            self.status = None;
        }
        if self.adjudicating() {
            self.final_to_save = self.adjudicate_step(action);
            return None;
        }
        match action {
            Action::Refresh => return Some(Effect::RefreshAgreement),
            Action::NextReviewerPair => {
                self.next_reviewer_pair();
                return Some(Effect::RefreshAgreement);
            }
            Action::NextJudgeModel => {
                self.next_judge_model();
                return Some(Effect::RefreshAgreement);
            }
            Action::ToggleLabelVersion => {
                self.version = match self.version {
                    LabelVersion::BeforeReveal => LabelVersion::Latest,
                    LabelVersion::Latest => LabelVersion::BeforeReveal,
                };
                return Some(Effect::RefreshAgreement);
            }
            Action::ExportTable => {
                if self.last.is_none() {
                    self.status = Some("nothing to export yet".into());
                    return None;
                }
                return Some(Effect::ExportAgreement);
            }
            Action::NextDisagreement => {
                self.selected = (self.selected + 1).min(self.disagreements.len().saturating_sub(1));
            }
            Action::PrevDisagreement => self.selected = self.selected.saturating_sub(1),
            Action::Adjudicate => {
                if !self.lead {
                    self.status = Some("adjudication is for the study lead".into());
                } else if self.pair != RaterPair::Reviewers {
                    self.status =
                        Some("adjudicate the reviewers' disagreements: `x` back to R1/R2".into());
                } else if self.disagreements.get(self.selected).is_some() {
                    self.adjudication = Some((None, TextInput::default()));
                } else {
                    self.status = Some("no disagreement to adjudicate".into());
                }
            }
            Action::NextPair => {
                // The disagreement list belongs to the pair: recompute it for the new one.
                self.pair = self.pair.next();
                return Some(Effect::RefreshAgreement);
            }
            Action::FocusRight => self.scroll = (self.scroll + 1).min(self.scroll_limit()),
            Action::FocusLeft => self.scroll = self.scroll.saturating_sub(1),
            Action::NextCriterion | Action::Down => {
                self.criterion = (self.criterion + 1) % self.rows.len().max(1);
            }
            Action::Up => {
                self.criterion =
                    (self.criterion + self.rows.len().max(1) - 1) % self.rows.len().max(1)
            }
            _ => {}
        }
        None
    }

    /// While the rationale of an adjudication is typed.
    fn editing(&self) -> bool {
        matches!(&self.adjudication, Some((Some(_), input)) if input.is_active())
    }

    fn input_char(&mut self, c: char) {
        if let Some((_, input)) = self.adjudication.as_mut() {
            input.push(c);
        }
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let band = self.preferences.as_deref().map_or(0, preferences::height);
        let [band_area, rest] =
            Layout::vertical([Constraint::Length(band), Constraint::Min(3)]).areas(area);
        if let Some(p) = self.preferences.as_deref() {
            preferences::draw(f, band_area, p, self.scroll, theme);
        }
        self.draw_agreement(f, rest, theme);
    }
}

impl AgreementPane {
    /// Everything but the preferences band.
    fn draw_agreement(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        if self.rows.is_empty() {
            let msg = if self.computing {
                "computing the bootstrap…".to_string()
            } else {
                self.status.clone().unwrap_or_else(|| {
                    "No agreement yet: two reviewers must label the same items (r to refresh)."
                        .into()
                })
            };
            f.render_widget(
                Paragraph::new(clean(&msg))
                    .wrap(Wrap { trim: true })
                    .style(theme.muted)
                    .block(theme.block(" Agreement ", false)),
                area,
            );
            return;
        }
        let raters_height = self
            .raters()
            .map_or(0, |r| r.rows.len().max(r.raters.len()) as u16 + 3);
        let drift = self.last.as_ref().and_then(|a| a.drift.as_ref());
        let drift_height = drift.map_or(0, |_| drift::HEIGHT);
        let lead_height = self.last.as_deref().map_or(0, lead::height);
        let [table_area, raters_area, lead_area, drift_area, bottom] = Layout::vertical([
            Constraint::Length(self.rows.len() as u16 + 6),
            Constraint::Length(raters_height),
            Constraint::Length(lead_height),
            Constraint::Length(drift_height),
            Constraint::Min(6),
        ])
        .areas(area);
        let [chart_area, matrix_area, list_area] = Layout::horizontal([
            Constraint::Percentage(40),
            Constraint::Percentage(25),
            Constraint::Percentage(35),
        ])
        .areas(bottom);
        self.draw_table(f, table_area, theme);
        self.draw_raters(f, raters_area, theme);
        if let Some(a) = self.last.as_deref().filter(|_| lead_height > 0) {
            lead::draw(f, lead_area, a, self.scroll, theme);
        }
        if let Some(d) = drift {
            drift::draw_drift(f, drift_area, d, theme);
        }
        self.draw_chart(f, chart_area, theme);
        self.draw_confusion(f, matrix_area, theme);
        self.draw_disagreements(f, list_area, theme);
    }
}
