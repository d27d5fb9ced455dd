//! Many agents writing at once: 8 processes x 500 saves on one store.

use std::process::{Command, Stdio};

use crate::support::TempStore;

#[test]
fn eight_writers_leave_every_save_with_a_unique_id() {
    let s = TempStore::with_catalog();
    let bin = assert_cmd::cargo::cargo_bin("slayer-memory");
    let (writers, saves) = (8, 500);
    // Each writer is a shell loop of real `slayer-memory save` processes, all started together.
    let children: Vec<_> = (0..writers)
        .map(|w| {
            let script = format!(
                "fail=0; for i in $(seq 1 {saves}); do \"$BIN\" -q save --learning \"writer {w} note $i\" --entities shop.orders.amount > /dev/null || fail=$((fail+1)); done; exit $fail"
            );
            Command::new("bash")
                .args(["-c", &script])
                .env("BIN", &bin)
                .env("SLAYER_STORE", &s.store)
                .env("SLAYER_NO_EMBED", "1")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer had failed saves: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let exported = s.memory(&["export"], None).lines();
    assert_eq!(exported.len(), writers * saves);
    let mut ids: Vec<u64> = exported
        .iter()
        .map(|m| m["id"].as_str().unwrap().parse().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=(writers * saves) as u64).collect::<Vec<_>>());
    assert_eq!(
        s.index(&["stats", "--check"], None).code,
        0,
        "the index caught up with every save"
    );
}
