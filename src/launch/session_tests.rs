use std::time::Duration;

use super::*;

fn mins(m: u64) -> Duration {
    Duration::from_secs(m * 60)
}

#[test]
fn a_session_is_one_node_without_retries_named_for_its_label() {
    let base = LaunchSpec {
        gpus: 8,
        nodes: 4,
        array: "0-9".into(),
        retries: Some(3),
        resume: "timeout".into(),
        partition: "batch".into(),
        account: "proj".into(),
        ..LaunchSpec::default()
    };
    let opts = SessionOpts {
        label: Some("debug".into()),
        gpus: Some(1),
        time: Some("2h".into()),
        partition: Some("interactive".into()),
        image: Some("nvcr.io#nvidia/pytorch:24.01-py3".into()),
        ..Default::default()
    };
    let s = spec(&base, &opts, "120000");
    assert_eq!(s.name, "session-debug");
    assert_eq!((s.nodes, s.gpus), (1, 1));
    assert_eq!(s.time, "2h");
    assert_eq!(s.partition, "interactive");
    assert_eq!(s.account, "proj", "the configured account stays");
    assert_eq!(s.image, "nvcr.io#nvidia/pytorch:24.01-py3");
    assert!(s.array.is_empty() && s.resume.is_empty() && !s.requeue);
    assert_eq!(s.retries, Some(0));
    assert!(s.command.ends_with("while :; do sleep 600; done"));
    assert!(is_session(&s.name));
}

#[test]
fn defaults_no_gpus_an_hour_and_the_time_as_its_name() {
    let s = spec(&LaunchSpec::default(), &SessionOpts::default(), "143210");
    assert_eq!(s.name, "session-143210");
    assert_eq!(s.gpus, 0);
    assert_eq!(s.time, DEFAULT_TIME);
    // A label that already says session is not doubled.
    let s = spec(
        &LaunchSpec::default(),
        &SessionOpts {
            label: Some("session-x".into()),
            ..Default::default()
        },
        "1",
    );
    assert_eq!(s.name, "session-x");
}

#[test]
fn the_session_command_runs_beside_the_keep_alive() {
    let c = keep_alive(Some("jupyter lab --no-browser --port 8888"));
    assert!(c.contains("( jupyter lab --no-browser --port 8888 ) & while :;"));
    assert!(!keep_alive(Some("  ")).contains("( "));
    assert!(!keep_alive(None).contains("( "));
}

#[test]
fn only_names_with_the_prefix_and_a_label_are_sessions() {
    assert!(is_session("session-1"));
    assert!(!is_session("session-"));
    assert!(!is_session("my-session-1"));
    assert!(!is_session("train"));
}

#[test]
fn warns_at_ten_then_two_minutes_once_each() {
    // A refresh every 30 s from 12 minutes left to the end.
    let mut stage = 0;
    let mut said = Vec::new();
    let mut left = 12 * 60;
    while left > 0 {
        let (s, w) = warning(Duration::from_secs(left), stage);
        stage = s;
        if let Some(m) = w {
            said.push((left, m));
        }
        left -= 30;
    }
    assert_eq!(said, vec![(600, 10), (120, 2)]);
}

#[test]
fn a_session_first_seen_late_gets_only_the_latest_warning() {
    assert_eq!(warning(mins(1), 0), (2, Some(2)));
    assert_eq!(warning(mins(1), 2), (2, None));
    assert_eq!(warning(mins(60), 0), (0, None));
}

#[test]
fn an_extended_limit_warns_again_before_the_new_end() {
    let (stage, _) = warning(mins(9), 0);
    assert_eq!(stage, 1);
    // Extended by 30 minutes: far from the end again.
    let (stage, w) = warning(mins(39), stage);
    assert_eq!((stage, w), (0, None));
    assert_eq!(warning(mins(10), stage), (1, Some(10)));
    // From the 2-minute warning to 8 minutes left: no second 10-minute warning, but the
    // 2-minute one comes again.
    let (stage, w) = warning(mins(8), 2);
    assert_eq!((stage, w), (1, None));
    assert_eq!(warning(mins(2), stage), (2, Some(2)));
}

#[test]
fn time_left_is_the_limit_less_the_time_used() {
    assert_eq!(time_left(Some(mins(60)), Some(mins(55))), Some(mins(5)));
    assert_eq!(time_left(Some(mins(60)), Some(mins(70))), Some(mins(0)));
    assert_eq!(time_left(None, Some(mins(1))), None);
    assert_eq!(time_left(Some(mins(5)), None), Some(mins(5)));
}

#[test]
fn a_refused_extension_says_only_an_operator_can_raise_it() {
    assert_eq!(
        extend_refused("Access/permission denied"),
        "the cluster refused to extend: only an operator can raise a time limit here"
    );
    assert_eq!(
        extend_refused("Requested partition configuration not available now"),
        "the cluster refused to extend: Requested partition configuration not available now"
    );
}

#[test]
fn ssh_config_jumps_through_the_login_host_to_the_node() {
    let jump = Jump {
        host: "login.example.org".into(),
        user: Some("alice".into()),
        port: Some(2222),
    };
    let text = ssh_config("slurmdash-polar-4242", "gpu-a07", &jump).unwrap();
    assert_eq!(
        text,
        "Host slurmdash-polar-4242\n    HostName gpu-a07\n    ProxyJump alice@login.example.org:2222\n    User alice\n"
    );
    let alias_only = Jump {
        host: "polar".into(),
        user: None,
        port: None,
    };
    assert_eq!(
        ssh_config("a", "n1", &alias_only).unwrap(),
        "Host a\n    HostName n1\n    ProxyJump polar\n"
    );
}

#[test]
fn ssh_config_refuses_names_ssh_would_read_otherwise() {
    let jump = Jump {
        host: "login".into(),
        user: None,
        port: None,
    };
    for node in [
        "n1 n2",
        "n1\nProxyCommand evil",
        "\"n1\"",
        "-oProxyCommand=x",
        "n%h",
        "",
        "n1,n2",
        "n1#",
    ] {
        let e = ssh_config("a", node, &jump).unwrap_err();
        assert!(e.contains("node name"), "{node:?}: {e}");
    }
    let bad_host = Jump {
        host: "login host".into(),
        ..jump.clone()
    };
    assert!(ssh_config("a", "n1", &bad_host)
        .unwrap_err()
        .contains("login host"));
    let bad_user = Jump {
        user: Some("a@b".into()),
        ..jump
    };
    assert!(ssh_config("a", "n1", &bad_user)
        .unwrap_err()
        .contains("user name"));
}

#[test]
fn the_alias_is_a_plain_word() {
    assert_eq!(host_alias("polar", "4242"), "slurmdash-polar-4242");
    assert_eq!(
        host_alias("my cluster", "12_3"),
        "slurmdash-my-cluster-12-3"
    );
}
