//! Themes: semantic style slots, loaded from TOML (`themes/*.toml`, embedded; a user
//! file in CONFIG_DIR/themes patches the default). Widget code asks for a slot
//! (`theme.rank_dense`), never for a raw colour.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::Block;
use serde::Deserialize;

const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

#[derive(Debug, Deserialize)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    slots: BTreeMap<String, SlotSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

macro_rules! theme_slots {
    ($($slot:ident),* $(,)?) => {
        /// Every styled element of the UI.
        #[derive(Debug, Clone, Default)]
        pub struct Theme {
            pub name: String,
            $(pub $slot: Style,)*
        }

        impl Theme {
            fn set(&mut self, slot: &str, style: Style) -> Result<()> {
                match slot {
                    $(stringify!($slot) => self.$slot = style,)*
                    other => bail!("unknown theme slot `{other}`"),
                }
                Ok(())
            }
        }
    };
}

theme_slots!(
    text,
    muted,
    border,
    focused_border,
    title,
    tab,
    tab_active,
    selected,
    status_bar,
    status_key,
    header_path,
    histogram,
    filter,
    error,
    rank_dense,
    rank_sparse,
    score_bar,
    target_chunk,
    pass,
    fail,
);

fn color(s: &str) -> Result<Color> {
    s.parse::<Color>()
        .map_err(|_| anyhow::anyhow!("unknown colour `{s}`"))
}

fn modifier(s: &str) -> Result<Modifier> {
    Ok(match s {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        other => bail!("unknown modifier `{other}`"),
    })
}

impl Theme {
    /// Apply a theme file's slots on top of `self`.
    fn patch(&mut self, toml_text: &str) -> Result<()> {
        let file: ThemeFile = toml::from_str(toml_text)?;
        if let Some(n) = file.name {
            self.name = n;
        }
        for (slot, spec) in file.slots {
            let mut style = Style::default();
            if let Some(fg) = &spec.fg {
                style = style.fg(color(fg)?);
            }
            if let Some(bg) = &spec.bg {
                style = style.bg(color(bg)?);
            }
            for m in &spec.modifiers {
                style = style.add_modifier(modifier(m)?);
            }
            self.set(&slot, style)
                .with_context(|| format!("in slot `{slot}`"))?;
        }
        Ok(())
    }

    /// A built-in theme by name.
    pub fn builtin(name: &str) -> Result<Self> {
        let mut theme = Self::default();
        // Every theme starts from dark so that a theme missing a slot still renders.
        theme.patch(BUILTIN[0].1).context("built-in dark theme")?;
        if name != "dark" {
            let (_, text) = BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .with_context(|| format!("no built-in theme `{name}`"))?;
            theme
                .patch(text)
                .with_context(|| format!("built-in theme `{name}`"))?;
        }
        Ok(theme)
    }

    /// Resolve a theme name: built-in, else `THEMES_DIR/NAME.toml` patched over dark.
    pub fn load(name: &str, themes_dir: &Path) -> Result<Self> {
        if BUILTIN.iter().any(|(n, _)| *n == name) {
            return Self::builtin(name);
        }
        let path = themes_dir.join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no theme `{name}` (built-in: dark, light, high-contrast; none at {})",
                path.display()
            )
        })?;
        let mut theme = Self::builtin("dark")?;
        theme
            .patch(&text)
            .with_context(|| format!("theme file {}", path.display()))?;
        Ok(theme)
    }

    /// A bordered box with a styled title, highlighted when it has the focus.
    pub fn block<'a>(&self, title: impl Into<String>, focused: bool) -> Block<'a> {
        Block::bordered()
            .title(Span::styled(title.into(), self.title))
            .border_style(if focused {
                self.focused_border
            } else {
                self.border
            })
    }

    pub fn names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_differ() {
        let dark = Theme::builtin("dark").expect("dark");
        let light = Theme::builtin("light").expect("light");
        let hc = Theme::builtin("high-contrast").expect("hc");
        assert_eq!(dark.name, "dark");
        assert_ne!(dark.text, light.text);
        assert_eq!(hc.selected.bg, Some(Color::Yellow));
    }

    #[test]
    fn user_theme_patches_dark() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("mine.toml"),
            "[slots]\ntitle = { fg = \"#ff0000\" }\n",
        )
        .expect("write");
        let t = Theme::load("mine", dir.path()).expect("load");
        assert_eq!(t.title.fg, Some(Color::Rgb(255, 0, 0)));
        assert_eq!(t.border, Theme::builtin("dark").expect("dark").border);
        std::fs::write(
            dir.path().join("bad.toml"),
            "[slots]\nnope = { fg = \"red\" }\n",
        )
        .expect("write");
        assert!(Theme::load("bad", dir.path()).is_err());
    }
}
