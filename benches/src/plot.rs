//! The SVG plot of a results table: message rate (left) and latency (right) against the
//! message size, log-log, one series per (impl, test). Our series (raw channels `skifch-*`
//! and the libraries on them, [`crate::results::is_ours`]) are drawn thick with markers,
//! peers thin, so the comparison reads at a glance.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::results::Row;
use crate::{BenchError, Result};

/// Draws `rows` into an SVG file at `path` (its directory is created).
pub fn plot_svg(path: &Path, rows: &[Row], title: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
    }
    let err =
        |e: &dyn std::fmt::Display| BenchError::Setup(format!("drawing {}: {e}", path.display()));
    let root = SVGBackend::new(path, (1500, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| err(&e))?;
    let (left, right) = root.split_horizontally(750);
    panel(
        &left,
        rows,
        "msg/s",
        "message rate [msg/s] (more is better)",
        SeriesLabelPosition::LowerLeft,
    )
    .map_err(|e| err(&e))?;
    panel(
        &right,
        rows,
        "us",
        "latency, half round trip [us] (less is better)",
        SeriesLabelPosition::UpperLeft,
    )
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn panel(
    area: &Area<'_>,
    rows: &[Row],
    unit: &str,
    caption: &str,
    legend: SeriesLabelPosition,
) -> DrawResult {
    let mut series: BTreeMap<(&str, &str), Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.unit == unit && r.value > 0.0) {
        series
            .entry((&r.imp, &r.test))
            .or_default()
            .push((r.size as f64, r.value));
    }
    let pts = || series.values().flatten();
    if series.is_empty() {
        area.draw(&Text::new(
            format!("{caption}: no data"),
            (40, 60),
            ("sans-serif", 18),
        ))?;
        return Ok(());
    }
    let (x0, x1) = pts().fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = pts().fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0 / 1.5..x1 * 1.5).log_scale(),
            (y0 / 2.0..y1 * 2.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("message size [bytes]")
        .x_label_formatter(&|v| fmt_size(*v))
        .y_label_formatter(&|v| fmt_value(*v))
        .draw()?;
    let (mut n_ours, mut n_peers) = (0, 0);
    for ((imp, test), mut pts) in series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ours = crate::results::is_ours(imp);
        let color = if ours {
            n_ours += 1;
            OURS[(n_ours - 1) % OURS.len()].to_rgba()
        } else {
            n_peers += 1;
            Palette99::pick(n_peers - 1).mix(0.8)
        };
        let style = color.stroke_width(if ours { 3 } else { 1 });
        chart
            .draw_series(LineSeries::new(pts.clone(), style))?
            .label(format!("{imp} {test}"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], style));
        if ours {
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

/// Strong colours for our series; the peers' come from a palette, lighter.
const OURS: [RGBColor; 8] = [
    RGBColor(200, 0, 0),
    RGBColor(0, 0, 0),
    RGBColor(0, 70, 200),
    RGBColor(120, 0, 160),
    RGBColor(0, 140, 60),
    RGBColor(220, 120, 0),
    RGBColor(0, 150, 170),
    RGBColor(150, 80, 40),
];

/// Axis label of a value: `100M`, `20k`, `3`, `0.2`, `0.05`.
fn fmt_value(v: f64) -> String {
    if v >= 1.0 {
        crate::results::si(v)
    } else {
        let digits = (-v.log10()).ceil().clamp(1.0, 6.0) as usize;
        format!("{v:.digits$}")
    }
}

fn fmt_size(v: f64) -> String {
    if v >= 1024.0 && (v / 1024.0).fract() == 0.0 {
        format!("{}K", v / 1024.0)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_both_panels_with_every_series() {
        let dir = std::env::temp_dir().join(format!("skifch-plot-{}", std::process::id()));
        let path = dir.join("p.svg");
        let rows = vec![
            Row::new("skifch-shm", "msgrate", 8, 3e7, "msg/s"),
            Row::new("skifch-shm", "msgrate", 4096, 2e6, "msg/s"),
            Row::new("rawring", "msgrate", 8, 1.4e8, "msg/s"),
            Row::new("rawring", "msgrate", 4096, 2.1e6, "msg/s"),
            Row::new("skifch-shm", "latency", 8, 0.2, "us"),
            Row::new("skifch-shm", "latency", 4096, 0.7, "us"),
        ];
        plot_svg(&path, &rows, "test").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("skifch-shm msgrate"));
        assert!(svg.contains("rawring msgrate"));
        assert!(svg.contains("skifch-shm latency"));
        assert!(svg.contains("<polyline"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn small_values_keep_their_digits() {
        assert_eq!(fmt_value(0.1), "0.1");
        assert_eq!(fmt_value(0.05), "0.05");
        assert_eq!(fmt_value(2e7), "20.0M");
        assert_eq!(fmt_size(4096.0), "4K");
        assert_eq!(fmt_size(1000.0), "1000");
    }
}
