use super::*;

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn key_is_created_once_secret_and_stable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("L");
    let ledger = Ledger::create(&dir).unwrap();
    assert_eq!(ledger.key_id().unwrap(), None);
    let lock = ledger.lock(|| {}).unwrap();
    let k1 = ledger.key(&lock).unwrap();
    let k2 = ledger.key(&lock).unwrap();
    assert_eq!(k1.key_id(), k2.key_id());
    assert_eq!(ledger.key_id().unwrap(), Some(k1.key_id()));
    let key_path = dir.join(LEDGER_SUBDIR).join(KEY_FILE);
    // the key and the commitment to the (empty) journal
    assert_eq!(std::fs::read(&key_path).unwrap().len(), keyfile::V2_LEN);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode(&key_path), 0o600);
        assert_eq!(mode(&dir.join(LEDGER_SUBDIR)), 0o700);
        // A key others can read is refused.
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ledger.key(&lock).unwrap_err().to_string();
        assert!(
            e.contains("readable by others") && e.contains("chmod 600"),
            "{e}"
        );
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // Another ledger has another key.
    let other = Ledger::create(&tmp.path().join("M")).unwrap();
    let l2 = other.lock(|| {}).unwrap();
    assert_ne!(other.key(&l2).unwrap().key_id(), k1.key_id());
    // A damaged key is reported, not replaced.
    std::fs::write(&key_path, b"short").unwrap();
    let e = ledger.key(&lock).unwrap_err().to_string();
    assert!(e.contains("5 bytes, not 32 or 80"), "{e}");
}

#[test]
fn missing_or_non_directory_ledger_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Ledger::open(&tmp.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not exist"), "{e}");
    let f = tmp.path().join("file");
    std::fs::write(&f, b"x").unwrap();
    assert!(Ledger::open(&f)
        .unwrap_err()
        .to_string()
        .contains("not a directory"));
    // create() makes the directory but not missing parents.
    assert!(Ledger::create(&tmp.path().join("a/b")).is_err());
}

#[test]
fn journal_round_trip_and_damaged_line() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = Ledger::create(tmp.path()).unwrap();
    let lock = ledger.lock(|| {}).unwrap();
    let g = crate::privacy::guarantee::Guarantee {
        kind: crate::privacy::guarantee::GuaranteeKind::PureDp,
        epsilon: 0.5,
        delta: None,
        beta: 1.0,
        neighbour: crate::privacy::guarantee::Neighbour::Coordinate,
        local: None,
    };
    let e = Entry {
        file: "gone.dprp".into(),
        checksum: "ab".repeat(32),
        created: "2026-11-23T00:00:00Z".into(),
        mechanism: "dp-signoporp-rr".into(),
        n: 3,
        guarantee: g,
        private: true,
        scaling: "none".into(),
        gaussian: None,
        dataset: Some(DatasetRecord {
            fingerprint: "cd".repeat(32),
            key_id: "0".repeat(16),
            hashed: "test".into(),
        }),
    };
    ledger.record(&lock, &e).unwrap();
    ledger.record(&lock, &e).unwrap();
    assert_eq!(ledger.journal().unwrap(), vec![e.clone(), e.clone()]);
    // The file is gone: still listed (once, merged by checksum) and counted.
    let inv = ledger.inventory().unwrap();
    assert_eq!(inv.releases.len(), 1);
    assert_eq!(inv.releases[0].status, FileStatus::Missing);
    assert_eq!(inv.of_dataset(e.dataset.as_ref().unwrap()).len(), 1);
    let journal = tmp.path().join(LEDGER_SUBDIR).join(JOURNAL_FILE);
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("{not json\n");
    std::fs::write(&journal, text).unwrap();
    let err = ledger.journal().unwrap_err().to_string();
    assert!(err.contains("line 3 of the file"), "{err}");
}

#[test]
fn a_second_holder_waits_for_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = Ledger::create(tmp.path()).unwrap();
    let first = ledger.lock(|| {}).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let l2 = ledger.clone();
    let h = std::thread::spawn(move || {
        let _second = l2.lock(|| tx.send(()).unwrap()).unwrap();
    });
    // The second holder reports that it waits (it cannot take the lock while `first` lives)…
    rx.recv().unwrap();
    assert!(!h.is_finished());
    // …and gets it once the first is released.
    drop(first);
    h.join().unwrap();
    // Uncontended: no wait.
    let _again = ledger.lock(|| panic!("nobody holds the lock")).unwrap();
}
