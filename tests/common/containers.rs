//! The dev cluster's containers (scripts/dev-cluster.d/containers.sh): Pyxis and Enroot on
//! every node, and the image registry with the test images the script built.
#![allow(dead_code)]

use std::path::PathBuf;

use slurmdash::remote::Remote;

use super::run;

fn containers_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster/containers")
}

/// Fails the test with the reason `scripts/dev-cluster up` recorded when Pyxis/Enroot could
/// not be set up (e.g. the sources in ../shared/third_party are missing): a container test
/// never passes without running a container.
pub fn ready() {
    let dir = containers_dir();
    if let Ok(why) = std::fs::read_to_string(dir.join("unavailable")) {
        panic!(
            "containers are not available on the dev cluster: {}",
            why.trim()
        );
    }
    assert!(
        dir.join("registry/password").is_file(),
        "{} has no registry: scripts/dev-cluster up sets up Pyxis, Enroot and the image registry (scripts/dev-cluster.d/containers.sh)",
        dir.display()
    );
}

/// The Slurm version under test (`SLURMDASH_DEV_SLURM`, default 22.05).
fn version() -> String {
    std::env::var("SLURMDASH_DEV_SLURM").unwrap_or_else(|_| "22.05".into())
}

/// The address this machine has on the nodes' network of the version under test: the
/// nodes live in network namespaces and reach the registry only there.
pub fn host() -> String {
    if let Ok(a) = std::env::var("SLURMDASH_DEV_REGISTRY_HOST") {
        return a;
    }
    let v = version();
    let major = v.split('.').next().unwrap_or("22");
    format!("10.220.{major}.1")
}

/// The public registry as the nodes reach it (`HOST:5000`).
pub fn registry() -> String {
    format!("{}:5000", host())
}

/// The registry that needs a login (`HOST:5001`).
pub fn private_registry() -> String {
    format!("{}:5001", host())
}

/// (user, password) of the private registry.
pub fn login() -> (String, String) {
    let read = |f: &str| {
        let p = containers_dir().join("registry").join(f);
        std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .trim()
            .to_string()
    };
    (read("user"), read("password"))
}

/// The test images: (image path in the registry, the ID in its /etc/os-release).
pub const TINY: &str = "team/tiny:1.0";
pub const TINY_LATEST: &str = "team/tiny:latest";
pub const PY: &str = "team/py:1.0";
pub const PRIVATE: &str = "private/tiny:1.0";
/// The busybox image as a squashfs file on the shared filesystem.
pub const TINY_SQSH: &str = "/lustre/images/tiny.sqsh";

/// Writes (Some) or removes (None) the test user's `~/.config/enroot/.credentials` on the
/// cluster: Enroot reads it on the node (`machine HOST login USER password PASS`, the host
/// without its port).
pub async fn set_credentials(r: &dyn Remote, creds: Option<(&str, &str, &str)>) {
    let out = match creds {
        Some((host, user, pw)) => {
            run(
                r,
                &[
                    "sh",
                    "-c",
                    "mkdir -p ~/.config/enroot && umask 077 && printf 'machine %s login %s password %s\\n' \"$1\" \"$2\" \"$3\" > ~/.config/enroot/.credentials",
                    "sh",
                    host,
                    user,
                    pw,
                ],
            )
            .await
        }
        None => run(r, &["rm", "-f", ".config/enroot/.credentials"]).await,
    };
    assert!(out.success(), "credentials: {}", out.stderr_lossy());
}
