//! The staging steps of `launch::stage` run on the login node, one remote command each:
//! create the job directory, write files through stdin, check input paths, submit held
//! (arming the retry guard staged by [`guard_files`]) and `--test-only`.

use std::time::Duration;

use crate::io::fetch::failure;
use crate::io::fetch::stdout_of as run_ok;
use crate::launch::guard::{self, GuardPlan};
use crate::launch::stage::{
    missing_argv, mkdirs_argv, parse_queued, parse_test_only, refusal, secrets_stdin,
    submit_argv_guarded, test_only_argv, unsafe_refusal, write_argv, Estimate, Queued, SubmitError,
    UNSAFE_EXIT,
};
use crate::registry::Layout;
use crate::remote::Remote;

pub async fn make_dirs(
    remote: &dyn Remote,
    layout: &Layout,
    mode: u32,
    t: Duration,
) -> Result<(), String> {
    let argv = mkdirs_argv(layout, mode);
    let out = remote
        .run(&argv, None, t)
        .await
        .map_err(|e| e.to_string())?;
    match out.code {
        Some(0) => Ok(()),
        Some(UNSAFE_EXIT) => Err(unsafe_refusal(&layout.job_dir, &out.stderr_lossy())),
        _ => Err(failure(remote, &argv, &out)),
    }
}

pub async fn write_file(
    remote: &dyn Remote,
    path: &str,
    content: &[u8],
    t: Duration,
) -> Result<(), String> {
    run_ok(remote, &write_argv(path), Some(content), t)
        .await
        .map(|_| ())
}

/// Checks on the login node that every input exists. A missing one stops the submission
/// with the path named; one that exists on this machine but not on the cluster is called
/// out as laptop-only.
pub async fn check_inputs(
    remote: &dyn Remote,
    inputs: &[String],
    t: Duration,
) -> Result<(), String> {
    if inputs.is_empty() {
        return Ok(());
    }
    let out = run_ok(remote, &missing_argv(inputs), None, t).await?;
    let host = remote.host().unwrap_or_else(|| "the login node".into());
    let missing: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|p| {
            if std::path::Path::new(p).exists() {
                format!("{p} (it exists on this machine only: copy it to the cluster's shared filesystem)")
            } else {
                p.to_string()
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "input path not found on {host}: {}; nothing was submitted",
            missing.join(", ")
        ))
    }
}

/// Submits the staged script (see [`submit_script`]). `checksum`: the script's sha256 as
/// recorded at launch; a script that no longer matches is refused.
pub async fn submit_held(
    remote: &dyn Remote,
    layout: &Layout,
    name: &str,
    secrets: &[(String, String)],
    checksum: &str,
    t: Duration,
) -> Result<Queued, SubmitError> {
    submit_held_excluding(remote, layout, name, secrets, checksum, "", t).await
}

/// [`submit_held`] kept off the nodes in `exclude` (a host list; empty: none), merged with
/// the script's own `--exclude`: a retry after an infrastructure failure.
pub async fn submit_held_excluding(
    remote: &dyn Remote,
    layout: &Layout,
    name: &str,
    secrets: &[(String, String)],
    checksum: &str,
    exclude: &str,
    t: Duration,
) -> Result<Queued, SubmitError> {
    let argv = submit_argv_guarded(layout, name, checksum, None, exclude);
    run_submit(remote, layout, secrets, argv, t).await
}

/// [`submit_held`], arming the retry guard staged in the job directory when `guard` (the
/// policy sha256 [`guard_files`] returned) is given.
pub async fn submit_held_guarded(
    remote: &dyn Remote,
    layout: &Layout,
    name: &str,
    secrets: &[(String, String)],
    checksum: &str,
    guard: Option<&str>,
    t: Duration,
) -> Result<Queued, SubmitError> {
    let argv = submit_argv_guarded(layout, name, checksum, guard, "");
    run_submit(remote, layout, secrets, argv, t).await
}

async fn run_submit(
    remote: &dyn Remote,
    layout: &Layout,
    secrets: &[(String, String)],
    argv: Vec<String>,
    t: Duration,
) -> Result<Queued, SubmitError> {
    let stdin = secrets_stdin(secrets).map_err(SubmitError::Refused)?;
    let script = layout.script_path();
    let out = remote.run(&argv, Some(&stdin), t).await.map_err(|e| {
        SubmitError::Lost(format!("submitting {script}: {e} (the job may be queued: submitting the launch again adopts it rather than queueing it twice)"))
    })?;
    match out.code {
        Some(0) => {}
        // The script decided (and cancelled whatever it had queued).
        Some(_) => {
            return Err(SubmitError::Refused(refusal(
                out.code,
                &out.stderr_lossy(),
                &script,
            )))
        }
        None => {
            return Err(SubmitError::Lost(refusal(
                out.code,
                &out.stderr_lossy(),
                &script,
            )))
        }
    }
    let text = out.stdout_lossy();
    parse_queued(&text).ok_or_else(|| {
        SubmitError::Lost(format!(
            "submitting {script} printed no job id: {}",
            text.trim()
        ))
    })
}

pub async fn test_only(remote: &dyn Remote, script: &str, t: Duration) -> Result<Estimate, String> {
    let argv = test_only_argv();
    let out = remote
        .run(&argv, Some(script.as_bytes()), t)
        .await
        .map_err(|e| e.to_string())?;
    let text = format!("{}{}", out.stderr_lossy(), out.stdout_lossy());
    match parse_test_only(&text) {
        Some(e) if out.success() => Ok(e),
        _ => Err(failure(remote, &argv, &out)),
    }
}

/// Writes guard.sh, guard.conf, the two ERE files and (when there is one) webhook.url
/// into the job directory, each through stdin with mode 0600. Returns the policy's sha256
/// ([`guard::policy_sha256`]) for the submission to pin on the guard's command line.
pub async fn guard_files(
    remote: &dyn Remote,
    layout: &Layout,
    plan: &GuardPlan,
    name: &str,
    partition: &str,
    account: Option<&str>,
    t: Duration,
) -> Result<String, String> {
    let (files, policy) = guard::staged_files(layout, plan, name, partition, account)?;
    for (path, content) in &files {
        write_file(remote, path, content.as_bytes(), t)
            .await
            .map_err(|e| format!("staging the retry guard ({path}): {e}"))?;
    }
    Ok(policy)
}
