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
        reservation: None,
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

/// A pure ε-DP entry of `n` rows of the dataset `fp`.
fn pure_entry(eps: f64, fp: &str) -> Entry {
    let g = crate::privacy::guarantee::Guarantee {
        kind: crate::privacy::guarantee::GuaranteeKind::PureDp,
        epsilon: eps,
        delta: None,
        beta: 1.0,
        neighbour: crate::privacy::guarantee::Neighbour::Coordinate,
        local: None,
    };
    Entry {
        file: String::new(),
        checksum: String::new(),
        created: String::new(),
        mechanism: "dp-signoporp-rr".into(),
        n: 0,
        guarantee: g,
        private: true,
        scaling: "none".into(),
        gaussian: None,
        dataset: Some(DatasetRecord {
            fingerprint: fp.into(),
            key_id: String::new(),
            hashed: "test".into(),
        }),
        reservation: None,
    }
}

#[test]
fn a_reservation_counts_until_withdrawn_and_is_refused_over_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let budget = Some(Budget::parse("5").unwrap());
    let mut gate = Gate::new(dir, budget, || {}).unwrap();
    let kid = gate.key().key_id();
    let ds = DatasetRecord {
        fingerprint: "ab".repeat(32),
        key_id: kid.clone(),
        hashed: "test".into(),
    };
    let e = pure_entry(2.0, "");
    gate.reserve(&dir.join("job"), e.clone(), ds.clone(), 10)
        .unwrap();
    // a second reservation through one handle is refused
    assert!(gate
        .reserve(&dir.join("job2"), e.clone(), ds.clone(), 10)
        .is_err());
    drop(gate);
    // the driver stopped without confirming or withdrawing: the reservation stays counted
    let inv = Ledger::open(dir).unwrap().inventory().unwrap();
    assert_eq!(inv.of_dataset(&ds).len(), 1);
    let mut gate = Gate::new(dir, budget, || {}).unwrap();
    gate.reserve(&dir.join("job2"), e.clone(), ds.clone(), 10)
        .unwrap();
    gate.withdraw().unwrap();
    drop(gate);
    let ledger = Ledger::open(dir).unwrap();
    let inv = ledger.inventory().unwrap();
    assert_eq!(inv.of_dataset(&ds).len(), 1, "withdrawn: no longer counted");
    assert_eq!(ledger.journal().unwrap().len(), 1);
    // 2 (left reserved) + 2 fits 5; a third 2 does not, and refused records nothing
    let mut gate = Gate::new(dir, budget, || {}).unwrap();
    gate.reserve(&dir.join("job3"), e.clone(), ds.clone(), 10)
        .unwrap();
    drop(gate);
    let mut gate = Gate::new(dir, budget, || {}).unwrap();
    let refused = gate
        .reserve(&dir.join("job4"), e.clone(), ds.clone(), 10)
        .unwrap_err();
    assert!(
        refused.to_string().contains("exceed the privacy budget"),
        "{refused}"
    );
    drop(gate);
    assert_eq!(Ledger::open(dir).unwrap().journal().unwrap().len(), 2);
    // power: without the fold, the withdrawn reservation would still be a line of its own
    let raw = std::fs::read_to_string(dir.join(LEDGER_SUBDIR).join(JOURNAL_FILE)).unwrap();
    assert_eq!(raw.lines().count(), 4);
}

#[test]
fn a_confirmation_takes_its_reservations_place_and_a_withdrawal_never_removes_it() {
    use compose::{Reservation, ReservationState::*};
    let mark = |mut e: Entry, id: &str, state, checksum: &str| {
        e.reservation = Some(Reservation {
            id: id.into(),
            state,
        });
        e.checksum = checksum.into();
        e
    };
    let e = pure_entry(1.0, "f");
    let lines = vec![
        mark(e.clone(), "a", Reserved, "reserved-a"),
        mark(e.clone(), "b", Reserved, "reserved-b"),
        e.clone(),
        mark(e.clone(), "a", Confirmed, "real-a"),
        mark(e.clone(), "a", Withdrawn, "reserved-a"),
        mark(e.clone(), "b", Withdrawn, "reserved-b"),
        mark(e.clone(), "c", Confirmed, "real-c"),
    ];
    let folded = fold_reservations(lines);
    let sums: Vec<&str> = folded.iter().map(|e| e.checksum.as_str()).collect();
    // a confirmed in its reservation's place; b withdrawn; c confirmed without a reservation kept
    assert_eq!(sums, ["real-a", "", "real-c"]);
}
