//! Markdown structure: ATX and setext headers, fenced code blocks.
//!
//! Only what header chunking needs: where each header starts and ends, its level and
//! its title. Lines inside fenced code blocks are never headers (a `# comment` in a
//! shell snippet must not split a section).

/// One header found in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub level: usize,
    pub title: String,
    /// Byte offset of the first byte of the header construct.
    pub start: usize,
    /// Byte offset just past the header construct (after its line break).
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Blank,
    Content,
    Fence,
    Atx,
    /// A `===` (level 1) or `---` (level 2) line that may underline a setext header.
    Underline(usize),
}

struct Line<'a> {
    start: usize,
    next: usize,
    text: &'a str,
    kind: LineKind,
    atx: Option<(usize, String)>,
}

/// Find the headers of `text`, scanning from byte `from` (e.g. after front matter).
pub fn headers(text: &str, from: usize) -> Vec<Header> {
    let lines = classify(text, from);
    let mut out = Vec::new();
    let mut para_start: Option<usize> = None; // index of the first line of the open paragraph
    // Inside a list (since the last blank line) a `-` line is another list item and
    // the text above it a list item's lazy continuation: never a setext header.
    let mut in_list = false;
    for (i, line) in lines.iter().enumerate() {
        if line.kind == LineKind::Content && list_marker(line.text) {
            in_list = true;
        }
        match line.kind {
            LineKind::Atx => {
                let (level, title) = line.atx.clone().unwrap_or((1, String::new()));
                out.push(Header {
                    level,
                    title,
                    start: line.start,
                    end: line.next,
                });
                para_start = None;
            }
            LineKind::Underline(level) if para_start.is_some() && !in_list => {
                let first = para_start.unwrap_or(i);
                let title = lines[first..i]
                    .iter()
                    .map(|l| l.text.trim())
                    .collect::<Vec<_>>()
                    .join(" ");
                out.push(Header {
                    level,
                    title,
                    start: lines[first].start,
                    end: line.next,
                });
                para_start = None;
            }
            LineKind::Content | LineKind::Underline(_) => {
                if list_marker(line.text) {
                    in_list = true; // e.g. a lone `-`: an empty list item
                }
                // An underline without a paragraph above is a thematic break or text.
                if para_start.is_none() && line.kind == LineKind::Content {
                    para_start = Some(i);
                }
            }
            LineKind::Blank | LineKind::Fence => {
                para_start = None;
                in_list = false;
            }
        }
    }
    out
}

fn classify(text: &str, from: usize) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut start = from;
    for raw in text[from..].split_inclusive('\n') {
        let next = start + raw.len();
        let body = raw.trim_end_matches(['\n', '\r']);
        let kind;
        let mut atx = None;
        if let Some((ch, len)) = fence {
            if fence_marker(body)
                .is_some_and(|(c, l, rest)| c == ch && l >= len && rest.trim().is_empty())
            {
                fence = None;
            }
            kind = LineKind::Fence;
        } else if let Some((c, l, _)) = fence_marker(body) {
            fence = Some((c, l));
            kind = LineKind::Fence;
        } else if body.trim().is_empty() {
            kind = LineKind::Blank;
        } else if let Some(h) = atx_header(body) {
            atx = Some(h);
            kind = LineKind::Atx;
        } else if let Some(level) = underline(body) {
            kind = LineKind::Underline(level);
        } else {
            kind = LineKind::Content;
        }
        lines.push(Line {
            start,
            next,
            text: body,
            kind,
            atx,
        });
        start = next;
    }
    lines
}

/// A list item marker: `-`, `*`, `+` or `1.`/`1)` followed by a space or the line end.
fn list_marker(line: &str) -> bool {
    let l = line.trim_start();
    let rest = if let Some(r) = l.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 9 {
            return false;
        }
        match l[digits..].strip_prefix(['.', ')']) {
            Some(r) => r,
            None => return false,
        }
    };
    rest.is_empty() || rest.starts_with([' ', '\t'])
}

/// Up to three spaces of indentation.
fn unindent(line: &str) -> Option<&str> {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    (spaces <= 3).then(|| &line[spaces..])
}

/// A code fence: three or more backticks or tildes. Returns (char, length, rest).
fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let l = unindent(line)?;
    let c = l.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = l.len() - l.trim_start_matches(c).len();
    (n >= 3).then(|| (c, n, &l[n..]))
}

fn atx_header(line: &str) -> Option<(usize, String)> {
    let l = unindent(line)?;
    let level = l.len() - l.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &l[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    // Optional closing sequence of #s, preceded by a space.
    let mut title = rest.trim();
    let stripped = title.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with(' ') || stripped.ends_with('\t') {
        title = stripped.trim_end();
    }
    Some((level, title.to_string()))
}

fn underline(line: &str) -> Option<usize> {
    let l = unindent(line)?.trim_end();
    let c = l.chars().next()?;
    let level = match c {
        '=' => 1,
        '-' => 2,
        _ => return None,
    };
    l.chars().all(|x| x == c).then_some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(text: &str) -> Vec<(usize, String)> {
        headers(text, 0)
            .into_iter()
            .map(|h| (h.level, h.title))
            .collect()
    }

    #[test]
    fn atx_levels_and_closing_hashes() {
        let t = "# One\n## Two ##\n###Not\n####### seven\n   ### Three\n    # code\n#\n";
        assert_eq!(
            titles(t),
            vec![
                (1, "One".into()),
                (2, "Two".into()),
                (3, "Three".into()),
                (1, String::new())
            ]
        );
    }

    #[test]
    fn setext_headers_need_a_paragraph() {
        let t = "Title\n=====\n\ntext\n\n---\n\nSub part\nsecond line\n--\n";
        assert_eq!(
            titles(t),
            vec![(1, "Title".into()), (2, "Sub part second line".into())]
        );
        let h = headers(t, 0);
        assert_eq!(&t[h[0].start..h[0].end], "Title\n=====\n");
    }

    #[test]
    fn dashes_inside_lists_are_not_setext_underlines() {
        let t = "Text\n- item one\ncontinued\n-\nmore\n\nPara\n-\n";
        assert_eq!(titles(t), vec![(2, "Para".into())]);
    }

    #[test]
    fn fences_hide_headers() {
        let t = "# A\n```sh\n# not a header\nx\n```\n## B\n~~~~\n## hidden\n~~~\n## still hidden\n~~~~\n";
        assert_eq!(titles(t), vec![(1, "A".into()), (2, "B".into())]);
    }
}
