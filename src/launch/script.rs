//! The exact sbatch script slurmdash submits, in the layout of NVIDIA's TAO Slurm handler:
//! logs at `<job_dir>/slurm-logs/<name>-<job id>/main.{out,err}`, the results directory in
//! the environment, one task per node launched with srun (inside the container when there
//! is one), and the rendezvous variables for multi-node jobs.

use std::fmt::Write as _;

use crate::launch::validate::Plan;
use crate::registry::Layout;
use crate::slurm::time::SlurmDuration;

pub use crate::launch::quote::quote;

/// The sha256 of a staged file's bytes, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The end of a script that runs a recovered batch script: staged beside it verbatim, then
/// copied to a new private file beside it (mktemp, yours, mode 0700) that is opened,
/// unlinked, hashed (the checksum lives in this script, whose own sha256 the submission
/// checks) and run as the batch step, by its own `#!` line, as Slurm ran it. What runs is
/// the very inode that was hashed, reachable only through this job's descriptor: swapping
/// the staged path after the check changes nothing.
fn recovered(s: &mut String, body: &str, args: &[String], layout: &Layout) {
    s.push_str(&recovered_tail(&layout.recovered_path(), body, args));
}

fn recovered_tail(path: &str, body: &str, args: &[String]) -> String {
    let sum = sha256_hex(body.as_bytes());
    let args: String = args.iter().map(|a| format!(" {}", quote(a))).collect();
    format!(
        r#"
# The batch script (a relaunched job's, or your own from `slurmdash submit SCRIPT`),
# staged verbatim as {path}.
# Its #SBATCH lines are not read again: the options above are this launch's.
recovered={q}
run=$(mktemp -- "$recovered.run.XXXXXX") && cp -- "$recovered" "$run" && chmod 700 -- "$run" || {{
  echo "slurmdash: cannot copy $recovered to a private file beside it: not run" >&2
  rm -f -- "${{run-}}"; exit 12
}}
exec 9< "$run"
rm -f -- "$run"
if [ "$(sha256sum < /dev/fd/9 | cut -d' ' -f1)" != {sum} ]; then
  echo "slurmdash: $recovered changed since it was launched (sha256 {sum} recorded): not run" >&2
  exit 12
fi
exec /dev/fd/9{args}
"#,
        q = quote(path)
    )
}

/// Renders the script. `image` is what `--container-image` gets (the Pyxis form, or the
/// cached SQSH path), None for a job without a container.
pub fn render(plan: &Plan, layout: &Layout, image: Option<&str>) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let mut sb = |line: String| {
        let _ = writeln!(s, "#SBATCH {line}");
    };
    sb(format!("--job-name={}", plan.name));
    sb(format!("--partition={}", plan.partition));
    if let Some(a) = &plan.account {
        sb(format!("--account={a}"));
    }
    sb(format!("--nodes={}", plan.nodes));
    sb("--ntasks-per-node=1".into());
    if plan.gpus_per_node > 0 {
        sb(format!("--gres=gpu:{}", plan.gpus_per_node));
    }
    sb(format!("--cpus-per-task={}", plan.cpus_per_task));
    if let Some(m) = &plan.mem {
        sb(format!("--mem={m}"));
    }
    sb(format!(
        "--time={}",
        SlurmDuration::Known(plan.time).to_slurm()
    ));
    if plan.exclusive {
        sb("--exclusive".into());
    }
    sb(if plan.requeue {
        "--requeue"
    } else {
        "--no-requeue"
    }
    .into());
    // An array's tasks each have their own job id: they log into the array's directory
    // (`%A`, the one the submission creates), one file per index.
    let (dir, out, err) = match &plan.array {
        Some(a) => {
            sb(format!("--array={a}"));
            ("%x-%A", "main-%a.out", "main-%a.err")
        }
        None => ("%x-%j", "main.out", "main.err"),
    };
    sb(format!(
        "--output={}/slurm-logs/{dir}/{out}",
        layout.job_dir
    ));
    sb(format!("--error={}/slurm-logs/{dir}/{err}", layout.job_dir));
    for o in &plan.extra_sbatch {
        sb(o.clone());
    }
    let _ = writeln!(
        s,
        "#\n# Written by slurmdash for launch {id}. slurmdash submits it held, creates\n# slurm-logs/{name}-<job id>/ (Slurm does not create --output directories), then releases it.\n# Resubmitting by hand: create that directory first, or the job fails at start.\nset -eo pipefail\n",
        id = layout.local_id,
        name = plan.name,
    );
    let mut export = |k: &str, v: &str| {
        let _ = writeln!(s, "export {k}={}", quote(v));
    };
    export("TAO_API_RESULTS_DIR", &layout.results_root);
    export("TAO_JOB_ID", &layout.local_id);
    export("SLURMDASH_JOB_DIR", &layout.job_dir);
    export("NUM_GPU_PER_NODE", &plan.gpus_per_node.to_string());
    for (k, v) in &plan.env {
        export(k, v);
    }
    if !plan.sweep.is_empty() {
        s.push_str(&crate::launch::sweep::script_case(&plan.sweep));
    }
    if !plan.resume.is_empty() {
        let var = crate::launch::resume::ATTEMPT_VAR;
        let _ = writeln!(
            s,
            "# Which resume this is (0: the first run); the guard sets it for each resume.\nexport {var}=\"${{{var}:-0}}\""
        );
    }
    if plan.nodes > 1 {
        let _ = writeln!(
            s,
            "\n# Rendezvous: WORLD_SIZE is the number of nodes, NODE_RANK is set per node below.\nexport WORLD_SIZE=\"$SLURM_NNODES\"\nexport MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"\nexport MASTER_PORT={}",
            plan.master_port
        );
    }
    let workdir = plan.workdir.as_deref().unwrap_or(&layout.job_dir);
    let _ = writeln!(s, "\ncd {}", quote(workdir));
    if let Some(body) = &plan.batch_script {
        recovered(&mut s, body, &plan.script_args, layout);
        return s;
    }
    if !plan.steps.is_empty() {
        crate::launch::steps::render(
            &mut s,
            &plan.steps,
            plan.cpus_per_task,
            workdir,
            image,
            &plan.container_mounts,
        );
        return s;
    }

    let mut inner = String::new();
    if plan.nodes > 1 {
        inner.push_str("export NODE_RANK=\"$SLURM_NODEID\"\n");
    }
    if image.is_some() {
        let _ = writeln!(inner, "cd {}", quote(workdir));
    }
    inner.push_str(&plan.command);
    let mut srun = vec![
        "srun".to_string(),
        format!("--nodes={}", plan.nodes),
        "--ntasks-per-node=1".into(),
        format!("--cpus-per-task={}", plan.cpus_per_task),
    ];
    if let Some(img) = image {
        srun.push(quote(&format!("--container-image={img}")));
        if !plan.container_mounts.is_empty() {
            srun.push(quote(&format!(
                "--container-mounts={}",
                plan.container_mounts
            )));
        }
    }
    srun.push(quote(&plan.shell));
    srun.push("-c".into());
    srun.push(quote(&inner));
    let _ = writeln!(s, "{}", srun.join(" "));
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    /// `submit SCRIPT -- ARGS`: each argument reaches the script as one word, unexpanded.
    #[test]
    fn a_scripts_arguments_reach_it_as_given() {
        let tmp = tempfile::tempdir().unwrap();
        let staged = tmp.path().join("recovered.sh");
        let body = "#!/bin/sh\nfor a in \"$@\"; do printf '<%s>' \"$a\"; done\n";
        std::fs::write(&staged, body).unwrap();
        let args: Vec<String> = ["a b", "$(touch pwned)", "it's", "*", ""]
            .map(String::from)
            .to_vec();
        let tail = recovered_tail(staged.to_str().unwrap(), body, &args);
        let out = Command::new("bash")
            .args(["-c", &tail])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "<a b><$(touch pwned)><it's><*><>",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!tmp.path().join("pwned").exists());
    }

    /// Someone swaps the staged script right after it was hashed (a stand-in `sha256sum`
    /// that hashes, then replaces the staged file): what runs is still what was hashed.
    #[test]
    fn a_recovered_script_swapped_after_its_check_is_not_what_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let staged = tmp.path().join("recovered.sbatch");
        let body = "#!/bin/sh\necho launched-body\n";
        std::fs::write(&staged, body).unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let stub = bin.join("sha256sum");
        std::fs::write(
            &stub,
            "#!/bin/sh\n/usr/bin/sha256sum \"$@\"\nprintf '#!/bin/sh\\necho SWAPPED\\n' > \"$STAGED\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tail = recovered_tail(staged.to_str().unwrap(), body, &[]);
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .args(["-c", &tail])
            .env("PATH", path)
            .env("STAGED", &staged)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            std::fs::read_to_string(&staged)
                .unwrap()
                .contains("SWAPPED"),
            "the stand-in did not swap the staged file"
        );
        assert_eq!(
            stdout,
            "launched-body\n",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // No private copy is left behind.
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "{left:?}");

        // A staged file that no longer matches is refused, naming it.
        std::fs::write(&staged, "#!/bin/sh\necho other\n").unwrap();
        let out = Command::new("bash").args(["-c", &tail]).output().unwrap();
        assert_eq!(out.status.code(), Some(12));
        assert!(String::from_utf8_lossy(&out.stderr).contains("changed since it was launched"));
    }
}
