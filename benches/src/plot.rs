//! The plot: latency percentiles (p50 solid with markers, p99 dashed) against
//! load, one colour per policy, log-log axes; one panel for closed-loop points
//! (x = concurrency) and one for open-loop points (x = request rate), as
//! present. SVG by default; `.png` gives a bitmap.
//!
//! plotters is built without a font engine (nothing to find or load at run
//! time): SVG text is left to the viewer's fonts, and PNG text is drawn by
//! [`PixelText`], a backend wrapper that rasterizes the public-domain 8×8
//! bitmap font of the `font8x8` crate.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontTransform};

use crate::measure::PointResult;

/// A line of the plot: one policy, one percentile, one mode.
struct Line {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The lines of one mode's panel, ordered by policy as first seen.
fn lines(points: &[PointResult], mode: &str) -> Vec<Line> {
    let mut policies: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.mode == mode) {
        if !policies.contains(&p.policy.as_str()) {
            policies.push(&p.policy);
        }
    }
    let mut out = Vec::new();
    for (i, policy) in policies.iter().enumerate() {
        let mut of: Vec<&PointResult> =
            points.iter().filter(|p| p.mode == mode && p.policy == *policy && p.latency.count > 0).collect();
        of.sort_by(|a, b| a.load.total_cmp(&b.load));
        let color = COLORS[i % COLORS.len()];
        for (name, dashed, get) in [
            ("p50", false, (|p: &PointResult| p.latency.p50_us) as fn(&PointResult) -> u64),
            ("p99", true, |p| p.latency.p99_us),
        ] {
            out.push(Line {
                label: format!("{policy} {name}"),
                color,
                dashed,
                points: of.iter().map(|p| (p.load, get(p).max(1) as f64)).collect(),
            });
        }
    }
    out
}

/// One panel: its caption, x axis (name and how a tick is labelled), and lines.
struct Panel {
    caption: String,
    x_desc: &'static str,
    x_label: fn(&f64) -> String,
    lines: Vec<Line>,
}

/// A load or a rate as a tick label, to two decimals.
fn plain_label(x: &f64) -> String {
    format!("{}", (x * 100.0).round() / 100.0)
}

/// Draws the plot to `path` (`.svg` or `.png`).
pub fn plot(path: &Path, pipeline: &str, points: &[PointResult]) -> Result<(), String> {
    let panels: Vec<Panel> = ["closed", "open"]
        .into_iter()
        .filter(|m| points.iter().any(|p| p.mode == *m))
        .map(|mode| {
            let what = if mode == "closed" { "closed loop" } else { "open loop" };
            Panel {
                caption: format!("{pipeline}: latency vs load ({what})"),
                x_desc: if mode == "closed" { "concurrency (clients)" } else { "request rate (req/s)" },
                x_label: plain_label,
                lines: lines(points, mode),
            }
        })
        .collect();
    draw_panels(path, &panels)
}

/// A load sweep's plot: for priority requests and for the others, p50 (solid)
/// and p99 (dashed) per policy against the load (% of capacity). `series`
/// holds (policy, load %, priority p50, priority p99, others p50, others p99), µs.
pub fn sweep_plot(path: &Path, workload: &str, series: &[(String, f64, [f64; 4])]) -> Result<(), String> {
    let mut policies: Vec<&str> = Vec::new();
    for (policy, _, _) in series {
        if !policies.contains(&policy.as_str()) {
            policies.push(policy);
        }
    }
    let panel = |class: &str, first: usize| {
        let mut lines = Vec::new();
        for (i, policy) in policies.iter().enumerate() {
            let mut of: Vec<&(String, f64, [f64; 4])> = series.iter().filter(|s| s.0 == *policy).collect();
            of.sort_by(|a, b| a.1.total_cmp(&b.1));
            for (name, dashed, k) in [("p50", false, first), ("p99", true, first + 1)] {
                lines.push(Line {
                    label: format!("{policy} {name}"),
                    color: COLORS[i % COLORS.len()],
                    dashed,
                    points: of.iter().filter(|s| s.2[k] > 0.0).map(|s| (s.1, s.2[k])).collect(),
                });
            }
        }
        Panel {
            caption: format!("{workload}: {class} latency vs load"),
            x_desc: "load (% of capacity)",
            x_label: plain_label,
            lines,
        }
    };
    draw_panels(path, &[panel("priority", 0), panel("other requests'", 2)])
}

/// The percentiles a distribution plot draws.
const QUANTILES: [f64; 8] = [0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999];

/// A percentile's place on the x axis: 1 / (1 - q), so that the tail spreads out (p50 at 2, p99 at 100).
fn tail_x(q: f64) -> f64 {
    1.0 / (1.0 - q)
}

/// The percentile a place on the x axis stands for, as a tick label ("p99").
fn percentile_label(x: &f64) -> String {
    let percent = 100.0 * (1.0 - 1.0 / x);
    format!("p{}", (percent * 10.0).round() / 10.0)
}

/// One policy's latencies for a distribution plot, µs, each sorted ascending.
pub struct Distribution {
    pub policy: String,
    pub priority: Vec<f64>,
    pub others: Vec<f64>,
}

/// Latency distributions of one run per policy: for priority requests and for
/// the others, each policy's latency (log scale) at every percentile of
/// [`QUANTILES`].
pub fn distribution_plot(path: &Path, workload: &str, series: &[Distribution]) -> Result<(), String> {
    let panel = |class: &str, of: fn(&Distribution) -> &[f64]| Panel {
        caption: format!("{workload}: {class} latency"),
        x_desc: "percentile",
        x_label: percentile_label,
        lines: series
            .iter()
            .enumerate()
            .map(|(i, s)| Line {
                label: s.policy.clone(),
                color: COLORS[i % COLORS.len()],
                dashed: false,
                points: quantile_points(of(s)),
            })
            .collect(),
    };
    draw_panels(path, &[panel("priority", |s| &s.priority), panel("other requests'", |s| &s.others)])
}

/// (x of [`tail_x`], latency) at each of [`QUANTILES`] of `sorted` (nearest rank); none when it is empty.
fn quantile_points(sorted: &[f64]) -> Vec<(f64, f64)> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize].max(1.0);
    QUANTILES.iter().map(|&q| (tail_x(q), at(q))).collect()
}

fn draw_panels(path: &Path, panels: &[Panel]) -> Result<(), String> {
    if panels.is_empty() {
        return Err("nothing to plot".into());
    }
    let size = (900 * panels.len() as u32, 600);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    match ext.as_str() {
        "svg" => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw(&root, panels).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
        "png" => {
            let root = PixelText(BitMapBackend::new(path, size)).into_drawing_area();
            draw(&root, panels).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
        _ => Err(format!("--plot {}: use a .svg or .png file", path.display())),
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[Panel],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let areas = root.split_evenly((1, panels.len()));
    for (area, panel) in areas.iter().zip(panels) {
        let lines = &panel.lines;
        let all = lines.iter().flat_map(|l| l.points.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in all {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            continue;
        }
        // Ticks at the loads measured.
        let mut ticks: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        // Some room around the data; log axes need positive, non-empty ranges.
        let (x0, x1) = (x0.max(1e-3) / 1.3, x1.max(1e-3) * 1.3);
        let (y0, y1) = (y0.max(1.0) / 1.5, y1.max(1.0) * 1.5);
        let mut chart = ChartBuilder::on(area)
            .margin(20)
            .caption(&panel.caption, ("sans-serif", 22))
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale().with_key_points(ticks), (y0..y1).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc)
            .y_desc("latency (µs)")
            .x_label_formatter(&panel.x_label)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(TRANSPARENT)
            .draw()?;
        for line in lines {
            let style = ShapeStyle::from(&line.color).stroke_width(2);
            let label = line.label.clone();
            if line.dashed {
                chart
                    .draw_series(DashedLineSeries::new(line.points.iter().copied(), 8, 5, style))?
                    .label(label)
                    .legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new(vec![(0, 0), (9, 0)], style)
                            + PathElement::new(vec![(15, 0), (24, 0)], style)
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(line.points.iter().copied(), style).point_size(3))?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    Ok(())
}

/// A drawing backend that draws text itself, with an 8×8 bitmap font scaled to
/// the text size, and passes everything else to the backend it wraps.
pub struct PixelText<B>(pub B);

/// The 8×8 glyph of a character (rows top to bottom, bit 0 leftmost); `?` when the font lacks it.
fn glyph(c: char) -> [u8; 8] {
    let code = c as usize;
    match code {
        0..=127 => font8x8::legacy::BASIC_LEGACY[code],
        0xA0..=0xFF => font8x8::legacy::LATIN_LEGACY[code - 0xA0],
        _ => font8x8::legacy::BASIC_LEGACY[b'?' as usize],
    }
}

/// Pixels per font pixel for a text size (the font is 8 pixels high).
fn text_scale(size: f64) -> i32 {
    ((size / 11.0).round() as i32).max(1)
}

/// Width and height of `text` unrotated, pixels: 7 pixels of advance per character, 8 high.
fn text_extent(text: &str, size: f64) -> (i32, i32) {
    let s = text_scale(size);
    (text.chars().count() as i32 * 7 * s, 8 * s)
}

impl<B: DrawingBackend> DrawingBackend for PixelText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (w, h) = text_extent(text, style.size());
        Ok((w as u32, h as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let scale = text_scale(style.size());
        let (width, height) = text_extent(text, style.size());
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Center => -width / 2,
            HPos::Right => -width,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        for (i, c) in text.chars().enumerate() {
            let rows = glyph(c);
            for (row, bits) in rows.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) == 0 {
                        continue;
                    }
                    for sy in 0..scale {
                        for sx in 0..scale {
                            let x = dx + (i as i32 * 7 + col) * scale + sx;
                            let y = dy + row as i32 * scale + sy;
                            let (x, y) = match &transform {
                                FontTransform::None => (x, y),
                                other => other.transform(x, y),
                            };
                            let (x, y) = (pos.0 + x, pos.1 + y);
                            if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                                self.0.draw_pixel((x, y), color)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
