//! Layout helpers shared by the panes and the overlays.

use ratatui::layout::{Constraint, Flex, Layout, Rect};

/// A rectangle of `pct_w` x `pct_h` percent, centred in `area` (for overlays).
pub fn centered(area: Rect, pct_w: u16, pct_h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Percentage(pct_h)])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Percentage(pct_w)])
        .flex(Flex::Center)
        .areas(v);
    h
}
