//! The registry of unfinished outputs that a signal handler clears (one test in its own binary:
//! `remove_pending` removes every unfinished output of the process).

use dprp::atomic::{remove_pending, AtomicFile, Existing, StagingDir};

#[test]
fn remove_pending_deletes_unfinished_files_and_staging_dirs_only() {
    let d = tempfile::tempdir().unwrap();
    let tmp_names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // a committed file stays, and is no longer listed
    let mut done = AtomicFile::create(&d.path().join("done.txt"), Existing::Refuse).unwrap();
    done.write_all(b"x").unwrap();
    done.commit().unwrap();
    let mut f = AtomicFile::create(&d.path().join("a.dprp"), Existing::Refuse).unwrap();
    f.write_all(&[1u8; 1000]).unwrap();
    let s = StagingDir::create(&d.path().join("report"), Existing::Refuse).unwrap();
    std::fs::write(s.path().join("report.md"), "x").unwrap();
    assert_eq!(tmp_names(d.path()).len(), 3, "{:?}", tmp_names(d.path()));
    let (lock, removed) = remove_pending();
    drop(lock);
    let mut removed: Vec<String> = removed
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    removed.sort();
    assert_eq!(removed, ["a.dprp", "report"]);
    assert_eq!(tmp_names(d.path()), ["done.txt"]);
    // the owners find their files gone: commit fails, drop is quiet
    assert!(f.commit().is_err());
    assert!(s.commit().is_err());
    assert_eq!(tmp_names(d.path()), ["done.txt"]);
}
