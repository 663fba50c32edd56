//! The dev cluster's 2FA login (scripts/dev-cluster.d/totp.sh): an sshd on
//! 127.0.0.1:22099 that asks for sduser's key and then a one-time code
//! ("Verification code:"), through PAM with a TOTP secret the script created.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::shared_dev_dir;

/// The ssh alias of the 2FA login, defined in [`ssh_config`].
pub const ALIAS: &str = "slurmdash-dev-2fa";
pub const PORT: u16 = 22099;
pub const USER: &str = "sduser";

fn checked(p: PathBuf) -> PathBuf {
    assert!(
        p.is_file(),
        "{} is missing: the 2FA sshd is not set up (scripts/dev-cluster up runs totp_up)",
        p.display()
    );
    p
}

/// The ssh client config with [`ALIAS`] (no BatchMode: it must be able to prompt).
pub fn ssh_config() -> PathBuf {
    checked(shared_dev_dir().join("ssh/config-2fa"))
}

/// A slurmdash config for the 2FA login (`interactive_login = true`, cluster `dev2fa`), with
/// no RPC budget (a copy under the target directory).
pub fn slurmdash_config() -> PathBuf {
    let src = checked(shared_dev_dir().join("slurmdash-2fa.toml"));
    let text = std::fs::read_to_string(&src).expect("read the 2FA config");
    let dest = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurmdash-2fa.toml");
    let tmp = dest.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, super::without_budget(&text)).expect("write the test config");
    std::fs::rename(&tmp, &dest).expect("rename the test config");
    dest
}

/// The base32 TOTP secret of [`USER`] (what a phone app would hold).
pub fn secret_path() -> PathBuf {
    checked(shared_dev_dir().join("totp").join(format!("{USER}.secret")))
}

fn oathtool(extra: &[&str]) -> String {
    let secret = std::fs::read_to_string(secret_path()).expect("reading the TOTP secret");
    let out = Command::new("oathtool")
        .args(["--totp", "-b"])
        .args(extra)
        .arg(secret.trim())
        .output()
        .expect("running oathtool (apt-get install oathtool)");
    assert!(
        out.status.success(),
        "oathtool failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The code the server accepts now (it also accepts the neighbouring 30 s steps).
pub fn code_now() -> String {
    oathtool(&[])
}

/// A six-digit code the server refuses now: none of the codes of the steps it accepts.
pub fn wrong_code() -> String {
    // -w 3 prints the codes of this step and the next three; the server's window is the
    // previous, this and the next step, so also exclude the previous one.
    let past = oathtool(&["--now", &format!("@{}", unix_now() - 30)]);
    let valid: Vec<String> = oathtool(&["-w", "3"])
        .lines()
        .map(str::to_string)
        .chain([past])
        .collect();
    (0..10u32)
        .map(|d| format!("{d}{d}{d}{d}{d}{d}"))
        .find(|c| !valid.contains(c))
        .expect("ten candidates, at most five valid codes")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// Plain `ssh ALIAS CMD...` to the 2FA login in a detached tmux session (so it can
/// prompt); the pane prints `EXITED:<code>` when ssh ends. `cmd` is parsed by the local
/// `sh` first: single-quote what the remote shell must expand.
pub fn ssh_in_tmux(cmd: &str) -> super::tmux::Tmux {
    let name = format!(
        "sd2fa-{}-{}",
        std::process::id(),
        super::tmux::rand_suffix()
    );
    let config = ssh_config();
    super::tmux::Tmux::spawn(
        name,
        120,
        30,
        &format!(
            "ssh -F {} {ALIAS} {cmd}; echo EXITED:$?; sleep 60",
            config.display()
        ),
    )
}
