//! Time-against-size figures (log-log, one line per implementation), like the report's
//! Figures 1 and 2, as SVG and PNG.

use super::{table, Metric, Row};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Fonts tried in turn; `BITONIC_FONT` names another TrueType file.
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Registers a font for the figures' text; an error says where fonts were looked for.
fn load_font() -> Result<(), String> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let candidates: Vec<PathBuf> = std::env::var_os("BITONIC_FONT")
                .map(PathBuf::from)
                .into_iter()
                .chain(FONT_PATHS.iter().map(PathBuf::from))
                .collect();
            let bytes = candidates
                .iter()
                .find_map(|p| std::fs::read(p).ok())
                .ok_or_else(|| {
                    format!("no TrueType font found (set BITONIC_FONT; looked in {candidates:?})")
                })?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| "the font file is not TrueType".to_string())
        })
        .clone()
}

/// Writes `<stem>.svg` and `<stem>.png` in `dir` for one metric; returns the files written.
pub fn time_vs_size(
    rows: &[Row],
    metric: Metric,
    title: &str,
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    svg_and_png(
        dir,
        stem,
        (1000, 680),
        |area| draw(area, rows, metric, title),
        |area| draw(area, rows, metric, title),
    )
}

/// Loads the font and draws one picture twice: `<stem>.svg` and `<stem>.png` in `dir`.
fn svg_and_png(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    draw_svg: impl FnOnce(DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
    draw_png: impl FnOnce(DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
) -> Result<Vec<PathBuf>, String> {
    load_font()?;
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    draw_svg(SVGBackend::new(&svg, size).into_drawing_area())?;
    draw_png(BitMapBackend::new(&png, size).into_drawing_area())?;
    Ok(vec![svg, png])
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    rows: &[Row],
    metric: Metric,
    title: &str,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let series: Vec<(String, Vec<(f64, f64)>)> = table::names(rows)
        .into_iter()
        .map(|name| {
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.name == name && r.metric == metric && !r.extrapolated)
                .map(|r| (r.n as f64, r.median_ms))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (name, points)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if series.is_empty() {
        return Err(format!("no {} rows to plot", metric.name()));
    }
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (x0, x1) = all
        .clone()
        .fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = all.fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));

    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(
            (x0 / 1.3..x1 * 1.3)
                .log_scale()
                .with_key_points(powers_of_two(x0, x1)),
            (y0 / 1.5..y1 * 1.5).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("keys (n)")
        .y_desc("median time (ms)")
        .x_label_formatter(&|x| format!("2^{}", x.log2().round()))
        .y_label_formatter(&|y| {
            if *y >= 1.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.3}")
            }
        })
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    for (i, (name, points)) in series.iter().enumerate() {
        // The peers' lines are thinner.
        let width = if name.starts_with("bitonic-") { 2 } else { 1 };
        line_with_dots(
            &mut chart,
            points,
            Palette99::pick(i).to_rgba(),
            width,
            3,
            name,
        )?;
    }
    legend_and_present(&mut chart, &root)
}

/// One labelled line through `points`, with a dot on each.
fn line_with_dots<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    color: RGBAColor,
    width: u32,
    dot: u32,
    label: &str,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(width),
        ))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, dot, color.filled())))
        .map_err(err)?;
    Ok(())
}

/// The legend in the upper left corner, then the picture out.
fn legend_and_present<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Axis ticks at every power of two between `lo` and `hi`.
fn powers_of_two(lo: f64, hi: f64) -> Vec<f64> {
    (lo.log2().round() as i32..=hi.log2().round() as i32)
        .map(|e| 2f64.powi(e))
        .collect()
}

/// Writes `<stem>.svg` and `<stem>.png`: speed-up over one GPU against the GPU count, one line
/// per algorithm, and the ideal (linear) line.
pub fn scaling(
    rows: &[super::gpus::ScalingRow],
    title: &str,
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    svg_and_png(
        dir,
        stem,
        (900, 620),
        |area| draw_scaling(area, rows, title),
        |area| draw_scaling(area, rows, title),
    )
}

fn draw_scaling<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    rows: &[super::gpus::ScalingRow],
    title: &str,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut algorithms: Vec<&str> = rows.iter().map(|r| r.algorithm.as_str()).collect();
    algorithms.sort_unstable();
    algorithms.dedup();
    let max_gpus = rows.iter().map(|r| r.gpus).max().ok_or("no rows to plot")? as f64;
    let max_speedup = rows
        .iter()
        .filter_map(|r| r.speedup)
        .fold(max_gpus, f64::max);
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5..max_gpus + 0.5, 0.0..max_speedup * 1.15)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("GPUs")
        .y_desc("speed-up over the best 1-GPU time")
        .x_labels(max_gpus as usize)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            [(1.0, 1.0), (max_gpus, max_gpus)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(err)?
        .label("linear")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    for (i, algorithm) in algorithms.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.algorithm == *algorithm)
            .filter_map(|r| Some((r.gpus as f64, r.speedup?)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        line_with_dots(
            &mut chart,
            &points,
            Palette99::pick(i).to_rgba(),
            2,
            4,
            algorithm,
        )?;
    }
    legend_and_present(&mut chart, &root)
}

/// Writes `<stem>.svg` and `<stem>.png`: torch.topk's time over ours against k, one line per
/// shape and key type, and the bar of 3×.
pub fn topk_speedups(
    rows: &[super::topk::Measured],
    title: &str,
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    let series = super::topk::speedups(rows);
    if series.is_empty() {
        return Err("no top-k rows with torch's beside them to plot".into());
    }
    svg_and_png(
        dir,
        stem,
        (1000, 680),
        |area| draw_speedups(area, &series, title),
        |area| draw_speedups(area, &series, title),
    )
}

fn draw_speedups<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (x0, x1) = all
        .clone()
        .fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = all.fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (y0, y1) = (y0.min(0.5), y1.max(4.0));
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (x0 / 1.3..x1 * 1.3)
                .log_scale()
                .with_key_points(powers_of_two(x0, x1)),
            (y0 / 1.2..y1 * 1.2).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("k")
        .y_desc("torch.topk time / bitonic time")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}×"))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    for (i, (name, points)) in series.iter().enumerate() {
        line_with_dots(&mut chart, points, Palette99::pick(i).to_rgba(), 2, 3, name)?;
    }
    let bar = [(x0 / 1.3, 3.0), (x1 * 1.3, 3.0)];
    line_with_dots(
        &mut chart,
        &bar,
        BLACK.to_rgba(),
        1,
        0,
        "3× (the issue's bar)",
    )?;
    legend_and_present(&mut chart, &root)
}
