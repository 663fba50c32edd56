//! The server side of a login that asks for a one-time code (scripts/dev-cluster.d/totp.sh):
//! a key alone is not enough, a code from oathtool lets the user in, a wrong one is refused.
//! What slurmdash does on top of it is tested elsewhere.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::totp;

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn a_key_alone_is_refused() {
    let out = Command::new("ssh")
        .arg("-F")
        .arg(totp::ssh_config())
        .args(["-o", "BatchMode=yes", totp::ALIAS, "true"])
        .output()
        .expect("ssh");
    let err = common::text(&out.stderr);
    assert!(!out.status.success(), "logged in without a code: {err}");
    assert!(
        err.contains("Permission denied (keyboard-interactive)"),
        "ssh said: {err}"
    );
}

#[test]
fn the_code_of_the_moment_logs_in_and_a_wrong_one_asks_again() {
    let t = totp::ssh_in_tmux("'echo LOGGED-IN-AS-$(id -un)'");
    t.wait("the code prompt", LIMIT, |s| {
        s.contains("Verification code:")
    });
    t.keys(&[&totp::wrong_code(), "Enter"]);
    t.wait("a second prompt after a wrong code", LIMIT, |s| {
        s.matches("Verification code:").count() == 2
    });
    t.keys(&[&totp::code_now(), "Enter"]);
    let s = t.wait("the command's output", LIMIT, |s| s.contains("EXITED:"));
    assert!(s.contains("LOGGED-IN-AS-sduser"), "screen:\n{s}");
    assert!(s.contains("EXITED:0"), "screen:\n{s}");
}
