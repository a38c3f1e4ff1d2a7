//! Rasterising the SVG plots to PNG with `resvg`, and finding a font for it.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use resvg::usvg::fontdb;
use resvg::{tiny_skia, usvg};

use super::FONT_ENV;

/// Plotting errors carry the backend's error; they become text.
pub(super) type PResult<T = ()> = std::result::Result<T, String>;

/// A font database for the PNG renderer, with the generic families pointed at the font found.
pub(super) struct Fonts {
    db: Arc<fontdb::Database>,
    family: String,
}

/// Usual places of a sans-serif TrueType font (Debian/Ubuntu, Fedora, Arch, macOS, Windows).
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Find a font: `env` (the `DPRP_FONT` value) if given, else the first of `candidates` that
/// loads, else (if `system`) every font in the system font directories.
pub(super) fn find_fonts(
    env: Option<PathBuf>,
    candidates: &[&str],
    system: bool,
) -> PResult<Fonts> {
    let mut db = fontdb::Database::new();
    if let Some(path) = env {
        db.load_font_file(&path).map_err(|e| {
            format!(
                "cannot load the font named by {FONT_ENV} ({}): {e}",
                path.display()
            )
        })?;
        if db.is_empty() {
            return Err(format!(
                "{FONT_ENV} names {}, which holds no usable TrueType/OpenType font",
                path.display()
            ));
        }
    } else {
        for c in candidates {
            if db.load_font_file(c).is_ok() && !db.is_empty() {
                break;
            }
        }
        if db.is_empty() && system {
            db.load_system_fonts();
        }
        if db.is_empty() {
            return Err(format!(
                "no TrueType/OpenType font found for the PNG plots (install e.g. the \
                 fonts-dejavu-core package, or set {FONT_ENV} to a .ttf file)"
            ));
        }
    }
    let family = db
        .faces()
        .find_map(|f| f.families.first().map(|(name, _)| name.clone()))
        .ok_or_else(|| "the font found has no family name".to_string())?;
    db.set_sans_serif_family(family.clone());
    db.set_serif_family(family.clone());
    Ok(Fonts {
        db: Arc::new(db),
        family,
    })
}

/// The process-wide font database (searched once).
pub(super) fn system_fonts() -> &'static PResult<Fonts> {
    static FONTS: OnceLock<PResult<Fonts>> = OnceLock::new();
    FONTS.get_or_init(|| {
        let env = std::env::var_os(FONT_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        find_fonts(env, FONT_CANDIDATES, true)
    })
}

/// Rasterise SVG text to PNG bytes.
pub(super) fn rasterise(svg: &str, fonts: &Fonts) -> PResult<Vec<u8>> {
    let opt = usvg::Options {
        fontdb: Arc::clone(&fonts.db),
        font_family: fonts.family.clone(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("cannot read the SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "the figure has no area".to_string())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("cannot encode the PNG: {e}"))
}
