//! Keymap: TOML sections of `{ on, run, desc }` bindings. The defaults are embedded
//! from `assets/keymap.toml`; a user file overrides the keys it names, section by
//! section. The help overlay is generated from the same data.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;

use super::action::Action;

const DEFAULT: &str = include_str!("../../assets/keymap.toml");

#[derive(Debug, Clone, Deserialize)]
pub struct KeyBinding {
    pub on: String,
    pub run: Action,
    #[serde(default)]
    pub desc: String,
}

#[derive(Debug, Deserialize)]
struct Section {
    #[serde(default)]
    bindings: Vec<KeyBinding>,
}

/// A parsed key: code plus the modifiers that matter (shift is part of the character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(ev: KeyEvent) -> Self {
        let code = match ev.code {
            KeyCode::Tab if ev.modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            c => c,
        };
        Self {
            code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// Parse `q`, `?`, `C-c`, `A-x`, `tab`, `backtab`, `enter`, `esc`, `up`, `pgdn`, `f1`...
    pub fn parse(s: &str) -> Result<Self> {
        let (mut ctrl, mut alt, mut rest) = (false, false, s);
        loop {
            if let Some(r) = rest.strip_prefix("C-") {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("A-") {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pgup" => KeyCode::PageUp,
            "pgdn" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            f if f.starts_with('f') && f.len() > 1 && f[1..].parse::<u8>().is_ok() => {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            other => bail!("unknown key `{other}`"),
        };
        Ok(Self { code, ctrl, alt })
    }

    /// How the help overlay shows a key.
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".into(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Tab => "tab".into(),
            KeyCode::BackTab => "S-tab".into(),
            KeyCode::Enter => "enter".into(),
            KeyCode::Esc => "esc".into(),
            KeyCode::Backspace => "bksp".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "pgup".into(),
            KeyCode::PageDown => "pgdn".into(),
            KeyCode::Home => "home".into(),
            KeyCode::End => "end".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        format!(
            "{}{}{base}",
            if self.ctrl { "C-" } else { "" },
            if self.alt { "A-" } else { "" }
        )
    }
}

/// All sections, each an ordered list of (key, binding).
#[derive(Debug, Clone, Default)]
pub struct Keymap {
    sections: BTreeMap<String, Vec<(Key, KeyBinding)>>,
}

impl Keymap {
    fn parse(text: &str) -> Result<BTreeMap<String, Vec<(Key, KeyBinding)>>> {
        let raw: BTreeMap<String, Section> = toml::from_str(text)?;
        let mut out = BTreeMap::new();
        for (name, sec) in raw {
            let mut v = Vec::new();
            for b in sec.bindings {
                let key = Key::parse(&b.on).with_context(|| format!("in section [{name}]"))?;
                v.push((key, b));
            }
            out.insert(name, v);
        }
        Ok(out)
    }

    /// The embedded defaults.
    pub fn default_keymap() -> Self {
        // The embedded file is tested below; failing here would be a build defect.
        Self {
            sections: Self::parse(DEFAULT).unwrap_or_default(),
        }
    }

    /// Defaults overridden by the user's file, if it exists.
    pub fn load(user_file: &Path) -> Result<Self> {
        let mut map = Self::default_keymap();
        match std::fs::read_to_string(user_file) {
            Ok(text) => {
                let user = Self::parse(&text)
                    .with_context(|| format!("invalid keymap {}", user_file.display()))?;
                map.overlay(user);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", user_file.display()));
            }
        }
        Ok(map)
    }

    fn overlay(&mut self, user: BTreeMap<String, Vec<(Key, KeyBinding)>>) {
        for (name, bindings) in user {
            let sec = self.sections.entry(name).or_default();
            for (key, b) in bindings {
                sec.retain(|(k, _)| *k != key);
                sec.insert(0, (key, b));
            }
        }
    }

    /// The action bound to `key` in the first of `sections` that binds it.
    pub fn lookup(&self, sections: &[&str], key: Key) -> Option<Action> {
        sections.iter().find_map(|s| {
            self.sections
                .get(*s)?
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, b)| b.run)
        })
    }

    /// `(keys, description)` rows for the help overlay, merging keys with one action.
    pub fn help_rows(&self, section: &str) -> Vec<(String, String)> {
        let mut rows: Vec<(String, String)> = Vec::new();
        for (key, b) in self
            .sections
            .get(section)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            if let Some(row) = rows.iter_mut().find(|(_, d)| *d == b.desc) {
                row.0.push_str(", ");
                row.0.push_str(&key.label());
            } else {
                rows.push((key.label(), b.desc.clone()));
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keymap_parses() {
        let parsed = Keymap::parse(DEFAULT).expect("embedded keymap must parse");
        assert!(parsed.contains_key("global") && parsed.contains_key("corpus"));
        let km = Keymap::default_keymap();
        let q = Key::parse("q").expect("key");
        assert_eq!(km.lookup(&["corpus", "global"], q), Some(Action::Quit));
        assert_eq!(km.lookup(&["help", "global"], q), Some(Action::ToggleHelp));
    }

    #[test]
    fn user_file_overrides_one_key() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("keymap.toml");
        std::fs::write(&f, "[corpus]\nbindings = [{ on = \"x\", run = \"down\", desc = \"Down\" }, { on = \"j\", run = \"up\", desc = \"Up\" }]\n").expect("write");
        let km = Keymap::load(&f).expect("load");
        let k = |s: &str| Key::parse(s).expect("key");
        assert_eq!(km.lookup(&["corpus"], k("x")), Some(Action::Down));
        assert_eq!(km.lookup(&["corpus"], k("j")), Some(Action::Up));
        assert_eq!(
            km.lookup(&["corpus"], k("k")),
            Some(Action::Up),
            "untouched default"
        );
        std::fs::write(
            &f,
            "[corpus]\nbindings = [{ on = \"x\", run = \"explode\" }]\n",
        )
        .expect("write");
        assert!(Keymap::load(&f).is_err());
    }

    #[test]
    fn parses_modifiers_and_names() {
        let k = Key::parse("C-c").expect("key");
        assert!(k.ctrl && k.code == KeyCode::Char('c'));
        assert_eq!(Key::parse("pgdn").expect("key").code, KeyCode::PageDown);
        assert!(Key::parse("nonsense").is_err());
    }
}
