//! Running one of the user's own commands (`[[commands]]`): on the login node or inside the
//! job through the cluster's transport (each word one argument, quoted by the transport), or
//! on this machine as a process of its own (no shell). Output is kept within
//! `slurm::custom::MAX_BYTES`: the rest is counted and dropped as it arrives.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::remote::Remote;
use crate::slurm::custom::{Capture, CustomOutput, CustomRun, Ended, Where};

/// The limit of a command that names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `run` (on `remote` unless it is a `laptop` command) within its timeout.
pub async fn run(remote: &dyn Remote, run: CustomRun) -> CustomOutput {
    let t0 = Instant::now();
    let limit = run.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let (ended, out, err) = match run.place {
        Where::Laptop => local(&run.argv, limit).await,
        Where::Login | Where::Node => {
            let mut out = Capture::default();
            let result = {
                let mut sink = |b: &[u8]| out.push(b);
                remote.run_into(&run.full_argv(), limit, &mut sink).await
            };
            match result {
                Ok(o) => {
                    // A transport that cannot stream hands stdout back whole.
                    out.push(&o.stdout);
                    let mut err = Capture::default();
                    err.push(&o.stderr);
                    (Ended::Exit(o.code), out, err)
                }
                Err(e) => (Ended::Failed(e.to_string()), out, Capture::default()),
            }
        }
    };
    CustomOutput::new(run, ended, t0.elapsed(), &out, &err)
}

/// `argv` as a process on this machine, its stdin closed, killed after `timeout`.
async fn local(argv: &[String], timeout: Duration) -> (Ended, Capture, Capture) {
    let none = || (Capture::default(), Capture::default());
    let Some((prog, args)) = argv.split_first() else {
        let (o, e) = none();
        return (Ended::Failed("empty command".into()), o, e);
    };
    let mut cmd = tokio::process::Command::new(prog);
    let child = crate::remote::local::piped(cmd.args(args), Stdio::null()).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let (o, er) = none();
            return (
                Ended::Failed(format!("cannot run `{prog}` here: {e}")),
                o,
                er,
            );
        }
    };
    let (Some(so), Some(se)) = (child.stdout.take(), child.stderr.take()) else {
        let (o, e) = none();
        return (Ended::Failed("no pipes to the process".into()), o, e);
    };
    let work = async {
        let (out, err) = tokio::join!(drain(so), drain(se));
        let status = child.wait().await;
        (status, out, err)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((Ok(status), out, err)) => (Ended::Exit(status.code()), out, err),
        Ok((Err(e), out, err)) => (Ended::Failed(e.to_string()), out, err),
        Err(_) => {
            let (o, e) = none();
            (
                Ended::Failed(format!(
                    "did not finish within {} s and was stopped",
                    timeout.as_secs()
                )),
                o,
                e,
            )
        }
    }
}

/// Everything `r` gives, kept within bounds.
async fn drain(mut r: impl AsyncRead + Unpin) -> Capture {
    let mut c = Capture::default();
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        c.push(&buf[..n]);
    }
    c
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn laptop(argv: &[&str]) -> CustomRun {
        CustomRun {
            cluster: 0,
            key: "J".into(),
            name: "t".into(),
            place: Where::Laptop,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            job: None,
            node: None,
            timeout: Some(Duration::from_secs(10)),
            pager: false,
        }
    }

    #[tokio::test]
    async fn a_laptop_command_runs_without_a_shell_and_each_word_is_one_argument() {
        let remote = crate::remote::fake::FakeRemote::new("login1");
        let out = run(
            &remote,
            laptop(&["printf", "%s|", "a; touch /tmp/slurmdash-pwned", "$HOME"]),
        )
        .await;
        assert!(out.success(), "{out:?}");
        assert_eq!(out.lines, ["a; touch /tmp/slurmdash-pwned|$HOME|"]);
        assert!(!std::path::Path::new("/tmp/slurmdash-pwned").exists());
    }

    #[tokio::test]
    async fn a_laptop_command_that_fails_or_hangs_says_so() {
        let remote = crate::remote::fake::FakeRemote::new("login1");
        let out = run(&remote, laptop(&["sh", "-c", "echo oops >&2; exit 3"])).await;
        assert_eq!(out.ended, Ended::Exit(Some(3)));
        assert_eq!(out.lines, ["── stderr ──", "oops"]);
        let out = run(&remote, laptop(&["/no/such/tool"])).await;
        assert!(
            out.status_word().contains("cannot run `/no/such/tool`"),
            "{out:?}"
        );
        let mut slow = laptop(&["sleep", "5"]);
        slow.timeout = Some(Duration::from_millis(200));
        let out = run(&remote, slow).await;
        assert!(out.status_word().contains("did not finish"), "{out:?}");
    }

    #[tokio::test]
    async fn a_big_output_is_cut_and_counted() {
        let remote = crate::remote::fake::FakeRemote::new("login1");
        let out = run(&remote, laptop(&["head", "-c", "3000000", "/dev/zero"])).await;
        assert!(out.cut);
        assert_eq!(out.bytes, 3_000_000);
    }

    #[tokio::test]
    async fn a_node_command_goes_through_the_transport_inside_the_job() {
        use crate::remote::fake::{FakeRemote, FakeReply};
        let remote = FakeRemote::new("login1");
        remote.on(&["srun"], vec![FakeReply::ok("gpu01\n")]);
        let mut r = laptop(&["hostname"]);
        r.place = Where::Node;
        r.job = Some("123".into());
        r.node = Some("gpu01".into());
        let out = run(&remote, r).await;
        assert_eq!(out.lines, ["gpu01"]);
        let calls = remote.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0][..4],
            ["srun", "--overlap", "--quiet", "--jobid=123"]
        );
        assert_eq!(calls[0].last().map(String::as_str), Some("hostname"));
    }
}
