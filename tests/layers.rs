//! The layers `lib.rs` states, read from the code (issue 27):
//!
//! 1. **Floors one way.** Every top-level module sits on a floor; a file may name (`crate::…`)
//!    its own floor and the ones below, never one above. A violation names the file and line.
//! 2. **No circle across folders.** Inside a module tree, sibling folders (say
//!    `mechanism/central`, `mechanism/local`, `mechanism/distributed`) and sibling top-level
//!    modules may depend on each other one way only: the graph of `crate::…` and `super::…`
//!    references between siblings has no cycle. (A folder's own `mod.rs` and its children are
//!    one unit: the trait a child implements and the dispatch to it live together.)
//! 3. **Samplers apart from accountants.** `privacy/samplers/` draws with the parameters it is
//!    given and names no accountant of `privacy/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors from the bottom; a module may use its own floor and the ones below.
const FLOORS: &[&[&str]] = &[
    &["error", "atomic", "Error", "Result"],
    &["rng"],
    &["data"],
    &["projection"],
    &["privacy"],
    &["estimate"],
    &["mechanism"],
    &["release"],
    &["ledger", "search", "export"],
    &["publish", "learn"],
    &["audit", "eval", "request"],
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

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every library source file, as (path relative to `src/` with `/`, text); `main.rs` and
/// `lib.rs` (the crate root, which declares every module) are not part of a floor.
fn sources() -> Vec<(String, String)> {
    let mut paths = Vec::new();
    files(&src(), &mut paths);
    let mut out: Vec<(String, String)> = paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(src())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .filter(|(rel, _)| rel != "main.rs" && rel != "lib.rs")
        .collect();
    out.sort();
    out
}

/// The identifier path (`a::b::c`) that starts at byte `i` of `c`.
fn path_at(c: &str, i: usize) -> Vec<String> {
    let rest = &c[i..];
    let end = rest
        .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == ':'))
        .unwrap_or(rest.len());
    rest[..end]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The crate-relative module path of a file: `mechanism/local/mod.rs` → `[mechanism, local]`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|s| s == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a file as logical lines `(first line number, code)`, comments left out: a line
/// that opens more braces than it closes (`use crate::{` at the end, as rustfmt writes a long
/// group) runs on until they balance, so a grouped `use` over many lines is one line here.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = 0i64;
    for (n, line) in text.lines().enumerate() {
        let c = code(line);
        if open > 0 {
            let last = out.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(c.trim());
        } else {
            out.push((n, c.to_string()));
        }
        open += c.matches('{').count() as i64 - c.matches('}').count() as i64;
        // a block's body (`fn f() {`) is not a group: only a path ending in `::{` carries on
        if open > 0 && !out.last().unwrap().1.contains("::{") {
            open = 0;
        }
        open = open.max(0);
    }
    out
}

/// The items of a grouped path `{a::b, c::{d, e}, f}` (the text after its `{`, up to the matching
/// `}`): `["a::b", "c::{d, e}", "f"]`.
fn grouped_items(group: &str) -> Vec<String> {
    let (mut depth, mut items, mut item) = (0usize, Vec::new(), String::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items
        .into_iter()
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty())
        .collect()
}

/// Every module path a line names: `crate::a::b` and `super::…::x` (resolved from the file's
/// module), with the grouped form `crate::{a, b::c}` expanded one level.
fn references(module: &[String], c: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in c.match_indices("crate::") {
        if let Some(group) = c[i + 7..].strip_prefix('{') {
            for item in grouped_items(group) {
                out.push(path_at(&item, 0));
            }
        } else {
            out.push(path_at(c, i + 7));
        }
    }
    let mut search = 0;
    while let Some(j) = c[search..].find("super::") {
        let i = search + j;
        let boundary = i == 0 || !c.as_bytes()[i - 1].is_ascii_alphanumeric();
        if boundary && (i < 7 || &c[i - 7..i] != "super::") {
            let tail = path_at(c, i);
            let ups = tail.iter().take_while(|s| *s == "super").count();
            // `super` from a file's module is its parent; a `mod.rs` file is its folder's module
            let mut base = module.to_vec();
            for _ in 0..ups {
                base.pop();
            }
            base.extend(tail[ups..].iter().cloned());
            out.push(base);
        }
        search = i + 7;
    }
    out
}

fn floor_violations() -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        let top = module_of(&rel)[0].clone();
        let level = floor_of(&top);
        assert!(
            level < FLOORS.len(),
            "src/{rel}: module {top} has no floor in FLOORS"
        );
        for (n, line) in logical_lines(&text) {
            for target in references(&module_of(&rel), &line) {
                let Some(t) = target.first() else { continue };
                if floor_of(t) > level {
                    found.push(format!(
                        "{rel}:{}: {top} (floor {level}) uses crate::{t} (floor {}): {}",
                        n + 1,
                        floor_of(t),
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

/// The folders (module directories) and top-level modules, as module paths.
fn units() -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (rel, _) in sources() {
        let m = module_of(&rel);
        for len in 1..=m.len() {
            let prefix = m[..len].to_vec();
            let p = src().join(prefix.join("/"));
            if p.is_dir() || len == 1 {
                out.insert(prefix);
            }
        }
    }
    out
}

/// The deepest unit holding a module path.
fn unit_of(units: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|p| units.contains(p))
}

/// Edges between siblings: for a reference from unit `a` to unit `b`, the two children of their
/// deepest common ancestor that hold them (none when one holds the other).
fn sibling_edges() -> BTreeMap<(Vec<String>, Vec<String>), Vec<String>> {
    let units = units();
    let mut edges: BTreeMap<(Vec<String>, Vec<String>), Vec<String>> = BTreeMap::new();
    for (rel, text) in sources() {
        let module = module_of(&rel);
        let a = unit_of(&units, &module).unwrap();
        for (n, line) in logical_lines(&text) {
            for target in references(&module, &line) {
                let Some(b) = unit_of(&units, &target) else {
                    continue;
                };
                let k = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                if k == a.len() || k == b.len() {
                    continue;
                }
                edges
                    .entry((a[..=k].to_vec(), b[..=k].to_vec()))
                    .or_default()
                    .push(format!("{rel}:{}", n + 1));
            }
        }
    }
    edges
}

/// A cycle in a directed graph, if there is one (depth-first search).
fn find_cycle(edges: &BTreeMap<(Vec<String>, Vec<String>), Vec<String>>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    fn visit<'a>(
        v: &'a Vec<String>,
        next: &BTreeMap<&'a Vec<String>, Vec<&'a Vec<String>>>,
        state: &mut BTreeMap<&'a Vec<String>, u8>,
        stack: &mut Vec<&'a Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(v, 1);
        stack.push(v);
        for &w in next.get(v).map(Vec::as_slice).unwrap_or(&[]) {
            match state.get(w) {
                Some(1) => {
                    let from = stack.iter().position(|x| *x == w).unwrap();
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|p| p.join("/")).collect();
                    cycle.push(w.join("/"));
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(w, next, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(v, 2);
        None
    }
    let mut state = BTreeMap::new();
    let starts: Vec<&Vec<String>> = next.keys().copied().collect();
    for v in starts {
        if !state.contains_key(v) {
            if let Some(c) = visit(v, &next, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn every_floor_imports_nothing_from_above() {
    let v = floor_violations();
    assert!(v.is_empty(), "upward imports:\n{}", v.join("\n"));
    // power: the scan sees imports (privacy uses projection, one floor down, in this file) ...
    let nplus = std::fs::read_to_string(src().join("privacy/nplus.rs")).unwrap();
    assert!(nplus.lines().any(|l| code(l).contains("crate::projection")));
    assert!(floor_of("mechanism") > floor_of("privacy"));
    assert!(floor_of("request") > floor_of("publish"));
    assert_eq!(code("use crate::x; // crate::mechanism"), "use crate::x; ");
    // ... resolves grouped and relative paths ...
    let m = module_of("mechanism/local/privunitg.rs");
    assert_eq!(
        references(&m, "use crate::{request::x, data};"),
        vec![
            vec!["request".to_string(), "x".into()],
            vec!["data".to_string()]
        ]
    );
    // ... a group over several lines (as rustfmt writes a long one) and nested groups ...
    let lines = logical_lines(
        "use crate::{\n    data::x,\n    privacy::{a, b}, // crate::cli\n};\nfn f() {\n}\n",
    );
    assert_eq!(lines[0].0, 0);
    assert_eq!(
        references(&m, &lines[0].1),
        vec![
            vec!["data".to_string(), "x".into()],
            vec!["privacy".to_string()]
        ]
    );
    assert_eq!(lines.len(), 3);
    assert_eq!(
        references(&m, "use super::super::central::arithmetic;"),
        vec![vec![
            "mechanism".to_string(),
            "central".into(),
            "arithmetic".into()
        ]]
    );
    assert_eq!(
        module_of("mechanism/local/mod.rs"),
        vec!["mechanism", "local"]
    );
    // ... and every module is on a floor (an unknown name sits above them all)
    assert_eq!(floor_of("not_a_module"), FLOORS.len());
}

#[test]
fn no_import_circle_crosses_a_folder() {
    let edges = sibling_edges();
    if let Some(cycle) = find_cycle(&edges) {
        let mut why = Vec::new();
        for pair in cycle.windows(2) {
            let key = (
                pair[0].split('/').map(String::from).collect::<Vec<_>>(),
                pair[1].split('/').map(String::from).collect::<Vec<_>>(),
            );
            why.push(format!(
                "{} → {}: {:?}",
                pair[0],
                pair[1],
                &edges[&key][..edges[&key].len().min(3)]
            ));
        }
        panic!("import circle {}:\n{}", cycle.join(" → "), why.join("\n"));
    }
    // power: the graph holds the edges it should (mechanism uses privacy; the central sketches
    // use projection from inside the mechanism tree), and the search finds a planted cycle
    let key = |a: &str, b: &str| (vec![a.to_string()], vec![b.to_string()]);
    assert!(edges.contains_key(&key("mechanism", "privacy")));
    assert!(edges.contains_key(&key("mechanism", "projection")));
    let mut planted = edges.clone();
    planted.insert(key("privacy", "mechanism"), vec!["planted".into()]);
    let cycle = find_cycle(&planted).expect("a planted circle is found");
    assert!(cycle.contains(&"privacy".to_string()) && cycle.contains(&"mechanism".to_string()));
}

/// What a file under `privacy/samplers/` names inside `privacy` that is neither a sampler nor
/// an exact (integer) sampler: an accountant, which samplers must not depend on.
fn sampler_violations(rel: &str, text: &str) -> Vec<String> {
    let module = module_of(rel);
    let mut found = Vec::new();
    for (n, line) in logical_lines(text) {
        for target in references(&module, &line) {
            // `privacy` alone is a visibility path (`pub(in crate::privacy)`), not a use
            let inner = target.get(1).map(String::as_str);
            if target.first().is_some_and(|t| t == "privacy")
                && inner.is_some_and(|s| s != "samplers" && s != "exact")
            {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// Samplers apart from accountants (issue 27): the files in `privacy/samplers/` draw with
/// parameters they are given and name no accountant (`privacy::gaussian`, `lattice`, `rr`,
/// `coin`, `nplus`, `zcdp`, `guarantee`); the accountants may use the samplers.
#[test]
fn samplers_name_no_accountant() {
    let mut found = Vec::new();
    let mut seen = 0;
    for (rel, text) in sources() {
        if rel.starts_with("privacy/samplers/") {
            seen += 1;
            found.extend(sampler_violations(&rel, &text));
        }
    }
    assert!(seen >= 4, "the samplers folder holds {seen} files");
    assert!(
        found.is_empty(),
        "samplers using accountants:\n{}",
        found.join("\n")
    );
    // power: an accountant named directly or through `super::super` is caught; a sibling
    // sampler and the exact samplers are not
    let rel = "privacy/samplers/flip.rs";
    assert_eq!(
        sampler_violations(rel, "use crate::privacy::rr::x;").len(),
        1
    );
    assert_eq!(
        sampler_violations(rel, "use super::super::lattice::S2;").len(),
        1
    );
    assert!(sampler_violations(rel, "use super::coin::Coin;").is_empty());
    assert!(sampler_violations(rel, "use crate::privacy::exact::TableGaussian;").is_empty());
    assert!(sampler_violations(rel, "pub(in crate::privacy) threshold: u64,").is_empty());
}

/// The dependencies of a crate's manifest (`[dependencies]` only: not dev or build ones), each
/// with whether it is optional.
fn dependencies(manifest: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == "[dependencies]";
        } else if inside && !t.is_empty() && !t.starts_with('#') {
            if let Some((name, spec)) = t.split_once('=') {
                out.push((name.trim().to_string(), spec.contains("optional = true")));
            }
        }
    }
    out
}

/// The library stands without the command line (issue 41): no flag parser, progress bar or
/// signal handling among its dependencies, and the drawing and database clients optional. The
/// command (cli/) and the Python module (python/) are separate crates that depend on it.
#[test]
fn the_library_does_not_depend_on_its_front_ends() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = dependencies(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap());
    // power: the reader sees the library's dependencies and which are optional
    assert!(lib.iter().any(|(n, opt)| n == "rayon" && !opt));
    assert!(lib.iter().any(|(n, opt)| n == "plotters" && *opt));
    for front in ["clap", "indicatif", "signal-hook", "pyo3", "numpy"] {
        assert!(
            lib.iter().all(|(n, _)| n != front),
            "the library crate depends on {front}, a front end's dependency"
        );
    }
    for heavy in ["plotters", "resvg", "tokio-postgres", "tokio", "rustls"] {
        assert!(
            lib.iter().any(|(n, opt)| n == heavy && *opt),
            "{heavy} should be an optional dependency of the library (features plot, postgres)"
        );
    }
    let cli = dependencies(&std::fs::read_to_string(root.join("cli/Cargo.toml")).unwrap());
    assert!(cli.iter().any(|(n, _)| n == "clap") && cli.iter().any(|(n, _)| n == "dprp"));
    assert!(!root.join("src/cli").exists() && !root.join("src/main.rs").exists());
}

/// The string literals of Rust source `text` outside its tests (from a `#[cfg(test)] mod` to the
/// end of the file), each with the line it starts on; comments, char literals and raw strings
/// are read as Rust reads them, a literal continued over lines is one literal.
fn literals(text: &str) -> Vec<(usize, String)> {
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    let b = &text.as_bytes()[..end];
    let line = |i: usize| text[..i].matches('\n').count() + 1;
    let (mut out, mut i) = (Vec::new(), 0);
    while i < end {
        let rest = &text[i..end];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |j| j + 2);
        } else if b[i] == b'r'
            && !ident_before
            && rest[1..].trim_start_matches('#').starts_with('"')
        {
            let hashes = rest[1..].len() - rest[1..].trim_start_matches('#').len();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let stop = text[start..end].find(&close).map_or(end, |j| start + j);
            out.push((line(i), text[start..stop].to_string()));
            i = stop + close.len();
        } else if b[i] == b'\'' {
            i += char_literal_len(rest);
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < end && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line(i), text[i + 1..j.min(end)].to_string()));
            i = j + 1;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The length of the char literal at the start of `rest` (`'"'`, `'\''`, `'\u{2039}'`), or 1
/// for a lifetime's quote.
fn char_literal_len(rest: &str) -> usize {
    let body = &rest[1..];
    let n = match body.strip_prefix('\\') {
        Some(esc) => 1 + esc.find('\'').unwrap_or(0),
        None => body.chars().next().map_or(0, char::len_utf8),
    };
    if body[n.min(body.len())..].starts_with('\'') {
        n + 2
    } else {
        1
    }
}

/// The `--flag` spellings in a string literal: `--k`, `use --epsilon`, not `a--b` or `---`.
fn flags_in(literal: &str) -> Vec<String> {
    let b = literal.as_bytes();
    let mut out = Vec::new();
    for i in 0..b.len() {
        if b[i] == b'-'
            && b.get(i + 1) == Some(&b'-')
            && b.get(i + 2).is_some_and(u8::is_ascii_lowercase)
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-'))
        {
            let rest = &literal[i + 2..];
            let n = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(rest.len());
            out.push(format!("--{}", &rest[..n]));
        }
    }
    out
}

/// The option keys marked in a string literal (`‹min_norm›`, `‹noise float›`:
/// `dprp::error::field`).
fn marked_keys(literal: &str) -> Vec<String> {
    let (open, close) = dprp::error::FIELD_MARKS;
    literal
        .split(open)
        .skip(1)
        .filter_map(|part| part.split_once(close))
        .map(|(inner, _)| inner.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

/// Issue 41: below the front ends a message names an option by its key (`‹min_norm›`,
/// `error::field`) and each front end spells it (`--min-norm`, `min_norm=`): no string literal
/// of the library outside its tests spells a command-line flag. (Text written into files is
/// spelt as the command spells it, by `error::in_files`, in one place.)
#[test]
fn no_flag_spelling_in_the_library() {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if rel.ends_with("_tests.rs") {
            continue;
        }
        for (line, lit) in literals(&text) {
            for flag in flags_in(&lit) {
                found.push(format!("src/{rel}:{line}: {flag}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "flags spelt below the front ends (name the option with error::field, ‹key›):\n{}",
        found.join("\n")
    );
    // power: the scanner sees flags in literals (raw ones, continued ones), not in comments,
    // char literals, arithmetic or tests
    let sample = concat!(
        "let a = '\"'; let b = '\\''; // \"--no\"\n",
        "Err(param(\"k\", \"use --epsilon or --k\"));\n",
        "let r = r#\"--raw \"quoted\"\"#; let x = a--b; \"x---y\";\n",
        "\"two \\\n lines --wide\"; fn f<'a>(x: &'a str) {}\n",
        "#[cfg(test)]\nmod tests { \"--in-a-test\" }"
    );
    let flags: Vec<String> = literals(sample)
        .into_iter()
        .flat_map(|(_, l)| flags_in(&l))
        .collect();
    assert_eq!(flags, ["--epsilon", "--k", "--raw", "--wide"]);
}

/// Every option key the library marks in a message (`‹min_norm›`) is one the front ends know:
/// listed in `dprp::error::OPTION_KEYS`, which `cli/tests/cli_wording.rs` checks against the
/// flags of the `dprp` command (a misspelt key would print a flag the command does not have).
#[test]
fn marked_options_are_known_keys() {
    let mut unknown = BTreeSet::new();
    let mut seen = 0;
    for (rel, text) in sources() {
        for (line, lit) in literals(&text) {
            for key in marked_keys(&lit) {
                seen += 1;
                if !dprp::error::OPTION_KEYS.contains(&key.as_str()) {
                    unknown.insert(format!("src/{rel}:{line}: ‹{key}›"));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "keys not in dprp::error::OPTION_KEYS:\n{}",
        unknown.into_iter().collect::<Vec<_>>().join("\n")
    );
    assert!(
        seen > 200,
        "only {seen} marked options: the scanner is broken"
    );
    assert_eq!(
        marked_keys("use ‹noise float› or ‹k›; ‹open"),
        ["noise", "k"]
    );
}

/// The library's top-level modules a front end's code names (`dprp::a::…`, and every item of a
/// grouped `use dprp::{a::…, b};`, read across lines), comments left out.
fn library_modules_named(dir: &Path) -> BTreeSet<String> {
    let mut paths = Vec::new();
    files(dir, &mut paths);
    let mut out = BTreeSet::new();
    for p in paths {
        let text: String = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(|l| format!("{}\n", code(l)))
            .collect();
        for (i, _) in text.match_indices("dprp::") {
            if i > 0 && text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue; // `_dprp::`, `xdprp::`
            }
            let rest = &text[i + 6..];
            if let Some(group) = rest.strip_prefix('{') {
                for item in grouped_items(group) {
                    if let Some(first) = path_at(&item, 0).first() {
                        out.insert(first.clone());
                    }
                }
            } else if let Some(first) = path_at(rest, 0).first() {
                out.insert(first.clone());
            }
        }
    }
    out
}

/// What each front end reaches into, at the split of the command line from the library (issue
/// 41). The goal is the request layer, releases and errors only (`request`, `release`, `error`,
/// and the crate's `Error`/`Result`): the Python module is there; the command's list may only
/// shrink. A front end that starts using another module of the library fails here.
const FRONT_END_REACH: &[(&str, &[&str])] = &[
    (
        "cli/src",
        &["atomic", "error", "eval", "release", "request", "search"],
    ),
    (
        "python/src",
        &["error", "release", "request", "Error", "Result"],
    ),
];

#[test]
fn front_ends_reach_no_further_into_the_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wider = Vec::new();
    for (dir, allowed) in FRONT_END_REACH {
        let named = library_modules_named(&root.join(dir));
        // power: the scan finds the request layer in both front ends
        assert!(named.contains("request"), "{dir}: {named:?}");
        for m in &named {
            if !allowed.contains(&m.as_str()) {
                wider.push(format!("{dir} uses dprp::{m}"));
            }
        }
    }
    assert!(wider.is_empty(), "{}", wider.join("\n"));
    // power: grouped and multi-line imports are read item by item
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.rs"),
        "use dprp::{\n    mechanism::local::{A, B},\n    data, // dprp::atomic\n};\nlet y = dprp::search::exact::search;\n",
    )
    .unwrap();
    let named = library_modules_named(dir.path());
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        vec!["data", "mechanism", "search"]
    );
}

/// The floors as a text shows them: `(number, [modules])` from lines such as ` 8 ledger, search,
/// export   the privacy…` (lib.rs's table) or `8 ledger, search, export → 9 publish` (the one-line
/// form of docs/code-layout.md).
fn floors_shown(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for piece in text.split(['\n', '→']) {
        let t = piece.trim_start_matches("//!").trim();
        let Some((num, rest)) = t.split_once(' ') else {
            continue;
        };
        let Ok(n) = num.parse::<usize>() else {
            continue;
        };
        // the module list ends at two spaces (lib.rs's description column) or a full stop
        let list = rest.split("  ").next().unwrap_or("").trim_end_matches('.');
        let names: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
        if names
            .iter()
            .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase()))
        {
            out.push((n, names));
        }
    }
    out
}

/// One declaration of the floors (`FLOORS` here), shown the same in `lib.rs`'s documentation
/// and in docs/code-layout.md: a floor added, moved or renamed in one place fails until all
/// three agree.
#[test]
fn the_floors_shown_in_lib_rs_and_the_docs_are_the_ones_checked() {
    let declared: Vec<(usize, Vec<String>)> = FLOORS
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let names = f
                .iter()
                .filter(|m| m.chars().all(|c| c.is_ascii_lowercase()))
                .map(|m| m.to_string())
                .collect();
            (i, names)
        })
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let table = lib
        .split("```text")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let mut shown = floors_shown(table);
    shown.sort();
    assert_eq!(shown, declared, "src/lib.rs's table of floors");
    let doc = std::fs::read_to_string(root.join("docs/code-layout.md")).unwrap();
    let line = doc.split("```").nth(1).unwrap();
    let line = &line[..line.find("The front ends").unwrap_or(line.len())];
    assert_eq!(floors_shown(line), declared, "docs/code-layout.md's floors");
    // power: a floor shown with a module moved is caught
    let moved = "0 error, atomic → 1 rng, data → 2 projection";
    assert_ne!(floors_shown(moved), declared[..3].to_vec());
    assert_eq!(floors_shown(moved)[1].1, vec!["rng", "data"]);
}

/// The arms of `match`es on a mechanism kind in `text` that catch every other kind (`_ =>`,
/// `other =>`, `x if …`), as line numbers: an arm at the indentation of an arm naming
/// `MechanismKind::…` in the same `match`.
fn wildcard_kind_arms(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().map(code).collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let is_catch_all = |l: &str| {
        let t = l.trim_start();
        let pat: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        !pat.is_empty()
            && pat.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && (t[pat.len()..].starts_with(" =>") || t[pat.len()..].starts_with(" if "))
    };
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !is_catch_all(l) {
            continue;
        }
        let at = indent(l);
        // the arms above, up to the `match` (a line indented less)
        let names_a_kind = lines[..i]
            .iter()
            .rev()
            .take_while(|p| p.trim().is_empty() || indent(p) >= at)
            .filter(|p| indent(p) == at)
            .any(|p| {
                let t = p.trim_start().trim_start_matches(['|', '(', ' ']);
                ["MechanismKind::", "CentralFile::", "LocalFile::", "Home::"]
                    .iter()
                    .any(|e| t.starts_with(e))
            });
        if names_a_kind {
            out.push(i + 1);
        }
    }
    out
}

/// Issue 41: a `match` on a mechanism kind (or on the file that implements it: `Home`,
/// `CentralFile`, `LocalFile`) in `src/mechanism/` names every kind it handles, so that a new
/// kind fails to compile wherever it must be placed rather than falling silently into another
/// kind's arm.
#[test]
fn no_wildcard_arm_on_a_kind_in_the_mechanisms() {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if !rel.starts_with("mechanism/") {
            continue;
        }
        let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
        for line in wildcard_kind_arms(&text[..end]) {
            found.push(format!("src/{rel}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "catch-all arms on a mechanism kind:\n{}",
        found.join("\n")
    );
    // power: a catch-all after a kind's arm is seen, one on another enum or a named kind is not
    let sample = "match k {\n    MechanismKind::A => 1,\n    MechanismKind::B\n    | MechanismKind::C => 2,\n    other => 3,\n}\nmatch r {\n    Rule::A => 1,\n    _ => 2,\n}\nmatch k {\n    x @ (MechanismKind::A | MechanismKind::B) => 1,\n    MechanismKind::C if y => 2,\n    _ => 3,\n}\nmatch f {\n    CentralFile::A => 1,\n    _ => 2,\n}\n";
    assert_eq!(wildcard_kind_arms(sample), [5, 14, 18]);
}
