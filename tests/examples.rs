//! The Rust API tour (examples/library.rs) runs as a test: every step a library user would take
//! (publish rows from memory, open, search, estimate, privatise one vector, plan and run a DDG
//! round) works, and the two means it computes are as accurate as their mechanisms promise.

#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod tour;

/// The squared error of a mean over `d` coordinates concentrates (roughly χ² with d degrees of
/// freedom scaled by `expected / d`): 4× its expectation has probability below 1e-7 for d ≥ 16.
/// A mechanism whose noise were twice the calibrated scale would give 4× on average.
fn within(error: f64, expected: f64) -> bool {
    error <= 4.0 * expected
}

#[test]
fn the_library_tour_runs_and_its_means_are_as_accurate_as_promised() {
    let dir = tempfile::tempdir().unwrap();
    tour::sketches(dir.path()).unwrap();
    let (local_error, local_expected) = tour::local().unwrap();
    assert!(
        within(local_error, local_expected),
        "{local_error} vs {local_expected}"
    );
    let (ddg_error, ddg_expected) = tour::distributed().unwrap();
    assert!(
        within(ddg_error, ddg_expected),
        "{ddg_error} vs {ddg_expected}"
    );
    // power the other way: the local mean is noisy at all (32 coordinates: an error below a
    // quarter of its expectation has probability ≈ 2e-6), so a mechanism that skipped its
    // randomisation would fail here
    assert!(
        local_error >= local_expected / 4.0,
        "{local_error} vs {local_expected}"
    );
}
