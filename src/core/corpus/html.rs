//! HTML guidance pages to markdown-like text, through a real HTML5 parser
//! (html5ever, the parser of Servo, building `scraper`'s arena tree): `<h1>`..`<h6>` become `#` headers, block
//! elements line breaks, list items `- ` lines, and everything a browser would not
//! show as the page's text (the head, scripts, styles, templates, navigation and the
//! site footer) is left out.
//!
//! Why a real parser: a page is written for browsers, not for a hand-made scanner.
//! A stray `<` (`children < 5`), a `>` inside an attribute value, an unclosed tag,
//! misnested inline tags, or any of HTML's ~2,200 named character references
//! (`&rsquo;`, `&mdash;`) must come out as a browser shows them; the HTML5 parsing
//! algorithm decides all of these the same way every browser does.

use scraper::{Html, Node};

/// A page's text as markdown, and its `<title>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlText {
    pub markdown: String,
    /// The text of the page's first `<title>`, whitespace collapsed (none when
    /// absent or blank).
    pub title: Option<String>,
}

/// Elements whose content is not the page's text: what the head holds, code, and
/// the site chrome around the guidance (navigation menus, the site footer).
const LEFT_OUT: &[&str] = &[
    "head", "script", "style", "noscript", "template", "nav", "footer", "svg", "math", "iframe",
    "object", "select", "button",
];

/// Elements that start and end a line of text.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "header",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tr",
    "ul",
];

/// The deepest nesting of elements a page may have. Why: html5ever's tree builder
/// looks through the stack of open elements at each end tag, so its time grows with
/// the square of the nesting (measured here: 5,000 `<div>` deep 71 ms, 20,000 deep
/// 0.8 s, 40,000 deep 3.7 s). Real guidance pages nest a few dozen deep; a page
/// past this limit is refused before parsing rather than left to hang an ingest.
pub const MAX_NESTING: usize = 5_000;

/// Elements the HTML5 algorithm never nests in themselves or that have no end tag:
/// they do not count toward [`MAX_NESTING`] (a list of 10,000 `<li>` without end
/// tags is 10,000 siblings, not 10,000 deep).
const FLAT: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "tbody", "thead",
    "tfoot", "colgroup", "rp", "rt", "html", "head", "body",
];

/// Elements an end tag may close through on the way to its match: phrasing elements
/// that are not "special" in the HTML5 tree builder's sense. An end tag whose match
/// lies below any other open element (a `div`, a `table`, a `ul`) is counted as
/// closing nothing, whatever the tree builder does: the estimate may then be high,
/// never low.
const PHRASING: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "label", "mark", "nobr", "output", "q", "ruby", "s", "samp", "small", "span",
    "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
];

/// The elements a tag scan holds open: their names in order, where each name is
/// open, and where the elements an end tag may not close through ([`PHRASING`]'s
/// complement) are. Every operation is amortised O(1): an element is pushed once
/// and popped once, so the scan is linear in the page.
#[derive(Default)]
struct OpenElements {
    names: Vec<String>,
    by_name: std::collections::HashMap<String, Vec<usize>>,
    barriers: Vec<usize>,
}

impl OpenElements {
    fn open(&mut self, name: String) {
        let at = self.names.len();
        if !PHRASING.contains(&name.as_str()) {
            self.barriers.push(at);
        }
        self.by_name.entry(name.clone()).or_default().push(at);
        self.names.push(name);
    }

    /// An end tag: it closes its most recent open match and everything above it,
    /// unless no element of that name is open (an end tag for nothing, `</i>` with no
    /// `<i>`, closes nothing) or a non-phrasing element lies above the match.
    fn close(&mut self, name: &str) {
        let Some(&at) = self.by_name.get(name).and_then(|v| v.last()) else {
            return;
        };
        if self.barriers.last().is_some_and(|&b| b > at) {
            return;
        }
        while self.names.len() > at {
            let n = self.names.pop().expect("above at");
            if self.barriers.last() == Some(&self.names.len()) {
                self.barriers.pop();
            }
            if let Some(v) = self.by_name.get_mut(&n) {
                v.pop();
            }
        }
    }
}

/// An upper estimate of how deep `html` nests its elements, read from its tags
/// alone in one linear scan: start tags open an element ([`FLAT`] ones are not
/// counted), end tags close as [`OpenElements::close`] says. An end tag that closes
/// nothing in the tree builder closes nothing here, so a page of `<div></i>` lines
/// is as deep as its `<div>`s.
fn nesting_estimate(html: &str) -> usize {
    let mut open = OpenElements::default();
    let mut deepest = 0usize;
    let b = html.as_bytes();
    let mut i = 0;
    while let Some(p) = b[i..].iter().position(|&c| c == b'<') {
        i += p + 1;
        let closing = b.get(i) == Some(&b'/');
        let from = i + usize::from(closing);
        let len = b[from..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        if len == 0 || !b[from].is_ascii_alphabetic() {
            continue;
        }
        let name = html[from..from + len].to_ascii_lowercase();
        if FLAT.contains(&name.as_str()) {
            continue;
        }
        if closing {
            open.close(&name);
        } else {
            // `<div/>` opens a div all the same (HTML5 ignores `/>` on elements
            // that are not void), so it counts.
            open.open(name);
            deepest = deepest.max(open.names.len());
        }
    }
    deepest
}

/// Convert an HTML page (see the module doc). The one refusal: a page nested deeper
/// than [`MAX_NESTING`]; every other input has a document under the HTML5
/// algorithm.
pub fn html_to_markdown(html: &str) -> Result<HtmlText, String> {
    let deep = nesting_estimate(html);
    if deep > MAX_NESTING {
        return Err(format!(
            "HTML nested {deep} elements deep (limit {MAX_NESTING}): refused, as parsing it would take time growing with the square of its depth"
        ));
    }
    let page = Html::parse_document(html);
    // The title lives in the head, which is left out of the text.
    let title = page
        .tree
        .root()
        .descendants()
        .find(|n| n.value().as_element().is_some_and(|e| e.name() == "title"))
        .map(|t| {
            let text: String = t
                .descendants()
                .filter_map(|d| d.value().as_text().map(|t| &**t))
                .collect();
            collapse(&text)
        });
    let mut w = Writer {
        title,
        ..Writer::default()
    };
    // Depth-first over an explicit stack (a page nested 100,000 deep must not
    // overflow the thread's stack; the arena tree is also dropped without
    // recursion): each element is entered, then its children, then left.
    let mut stack = vec![(page.tree.root(), false)];
    while let Some((node, leaving)) = stack.pop() {
        match node.value() {
            Node::Element(e) => {
                let tag = e.name();
                if leaving {
                    w.leave(tag);
                    continue;
                }
                if LEFT_OUT.contains(&tag) {
                    continue;
                }
                w.enter(tag);
                stack.push((node, true));
            }
            Node::Text(t) => w.text(t),
            Node::Document | Node::Fragment => {}
            // Comments, doctypes and processing instructions are not text.
            _ => continue,
        }
        let from = stack.len();
        stack.extend(node.children().map(|c| (c, false)));
        stack[from..].reverse();
    }
    Ok(HtmlText {
        markdown: tidy(&w.out),
        title: w.title.filter(|t| !t.is_empty()),
    })
}

/// Runs of HTML whitespace (ASCII space, tab, line breaks) as one space, trimmed:
/// how text outside `<pre>` renders. A no-break space is not HTML whitespace, and
/// stays.
fn collapse(s: &str) -> String {
    s.split(|c: char| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Default)]
struct Writer {
    out: String,
    title: Option<String>,
    /// Open `<pre>` elements: their text keeps its line breaks and spaces.
    pre: usize,
}

impl Writer {
    fn at_line_start(&self) -> bool {
        self.out.is_empty() || self.out.ends_with('\n')
    }

    fn enter(&mut self, tag: &str) {
        if let Some(level) = header_level(tag) {
            self.out.push('\n');
            self.out.push_str(&"#".repeat(level));
            self.out.push(' ');
            return;
        }
        match tag {
            "pre" => self.pre += 1,
            // Cells side by side: keep their words apart.
            "td" | "th" => self.out.push(' '),
            _ => {}
        }
        if BLOCKS.contains(&tag) {
            self.out.push('\n');
            if tag == "li" {
                self.out.push_str("- ");
            }
        }
    }

    fn leave(&mut self, tag: &str) {
        if tag == "pre" {
            self.pre = self.pre.saturating_sub(1);
        }
        if header_level(tag).is_some() || BLOCKS.contains(&tag) {
            self.out.push('\n');
        }
    }

    /// Text as shown: whitespace collapsed outside `<pre>`. A line of page text that
    /// starts with `#` is escaped (`\#`), so it cannot become a header, and with it
    /// a chunk boundary, that the page does not have.
    fn text(&mut self, s: &str) {
        if self.pre > 0 {
            for (n, line) in s.split('\n').enumerate() {
                if n > 0 {
                    self.out.push('\n');
                }
                self.push_escaped(line);
            }
            return;
        }
        let lead = s.starts_with(|c: char| c.is_ascii_whitespace());
        let body = collapse(s);
        if body.is_empty() {
            if lead && !self.at_line_start() && !self.out.ends_with(' ') {
                self.out.push(' ');
            }
            return;
        }
        if lead && !self.at_line_start() && !self.out.ends_with(' ') {
            self.out.push(' ');
        }
        self.push_escaped(&body);
        if s.ends_with(|c: char| c.is_ascii_whitespace()) {
            self.out.push(' ');
        }
    }

    fn push_escaped(&mut self, text: &str) {
        let trimmed_line = self.out.rsplit('\n').next().unwrap_or_default().trim();
        let starts_line = trimmed_line.is_empty() || trimmed_line == "-";
        if starts_line && text.trim_start().starts_with('#') {
            self.out.push('\\');
        }
        self.out.push_str(text);
    }
}

fn header_level(tag: &str) -> Option<usize> {
    match tag.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(usize::from(d - b'0')),
        _ => None,
    }
}

/// Lines trimmed, runs of blank lines as one, the whole trimmed.
fn tidy(out: &str) -> String {
    let mut cleaned = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.lines() {
        let line = line.trim();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        cleaned.push_str(line);
        cleaned.push('\n');
    }
    cleaned.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        html_to_markdown(html).expect("converted").markdown
    }

    #[test]
    fn headers_blocks_and_lists_become_markdown_and_the_head_is_the_title() {
        let html = "<html><head><style>h1{}</style><title> Measles \n facts</title></head><body>\
            <h1>Measles</h1><p>Intro &amp; more.</p><h2>Symptoms</h2><ul><li>Fever</li></ul>\
            <script>alert(1)</script></body></html>";
        let page = html_to_markdown(html).expect("converted");
        assert_eq!(
            page.markdown,
            "# Measles\n\nIntro & more.\n\n## Symptoms\n\n- Fever"
        );
        assert_eq!(page.title.as_deref(), Some("Measles facts"));
        assert_eq!(html_to_markdown("<p>x</p>").expect("converted").title, None);
    }

    #[test]
    fn a_stray_less_than_is_text_and_comments_are_dropped() {
        let html = "<h1>Dosing</h1><p>For children < 5 years, give half.</p>\
            <!-- a comment with > inside --><h2>Adults</h2><p>Give 1 dose if weight <50 kg.</p>";
        assert_eq!(
            md(html),
            "# Dosing\n\nFor children < 5 years, give half.\n\n## Adults\n\nGive 1 dose if weight <50 kg."
        );
        // A tag cut off at the end of the file is dropped, the text before it kept.
        assert_eq!(md("<p>kept</p><b class=\"x"), "kept");
    }

    /// What a hand-made scanner got wrong, each as a browser shows it.
    #[test]
    fn entities_attributes_and_misnesting_come_out_as_a_browser_shows_them() {
        assert_eq!(
            md("<p>It&rsquo;s 2&ndash;3 days &mdash; don&#8217;t wait&#x2026;&nbsp;ok</p>"),
            "It\u{2019}s 2\u{2013}3 days \u{2014} don\u{2019}t wait\u{2026}\u{a0}ok"
        );
        assert_eq!(
            md("<p>See <a title=\"a > b\" href=\"/x\">the chart</a>.</p>"),
            "See the chart."
        );
        assert_eq!(
            md("<p><b>bold <i>both</b> italic</i> plain</p>"),
            "bold both italic plain"
        );
        // Words in separate cells or inline tags across lines stay apart.
        assert_eq!(
            md("<table><tr><td>Age</td><td>Dose</td></tr><tr><td>2</td><td>5 mL</td></tr></table>"),
            "Age Dose\n\n2 5 mL"
        );
        assert_eq!(md("<p>one\n   <em>two</em>\nthree</p>"), "one two three");
    }

    #[test]
    fn site_chrome_is_left_out_and_page_text_cannot_fake_a_header() {
        let html = "<nav><ul><li>Home</li><li>A-Z</li></ul></nav>\
            <main><h1>Flu</h1><p># 1 tip: get vaccinated</p><pre>code\n# not a header</pre></main>\
            <footer>Page last reviewed: 2024</footer>";
        assert_eq!(
            md(html),
            "# Flu\n\n\\# 1 tip: get vaccinated\n\ncode\n\\# not a header"
        );
    }

    /// At the limit a page converts (and the walk does not overflow the stack);
    /// past it, it is refused before parsing. Unclosed `<li>` and void tags nest
    /// nothing and do not count; `<div/>` opens a div, and does.
    #[test]
    fn nesting_past_the_limit_is_refused_and_flat_tags_do_not_count() {
        let nest = |n: usize| format!("{}deep{}", "<div>".repeat(n), "</div>".repeat(n));
        assert_eq!(md(&nest(MAX_NESTING)), "deep");
        let err = html_to_markdown(&nest(MAX_NESTING + 1)).expect_err("too deep");
        assert!(
            err.starts_with("HTML nested 5001 elements deep (limit 5000)"),
            "{err}"
        );
        let flat = format!(
            "<ul>{}</ul>{}",
            "<li>x".repeat(3 * MAX_NESTING),
            "<br><img src=a><br/>".repeat(MAX_NESTING)
        );
        assert_eq!(nesting_estimate(&flat), 1);
        assert!(html_to_markdown(&flat).is_ok());
        assert_eq!(nesting_estimate("<b><i>x</i></b><div>< 5</div>"), 2);
        assert_eq!(nesting_estimate(&"<div/>".repeat(7)), 7);
    }

    /// The page that stalled an ingest: end tags of elements never opened used to
    /// count as closing one, so `<div></i>` lines looked one deep while the tree
    /// builder nests every `<div>`.
    #[test]
    fn end_tags_of_elements_not_open_close_nothing() {
        let page = "<div></i>\n".repeat(2 * MAX_NESTING);
        assert_eq!(nesting_estimate(&page), 2 * MAX_NESTING);
        let err = html_to_markdown(&page).expect_err("too deep");
        assert!(err.starts_with("HTML nested 10000 elements deep"), "{err}");
        // A span's end tag does not close through the div above it (the tree builder
        // ignores it), a div's end tag closes the spans left open inside it.
        assert_eq!(nesting_estimate(&"<span><div></span>".repeat(9)), 18);
        assert_eq!(nesting_estimate(&"<div><span><b></div>".repeat(9)), 3);
    }

    /// The depth of the tree html5ever builds (elements not in [`FLAT`]), against the
    /// estimate, on random tag soup: the estimate is never below it.
    #[test]
    fn the_estimate_is_never_below_the_parsed_depth() {
        const PIECES: &[&str] = &[
            "<div>",
            "</div>",
            "<span>",
            "</span>",
            "<b>",
            "</b>",
            "<i>",
            "</i>",
            "<table>",
            "</table>",
            "<td>",
            "<tr>",
            "<p>",
            "</p>",
            "<ul>",
            "<li>",
            "</ul>",
            "<a href=x>",
            "</a>",
            "<section>",
            "</section>",
            "<em>",
            "</em>",
            "<h2>",
            "</h2>",
            "x",
            " ",
        ];
        let mut rng = crate::core::rng::Rng::new(7);
        for _ in 0..400 {
            let page: String = (0..120).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            let doc = Html::parse_document(&page);
            let parsed = doc
                .tree
                .root()
                .descendants()
                .filter(|n| n.value().as_element().is_some())
                .map(|n| {
                    n.ancestors()
                        .chain(std::iter::once(n))
                        .filter(|a| {
                            a.value()
                                .as_element()
                                .is_some_and(|e| !FLAT.contains(&e.name()))
                        })
                        .count()
                })
                .max()
                .unwrap_or(0);
            let estimate = nesting_estimate(&page);
            assert!(estimate >= parsed, "{estimate} < {parsed}: {page}");
        }
    }
}
