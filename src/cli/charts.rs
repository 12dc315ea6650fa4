//! SVG charts of the study report, drawn with `plotters` (SVG backend only, no fonts
//! loaded: the SVG names a font family and the viewer draws the text).
//!
//! Here, in the headless front, and not in `core`: `core` depends on serde and
//! thiserror only, and a chart is a rendering of numbers the service already computed,
//! as a text table is. The functions take plain values and return the SVG text, so a
//! TUI or another front could draw the same figures from the same numbers.
//!
//! Each line series is one `<polyline>` drawn 2 px wide (the axes and grid are 1 px
//! polylines; the legend is swatches and text, not lines), and each bar one `<rect>` in
//! the first series colour, so a test can pick out and count the series it expects.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const SIZE: (u32, u32) = (860, 480);
const FONT: &str = "sans-serif";

/// One line of a line chart: its name and its points in x order.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

/// Width of the legend column right of a line chart's plot.
const LEGEND_WIDTH: u32 = 190;

/// Split `root` into the plot and, right of it, the legend column: the legend never
/// covers a line, wherever the lines run.
fn with_legend_column<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
) -> (
    DrawingArea<SVGBackend<'a>, Shift>,
    DrawingArea<SVGBackend<'a>, Shift>,
) {
    root.split_horizontally(SIZE.0 - LEGEND_WIDTH)
}

/// The legend in `column`: a swatch and the name of each series (names cut to fit).
fn legend(column: &DrawingArea<SVGBackend<'_>, Shift>, names: &[&str]) -> Result<()> {
    legend_from(column, names, 0)
}

/// [`legend`] for series coloured from colour `first` on.
fn legend_from(
    column: &DrawingArea<SVGBackend<'_>, Shift>,
    names: &[&str],
    first: usize,
) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        let y = 48 + 18 * i32::try_from(i).unwrap_or(0);
        column.draw(&Rectangle::new(
            [(4, y), (16, y + 12)],
            colour(i + first).filled(),
        ))?;
        column.draw(&Text::new(
            crate::core::text::snippet(name, 24),
            (22, y),
            (FONT, 13).into_font(),
        ))?;
    }
    Ok(())
}

/// Lower and upper bound of `values`, padded, for a y axis (0-1 when they fit in it).
fn y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo >= 0.0 && hi <= 1.0 {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.1).max(1e-3);
    (lo - pad, hi + pad)
}

/// The builder every chart here starts from: a caption and the label areas (x's
/// height varies with its labels: rotated bar names need more room).
fn builder<'a, 'b, 'c>(
    root: &'a DrawingArea<SVGBackend<'c>, Shift>,
    title: &str,
    x_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'c>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, (FONT, 18))
        .margin(12)
        .x_label_area_size(x_label_area)
        .y_label_area_size(56);
    b
}

/// The x label of a category segment: `name(i)` for segment i, empty past the last.
fn segment_label(v: &SegmentValue<i32>, name: impl Fn(usize) -> Option<String>) -> String {
    match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            usize::try_from(*i).ok().and_then(name).unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    }
}

/// A line chart over numeric x (alpha, k): one polyline per series, a dot per point.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x0.is_finite() && x1 > x0 {
        let pad = (x1 - x0) * 0.03;
        (x0 - pad, x1 + pad)
    } else if x0.is_finite() {
        (x0 - 1.0, x0 + 1.0)
    } else {
        (0.0, 1.0)
    };
    let (y0, y1) = y_range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = with_legend_column(&root);
        let mut chart = builder(&plot, title, 40).build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let c = colour(i);
            chart.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?;
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        legend(&side, &names)?;
        root.present()?;
    }
    Ok(svg)
}

/// A line chart over named categories (rank buckets), in the order given: one
/// polyline per series over the categories it has a value for.
pub fn category_lines(
    title: &str,
    categories: &[String],
    y_desc: &str,
    series: &[(String, Vec<Option<f64>>)],
) -> Result<String> {
    let n = i32::try_from(categories.len()).unwrap_or(i32::MAX).max(1);
    let (y0, y1) = y_range(series.iter().flat_map(|(_, v)| v.iter().flatten().copied()));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = with_legend_column(&root);
        let mut chart =
            builder(&plot, title, 40).build_cartesian_2d((0..n - 1).into_segmented(), y0..y1)?;
        let label = |v: &SegmentValue<i32>| segment_label(v, |i| categories.get(i).cloned());
        chart
            .configure_mesh()
            .x_labels(categories.len())
            .x_label_formatter(&label)
            .y_desc(y_desc)
            .draw()?;
        for (i, (_, values)) in series.iter().enumerate() {
            let c = colour(i);
            let points: Vec<(SegmentValue<i32>, f64)> = values
                .iter()
                .enumerate()
                .filter_map(|(x, v)| Some((SegmentValue::CenterOf(i32::try_from(x).ok()?), (*v)?)))
                .collect();
            chart.draw_series(LineSeries::new(points.iter().cloned(), c.stroke_width(2)))?;
            chart.draw_series(points.iter().map(|p| Circle::new(p.clone(), 3, c.filled())))?;
        }
        let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
        legend(&side, &names)?;
        root.present()?;
    }
    Ok(svg)
}

/// A bar chart: one bar per (label, value), in the order given.
pub fn bars(title: &str, y_desc: &str, bars: &[(String, f64)]) -> Result<String> {
    let n = i32::try_from(bars.len()).unwrap_or(i32::MAX).max(1);
    let (y0, y1) = y_range(bars.iter().map(|b| b.1).chain([0.0]));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart =
            builder(&root, title, 90).build_cartesian_2d((0..n - 1).into_segmented(), y0..y1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_: &SegmentValue<i32>| String::new())
            .y_desc(y_desc)
            .draw()?;
        // Each bar's name, turned to run down from under the bar's centre. Drawn here
        // rather than by the mesh, which centres every x label on its tick: turned,
        // half of each name would sit inside the plot, hidden behind the bars.
        let name_style = TextStyle::from((FONT, 11).into_font().transform(FontTransform::Rotate90))
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, (name, _)) in bars.iter().enumerate() {
            let Ok(i) = i32::try_from(i) else { break };
            let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i), y0));
            root.draw(&Text::new(
                crate::core::text::snippet(name, 16),
                (x, y + 6),
                name_style.clone(),
            ))?;
        }
        chart.draw_series(bars.iter().enumerate().filter_map(|(i, (_, v))| {
            let i = i32::try_from(i).ok()?;
            let right = if i + 1 < n {
                SegmentValue::Exact(i + 1)
            } else {
                SegmentValue::Last
            };
            let mut r = Rectangle::new(
                [(SegmentValue::Exact(i), 0.0), (right, *v)],
                colour(0).filled(),
            );
            r.set_margin(0, 0, 6, 6);
            Some(r)
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// A named point of a scatter chart.
pub struct Point {
    pub name: String,
    pub x: f64,
    pub y: f64,
}

/// A scatter of named points over lines (the trade-off plane: configurations at their
/// (latency cost, accuracy gain) over F contours): each line a 2 px polyline in its
/// colour, named in the legend; each point a filled circle with its name beside it.
pub fn scatter_over_lines(
    title: &str,
    (x_desc, y_desc): (&str, &str),
    points: &[Point],
    lines: &[Series],
) -> Result<String> {
    let xs: Vec<f64> = points
        .iter()
        .map(|p| p.x)
        .chain(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)))
        .filter(|x| x.is_finite())
        .collect();
    let (x0, x1) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let (x0, x1) = if x0.is_finite() && x1 > x0 {
        (x0, x1)
    } else {
        (-1.0, 1.0)
    };
    let (y0, y1) = {
        let ys = points.iter().map(|p| p.y).chain([0.0]);
        let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
        let pad = ((hi - lo) * 0.25).max(0.05);
        (lo - pad, hi + pad)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = with_legend_column(&root);
        let mut chart = builder(&plot, title, 40).build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()?;
        for (i, l) in lines.iter().enumerate() {
            // Only the part inside the plot: a contour runs off it steeply.
            let inside = l
                .points
                .iter()
                .copied()
                .filter(|p| (y0..=y1).contains(&p.1));
            chart.draw_series(LineSeries::new(inside, colour(i + 1).stroke_width(2)))?;
        }
        for p in points {
            chart.draw_series([Circle::new((p.x, p.y), 5, colour(0).filled())])?;
            let (px, py) = chart.backend_coord(&(p.x, p.y));
            plot.draw(&Text::new(
                crate::core::text::snippet(&p.name, 20),
                (px + 8, py - 6),
                (FONT, 12).into_font(),
            ))?;
        }
        let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
        legend_from(&side, &names, 1)?;
        root.present()?;
    }
    Ok(svg)
}
