//! Numbers a user types that no computer can hold are refused with a message, never a
//! panic or a silent wrap: time limits (launch form, `submit --set`, the edit form) and
//! durations in the config.

use crate::common;

use common::{dev_config, slurmdash_with, text};
use slurmdash::launch::validate::parse_time;
use slurmdash::slurm::ops::JobEdit;

#[test]
fn launch_time_limits_past_what_slurm_holds_are_refused() {
    for huge in [
        "213503982334602d",
        "18446744073709551615s",
        "99999999999999999999999h",
        "5000000d",
        "999999999999-00:00:00",
    ] {
        let e = parse_time(huge).expect_err(huge);
        assert!(e.contains("longer than Slurm can hold"), "{huge}: {e}");
        assert!(e.contains(huge), "{huge}: the message names the input: {e}");
    }
    // The largest sensible ones still pass.
    assert_eq!(parse_time("365d").map(|d| d.as_secs()), Ok(365 * 86400));
    assert_eq!(parse_time("1d12h").map(|d| d.as_secs()), Ok(129_600));
}

#[test]
fn the_edit_form_refuses_an_impossible_time_limit() {
    let e = JobEdit {
        time_limit: Some("999999999999-00:00:00".into()),
        ..JobEdit::default()
    };
    let errs = e.check("short", &[]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("longer than Slurm can hold"), "{errs:?}");
}

#[test]
fn submit_with_an_overflowing_time_limit_says_so_and_exits_2() {
    let out = slurmdash_with(
        &dev_config(),
        &[
            "submit",
            "--set",
            "time=213503982334602d",
            "--dry-run",
            "--",
            "true",
        ],
    );
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(2), "{err}{}", text(&out.stdout));
    assert!(err.contains("longer than Slurm can hold"), "{err}");
}

#[test]
fn huge_durations_in_the_config_name_the_key_and_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = std::fs::read_to_string(dev_config()).expect("dev config");
    for (key, limit) in [
        ("connect_timeout_secs", "3600"),
        ("command_timeout_secs", "86400"),
        ("poll_interval_secs", "86400"),
        ("poll_max_secs", "86400"),
    ] {
        let cfg = dir.path().join(format!("{key}.toml"));
        std::fs::write(&cfg, format!("{dev}{key} = 9223372036854775807\n")).expect("write");
        let out = slurmdash_with(&cfg, &["jobs"]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{key}: accepted");
        assert!(!err.contains("panicked"), "{key}: {err}");
        assert!(err.contains(&format!("clusters.dev.{key}")), "{key}: {err}");
        assert!(
            err.contains(&format!("must be at most {limit}")),
            "{key}: {err}"
        );
    }
}
