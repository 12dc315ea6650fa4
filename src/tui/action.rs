//! Actions: what to do. Keys map to actions through the keymap; background jobs send
//! actions carrying owned results. Names deserialize from snake_case (keymap `run`).

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    ToggleHelp,
    NextPane,
    PrevPane,
    PaneCorpus,
    PaneQuery,
    PaneGenerate,
    PaneAnnotate,
    PaneAgreement,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    FocusLeft,
    FocusRight,
    StartFilter,
    ClearFilter,
    SubmitInput,
    CancelInput,
    InputBackspace,
}
