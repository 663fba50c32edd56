//! The dev cluster's login node behind a bastion (scripts/dev-cluster.d/bastion.sh): the
//! bastion asks for sduser's key and then a one-time code (the same TOTP secret as the 2FA
//! login, [`super::totp`]); the login node `innerlogin` is reached only through it
//! (`ProxyJump bastion`; its firewall resets anything else) and runs Slurm 22.05's commands.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use super::shared_dev_dir;

/// The ssh alias of the login node, behind [`JUMP`].
pub const ALIAS: &str = "innerlogin";
/// The ssh alias of the bastion.
pub const JUMP: &str = "bastion";
/// The slurmdash cluster of the login node.
pub const CLUSTER: &str = "inner";

fn checked(p: PathBuf) -> PathBuf {
    assert!(
        p.is_file(),
        "{} is missing: the bastion is not set up (`scripts/dev-cluster up`, Slurm 22.05, runs bastion_up)",
        p.display()
    );
    p
}

/// The ssh client config with [`JUMP`] and [`ALIAS`] (no BatchMode: the bastion prompts).
pub fn ssh_config() -> PathBuf {
    checked(shared_dev_dir().join("ssh/config-bastion"))
}

/// A slurmdash config for the login node (`interactive_login = true`, cluster [`CLUSTER`]),
/// with no RPC budget (a copy under the target directory).
pub fn slurmdash_config() -> PathBuf {
    let src = checked(shared_dev_dir().join("slurmdash-bastion.toml"));
    let text = std::fs::read_to_string(&src).expect("read the bastion config");
    let dest = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurmdash-bastion.toml");
    let tmp = dest.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, super::without_budget(&text)).expect("write the test config");
    std::fs::rename(&tmp, &dest).expect("rename the test config");
    dest
}
