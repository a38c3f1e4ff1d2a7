//! The lower floors of the library import nothing from the floors above them (issue 27): the
//! layers `lib.rs` states, read from the code. A `crate::…` path outside comments in a file of a
//! lower layer that names a higher module fails here, naming the file and line.

use std::path::Path;

/// The floors from the bottom; a module may use its own floor and the ones below.
const FLOORS: &[&[&str]] = &[
    &["error", "atomic"],
    &["rng"],
    &["data"],
    &["projection"],
    &["privacy"],
];

fn floor_of(module: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&module))
        .unwrap_or(FLOORS.len())
}

/// The code of a line without its `//` comment (string literals holding `//` are not in these
/// files' `crate::` lines).
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn violations() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (level, floor) in FLOORS.iter().enumerate() {
        for module in *floor {
            let mut paths = Vec::new();
            let dir = src.join(module);
            if dir.is_dir() {
                files(&dir, &mut paths);
            } else {
                paths.push(src.join(format!("{module}.rs")));
            }
            for path in paths {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let c = code(line);
                    for (i, _) in c.match_indices("crate::") {
                        let rest = &c[i + 7..];
                        let target: String = rest
                            .chars()
                            .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                            .collect();
                        if floor_of(&target) > level {
                            found.push(format!(
                                "{}:{}: {module} (floor {level}) uses crate::{target}: {}",
                                path.strip_prefix(&src).unwrap().display(),
                                n + 1,
                                line.trim()
                            ));
                        }
                    }
                }
            }
        }
    }
    found
}

#[test]
fn lower_floors_import_nothing_from_above() {
    let v = violations();
    assert!(v.is_empty(), "upward imports:\n{}", v.join("\n"));
    // power: the scan sees imports (privacy uses projection, one floor down, in these files)
    let nplus =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/privacy/nplus.rs"))
            .unwrap();
    assert!(nplus.lines().any(|l| code(l).contains("crate::projection")));
    assert!(floor_of("mechanism") > floor_of("privacy"));
    assert_eq!(code("use crate::x; // crate::mechanism"), "use crate::x; ");
}
