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

/// The end of a script that runs a recovered batch script: staged beside it verbatim, its
/// sha256 checked (the checksum lives in this script, whose own sha256 the submission
/// checks), then run as the batch step, by its own `#!` line, as Slurm ran it.
fn recovered(s: &mut String, body: &str, layout: &Layout) {
    let path = layout.recovered_path();
    let sum = sha256_hex(body.as_bytes());
    let _ = writeln!(
        s,
        "\n# The batch script of the job this relaunches, staged verbatim as {path}.\n# Its #SBATCH lines are not read again: the options above are this launch's.\nrecovered={}\nif [ \"$(sha256sum < \"$recovered\" | cut -d' ' -f1)\" != {sum} ]; then\n  echo \"slurmdash: $recovered changed since it was launched (sha256 {sum} recorded): not run\" >&2\n  exit 12\nfi\nchmod u+x \"$recovered\"\nexec \"$recovered\"",
        quote(&path)
    );
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
        recovered(&mut s, body, layout);
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
