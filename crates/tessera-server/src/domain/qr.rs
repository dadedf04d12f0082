//! QR codes of ticket QR tokens (D8.3, D13.2): SVG text and PNG bytes, drawn with the `qrcode`
//! crate; the PNG is written with `png` from the module matrix (no image-processing stack).
use qrcode::render::svg;
use qrcode::{Color, EcLevel, QrCode};

/// Pixels per module of the PNG, and the quiet zone in modules.
const SCALE: usize = 8;
const QUIET: usize = 4;

fn code(data: &str) -> Result<QrCode, String> {
    QrCode::with_error_correction_level(data.as_bytes(), EcLevel::M).map_err(|e| format!("QR encoding failed: {e}"))
}

/// The QR code of `data` as an SVG document.
pub fn svg(data: &str) -> Result<String, String> {
    Ok(code(data)?.render::<svg::Color>().min_dimensions(200, 200).quiet_zone(true).build())
}

/// The QR code of `data` as a PNG (8-bit greyscale).
pub fn png(data: &str) -> Result<Vec<u8>, String> {
    let qr = code(data)?;
    let modules = qr.width();
    let colors = qr.to_colors();
    let side = (modules + 2 * QUIET) * SCALE;
    let mut pixels = vec![255u8; side * side];
    for (i, c) in colors.iter().enumerate() {
        if *c != Color::Dark {
            continue;
        }
        let (mx, my) = (i % modules + QUIET, i / modules + QUIET);
        for y in my * SCALE..(my + 1) * SCALE {
            let row = y * side;
            pixels[row + mx * SCALE..row + (mx + 1) * SCALE].fill(0);
        }
    }
    let mut out = Vec::new();
    {
        let side = u32::try_from(side).map_err(|_| "QR too large".to_string())?;
        let mut enc = png::Encoder::new(&mut out, side, side);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(|e| e.to_string())?;
        w.write_image_data(&pixels).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_qr_renders_as_svg_and_png() {
        let svg = super::svg("qr_0123").expect("svg");
        assert!(svg.contains("<svg"));
        let png = super::png("qr_0123").expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }
}
