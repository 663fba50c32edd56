use super::*;
use proptest::prelude::*;
use std::process::Command;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Runs `line` as a login shell `shell` would (`shell -c line`), with `noise` printed on both
/// streams before it, as a dotfile does.
fn through(shell: &str, line: &str) -> std::process::Output {
    Command::new(shell)
        .arg("-c")
        .arg(format!("echo before; echo before-err >&2; {line}"))
        .output()
        .expect("run the shell")
}

#[test]
fn base64_matches_the_alphabet_and_padding() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
}

#[test]
fn the_login_line_holds_only_characters_every_shell_takes_literally_in_quotes() {
    let line = login_line(&s(&["echo", "it's $(id) `x` !1 \\n\n"]), "sdframe0123");
    let inner = line
        .strip_prefix("sh -c 'eval \"$(printf %s ")
        .and_then(|r| r.strip_suffix(" | base64 -d)\"'"))
        .expect("the line's shape");
    assert!(
        inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
        "{inner}"
    );
}

#[test]
fn hostile_words_reach_the_command_unchanged_and_the_frame_comes_off() {
    let words = s(&[
        "printf",
        "%s|",
        "it's",
        "$(id)",
        "`id`",
        "!1",
        "a\nb",
        "tab\there",
        "\\",
        "",
        "ü",
    ]);
    let m = new_marker();
    let out = through("sh", &login_line(&words, &m));
    let o = unframe(&out.stdout, &m);
    let e = unframe(&out.stderr, &m);
    assert_eq!(
        String::from_utf8_lossy(&o.bytes),
        "it's|$(id)|`id`|!1|a\nb|tab\there|\\||ü|"
    );
    assert_eq!(o.noise, b"before\n");
    assert_eq!(e.bytes, b"");
    assert_eq!(e.noise, b"before-err\n");
    assert_eq!((o.code, e.code), (Some(0), Some(0)));
}

#[test]
fn the_exit_status_and_stderr_are_the_commands_own() {
    let m = new_marker();
    let out = through(
        "sh",
        &login_line(&s(&["sh", "-c", "echo out; echo err >&2; exit 7"]), &m),
    );
    let o = unframe(&out.stdout, &m);
    let e = unframe(&out.stderr, &m);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!((o.bytes.as_slice(), o.code), (&b"out\n"[..], Some(7)));
    assert_eq!((e.bytes.as_slice(), e.code), (&b"err\n"[..], Some(7)));
}

#[test]
fn slurm_output_variables_are_unset_and_slurm_conf_stays() {
    let m = new_marker();
    let line = login_line(
        &s(&[
            "sh",
            "-c",
            "echo \"${SLURM_TIME_FORMAT-unset} ${SQUEUE_FORMAT-unset} ${SCANCEL_INTERACTIVE-unset} $SLURM_CONF\"",
        ]),
        &m,
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("SLURM_TIME_FORMAT", "relative")
        .env("SQUEUE_FORMAT", "%i")
        .env("SCANCEL_INTERACTIVE", "1")
        .env("SLURM_CONF", "/site/slurm.conf")
        .output()
        .expect("sh");
    let o = unframe(&out.stdout, &m);
    assert_eq!(o.bytes, b"unset unset unset /site/slurm.conf\n");
}

#[test]
fn every_login_shell_on_this_machine_runs_the_same_program() {
    // bash, dash and sh are always here; the others where installed (the dev cluster
    // installs them: scripts/dev-cluster.d).
    let shells = ["bash", "dash", "zsh", "ksh", "tcsh", "csh", "fish"];
    let mut ran = Vec::new();
    for sh in shells {
        if Command::new(sh).arg("-c").arg("true").output().is_err() {
            continue;
        }
        let m = new_marker();
        let words = s(&["printf", "%s\\n", "it's", "$HOME", "a\nb", "!x"]);
        let out = Command::new(sh)
            .arg("-c")
            .arg(login_line(&words, &m))
            .output()
            .expect("shell");
        let o = unframe(&out.stdout, &m);
        assert_eq!(
            String::from_utf8_lossy(&o.bytes),
            "it's\n$HOME\na\nb\n!x\n",
            "{sh}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ran.push(sh);
    }
    assert!(ran.contains(&"bash") && ran.contains(&"dash"), "{ran:?}");
}

#[test]
fn a_stream_without_a_start_marker_is_returned_whole() {
    let o = unframe(b"sh: 1: base64: not found\n", "sdframeX");
    assert!(!o.started);
    assert_eq!(o.bytes, b"sh: 1: base64: not found\n");
}

#[test]
fn a_followed_stream_in_any_pieces_passes_only_the_commands_bytes() {
    let m = "sdframe42";
    let whole = format!("motd\nhello\n{m}sline1\nline2 {m}\nline3{m}e0.trailer\n");
    let want = format!("line1\nline2 {m}\nline3");
    for size in 1..=whole.len() {
        let mut u = StreamUnframer::new(m);
        let mut got = Vec::new();
        for piece in whole.as_bytes().chunks(size) {
            got.extend(u.push(piece));
        }
        got.extend(u.finish());
        assert_eq!(String::from_utf8_lossy(&got), want, "pieces of {size}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes around and inside the frame: the command's bytes come back exactly, however
    /// the stream is cut into pieces.
    #[test]
    fn framing_round_trips(
        before in proptest::collection::vec(any::<u8>(), 0..200),
        body in proptest::collection::vec(any::<u8>(), 0..400),
        after in proptest::collection::vec(any::<u8>(), 0..100),
        code in 0i32..256,
        cut in 1usize..64,
    ) {
        let m = new_marker();
        let mut stream = before.clone();
        stream.extend_from_slice(format!("{m}s").as_bytes());
        stream.extend_from_slice(&body);
        stream.extend_from_slice(format!("{m}e{code}.").as_bytes());
        stream.extend_from_slice(&after);
        let o = unframe(&stream, &m);
        prop_assert_eq!(&o.bytes, &body);
        prop_assert_eq!(o.code, Some(code));
        let mut u = StreamUnframer::new(&m);
        let mut got = Vec::new();
        for piece in stream.chunks(cut) {
            got.extend(u.push(piece));
        }
        got.extend(u.finish());
        prop_assert_eq!(got, body);
    }
}
