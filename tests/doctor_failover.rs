//! `doctor`, host failover and config errors through the real binary and the dev cluster.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

/// A copy of the dev ssh config with two more aliases: `refusing` (a port where nothing
/// listens) and `silent` (a listener that accepts TCP and never speaks).
fn ssh_config_with_bad_hosts(dir: &Path, silent_port: u16) -> PathBuf {
    let mut cfg = std::fs::read_to_string(ssh_config()).expect("dev ssh config");
    for (alias, port) in [("refusing", 1), ("silent", silent_port)] {
        cfg.push_str(&format!(
            "\nHost {alias}\n  HostName 127.0.0.1\n  Port {port}\n  BatchMode yes\n  ConnectTimeout 2\n"
        ));
    }
    let p = dir.join("ssh_config");
    std::fs::write(&p, cfg).expect("write ssh config");
    p
}

/// The config, its cluster's masters closed when slurmdash exits (`persist_secs = 0`).
fn write_config(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, format!("{body}persist_secs = 0\n")).expect("write config");
    p
}

/// Accepts connections and never writes a byte, like a host whose sshd hangs.
fn silent_listener() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 256];
            let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
            let _ = s.read(&mut buf);
            held.push(s);
        }
    });
    port
}

#[test]
fn doctor_passes_on_the_dev_cluster() {
    let out = slurmdash(&["doctor"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let version = format!(
        "[ok]   slurm version: {} (slurm-wlm {}",
        dev_slurm(),
        dev_slurm()
    );
    for check in [
        "[ok]   ssh slurmdash-dev",
        "[ok]   slurm commands",
        &version,
        "[ok]   partitions: short, polar, long, cpu",
        "[ok]   results root",
        "all checks passed",
    ] {
        assert!(said.contains(check), "missing `{check}` in:\n{said}");
    }
}

#[test]
fn refusing_and_silent_hosts_before_the_good_one_cost_at_most_the_connect_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ssh = ssh_config_with_bad_hosts(dir.path(), silent_listener());
    let cfg = write_config(
        dir.path(),
        &format!(
            "[clusters.c]\nhosts = [\"refusing\", \"silent\", \"slurmdash-dev\"]\nssh_config = {:?}\nconnect_timeout_secs = 5\n",
            ssh.display().to_string()
        ),
    );
    // A state directory of its own: where slurmdash remembers the host that worked (which
    // it would try first next time, skipping the bad ones this test is about).
    let state = tempfile::tempdir().expect("state dir");
    let env = [("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))];
    let started = Instant::now();
    let out = slurmdash_env(&cfg, &["jobs", "--json"], &env);
    let took = started.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json");
    // Refused: at once; silent: its 1 s head start, then the good host beside it. The bound
    // is generous on purpose (expected ~1.5 s): it is not a speed figure but catches a silent
    // host waited on without connect_timeout, which would hang for good.
    assert!(took < Duration::from_secs(20), "failover took {took:?}");

    // doctor names each bad host with what to do, and passes because one host works.
    let out = slurmdash_env(&cfg, &["doctor"], &env);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("[warn] ssh refusing"), "{said}");
    assert!(said.contains("nothing listens for SSH there"), "{said}");
    assert!(said.contains("[warn] ssh silent"), "{said}");
    assert!(
        said.contains("did not answer within connect_timeout_secs"),
        "{said}"
    );
    assert!(said.contains("[ok]   ssh slurmdash-dev"), "{said}");
}

#[test]
fn doctor_fails_with_advice_when_nothing_is_reachable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ssh = ssh_config_with_bad_hosts(dir.path(), silent_listener());
    let cfg = write_config(
        dir.path(),
        &format!(
            "[clusters.c]\nhosts = [\"refusing\"]\nssh_config = {:?}\nconnect_timeout_secs = 2\n",
            ssh.display().to_string()
        ),
    );
    let out = slurmdash_with(&cfg, &["doctor"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("[FAIL] ssh refusing"), "{said}");
    assert!(said.contains("check the host name and port"), "{said}");
}

#[test]
fn doctor_fails_on_an_unwritable_results_root_and_an_unknown_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(
        dir.path(),
        &format!(
            "[clusters.c]\nhosts = [\"slurmdash-dev\"]\nssh_config = {:?}\npartition = \"nopart\"\nresults_root = \"/root/not-yours\"\n",
            ssh_config().display().to_string()
        ),
    );
    let out = slurmdash_with(&cfg, &["doctor"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("[ok]   ssh slurmdash-dev"), "{said}");
    assert!(
        said.contains("[FAIL] default partition: `nopart` is not among the partitions"),
        "{said}"
    );
    assert!(
        said.contains("[FAIL] results root: /root/not-yours is not writable"),
        "{said}"
    );
    assert!(said.contains("SLURM_BASE_RESULTS_DIR"), "{said}");
}

#[test]
fn a_bad_config_stops_with_the_file_and_key_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(
        dir.path(),
        "[clusters.c]\nhosts = [\"h\"]\npoll_interval_secs = \"fast\"\n",
    );
    let out = slurmdash_with(&cfg, &["jobs"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&cfg.display().to_string()), "{err}");
    assert!(err.contains("poll_interval_secs"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
