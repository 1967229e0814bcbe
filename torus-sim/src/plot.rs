//! The simulator's SVG plot: message rate per sender against message size.

use std::path::Path;

use plotters::prelude::*;

use fpga::{Error, Result};

/// One curve: a label and `(size in bytes, messages per second)` points.
pub type Series = (String, Vec<(u32, f64)>);

/// Writes an SVG of message rate (millions per second, per sender) against message size
/// (log scale), one line per series.
pub fn rate_svg(path: &Path, title: &str, series: &[Series]) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| Error::Io {
        what: format!("plot {}", path.display()),
        source: std::io::Error::other(e.to_string()),
    };
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (lo, hi, top) = pts.fold((u32::MAX, 1u32, 0.0f64), |(lo, hi, top), &(x, y)| {
        (lo.min(x.max(1)), hi.max(x), top.max(y / 1e6))
    });
    let lo = lo.min(hi);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (lo as f64..(hi as f64).max(lo as f64 * 2.0)).log_scale(),
            0.0..top * 1.1 + 1e-9,
        )
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("message size, bytes")
        .y_desc("message rate per sender, million/s")
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let line = pts.iter().map(|&(x, y)| (x as f64, y / 1e6));
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(line.map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
