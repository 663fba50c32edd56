//! What each read slurmdash plans costs the cluster's daemons, as they count it: every read
//! the dashboard's budget plans and `:stats` counts (the refresh, the state check where the
//! version has it, a job's detail, the pending-job batch, the live sample of a running job
//! with and without GPU nodes, the partitions, the site's rate limit, sacct of jobs that
//! left the queue, the reservations and `why`'s test-only checks) runs once as the second test user, with the argv the code builds, and
//! slurmctld's (`sdiag`) and slurmdbd's (`sacctmgr show stats`) count of that user's RPCs
//! around it must be what `slurm::command::rpc_cost` says of that argv.
//!
//! As sdother, with no other test of that user beside it (nextest group `other-user`): a
//! difference of two readings is then this test's command alone.

use crate::common;

use std::time::Duration;

use common::*;
use slurmdash::remote::{Remote, RunOutput, SshRemote};
use slurmdash::slurm::batch;
use slurmdash::slurm::command::{self, rpc_cost, rpc_parts, RpcCost, SqueueQuery};
use slurmdash::slurm::live::{self, GpuProbe, LiveTarget};
use slurmdash::slurm::model::JobId;
use slurmdash::slurm::model::SlurmDuration;
use slurmdash::slurm::pending::Ask;
use slurmdash::slurm::reservation;
use slurmdash::slurm::statecheck::{self, Version};
use slurmdash::slurm::why::Shape;
use slurmdash::slurm::{partview, ratelimit};

/// One read as the dashboard runs it: one remote exec of `argv`.
struct Read {
    what: &'static str,
    argv: Vec<String>,
    /// Set when the read is several commands in one exec (`slurm::batch`), to check that
    /// each of them succeeded: a command that fails early costs less than it should.
    batch: Option<batch::Batch>,
}

fn single(what: &'static str, argv: Vec<String>) -> Read {
    Read {
        what,
        argv,
        batch: None,
    }
}

fn batched(what: &'static str, cmds: &[Vec<String>]) -> Read {
    let b = batch::script(cmds).expect("batch script");
    Read {
        what,
        argv: batch::argv(&b),
        batch: Some(b),
    }
}

/// Runs `read` once and returns what the daemons counted for sdother around it, with its
/// output.
async fn measure(r: &SshRemote, read: &Read) -> (RpcCost, RunOutput) {
    let before = rpcs_of(OTHER_USER);
    let out = r
        .run(&read.argv, None, T)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", read.what));
    let after = rpcs_of(OTHER_USER);
    assert!(
        after.0 >= before.0 && after.1 >= before.1,
        "the daemons' counts went back during {} (sdiag reset?): {before:?} -> {after:?}",
        read.what
    );
    assert!(
        out.success(),
        "{}: exit {:?}: {}",
        read.what,
        out.code,
        out.stderr_lossy()
    );
    if let Some(b) = &read.batch {
        let sections = batch::split(b, &out.stdout_lossy(), &out.stderr_lossy())
            .unwrap_or_else(|e| panic!("{}: {e}", read.what));
        for (i, s) in sections.iter().enumerate() {
            assert!(
                s.success(),
                "{}: command {i} failed: {}",
                read.what,
                s.stderr
            );
        }
    }
    let cost = RpcCost {
        ctld: after.0 - before.0,
        dbd: after.1 - before.1,
    };
    (cost, out)
}

/// How many of `argv`'s Slurm commands are sstat runs: the one figure the cost table's doc
/// gives per version (3 slurmctld RPCs on 22.05, 2 on 24.11 and 26.05; the table takes 3).
fn sstat_runs(argv: &[String]) -> u64 {
    let mut n = 0;
    rpc_parts(argv, &mut |name, _| n += u64::from(name == "sstat"));
    n
}

/// Whether `measured` is what the table says of `argv` on `version`: the same, except one
/// slurmctld RPC fewer per sstat from 24.11 on (the table's doc comment).
fn agrees(argv: &[String], measured: RpcCost, version: Version) -> bool {
    let table = rpc_cost(argv);
    let spare = if version >= Version(24, 11, 0) {
        sstat_runs(argv)
    } else {
        0
    };
    measured.dbd == table.dbd && measured.ctld <= table.ctld && measured.ctld + spare >= table.ctld
}

/// Each read's figures, and those that disagree with the table.
#[derive(Default)]
struct Ledger {
    rows: Vec<String>,
    wrong: Vec<String>,
}

impl Ledger {
    fn check(&mut self, read: &Read, measured: RpcCost, version: Version) {
        let table = rpc_cost(&read.argv);
        self.rows.push(format!(
            "{:<30} counted ctld {} dbd {}, table ctld {} dbd {}",
            read.what, measured.ctld, measured.dbd, table.ctld, table.dbd
        ));
        if !agrees(&read.argv, measured, version) {
            self.wrong.push(format!(
                "{}: the daemons counted {measured:?}, the table says {table:?}",
                read.what
            ));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_planned_read_costs_what_the_cost_table_says() {
    let r = remote_as(OTHER_ALIAS);
    let dir = scratch_of(&r, OTHER_USER, "rpc-cost").await;
    let job = |name: &'static str, extra: &'static [&'static str]| {
        let (r, dir) = (&r, dir.clone());
        async move {
            let mut args = vec![
                "-D",
                dir.as_str(),
                "-J",
                name,
                "-p",
                "short",
                "-c",
                "1",
                "--mem=50M",
                "-t",
                "5",
            ];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["--wrap", "sleep 280"]);
            sbatch(r, &args).await
        }
    };
    let cpu = job("rpc-cost-cpu", &[]).await;
    let _cancel_cpu = CancelOther(vec![cpu]);
    let gpu = job("rpc-cost-gpu", &["--gres=gpu:1"]).await;
    let _cancel_gpu = CancelOther(vec![gpu]);
    let held = job("rpc-cost-held", &["--hold"]).await;
    let _cancel_held = CancelOther(vec![held]);
    wait_job_running(&r, cpu, "the CPU job", Duration::from_secs(120)).await;
    wait_job_running(&r, gpu, "the GPU job", Duration::from_secs(120)).await;
    let gpu_node = job_nodes(&r, gpu).await;
    let id = |n: u64| -> JobId { n.to_string().parse().expect("job id") };

    let mut l = Ledger::default();

    // The site's rate limit, read once per dashboard; its answer names the version.
    let read = single("scontrol show config", ratelimit::show_config_argv());
    let (cost, out) = measure(&r, &read).await;
    let version = statecheck::version_from_config(&out.stdout_lossy())
        .expect("SLURM_VERSION in scontrol show config");
    assert!(
        version.to_string().starts_with(&dev_slurm()),
        "the cluster under test is {version}, not {}",
        dev_slurm()
    );
    l.check(&read, cost, version);

    // The refresh: squeue --local alone, and with sacct of a job that left the queue.
    let query = SqueueQuery::default();
    let read = batched("refresh", &slurmdash::io::poll::commands(&query, &[]));
    let (cost, out) = measure(&r, &read).await;
    for n in [cpu, gpu, held] {
        assert!(
            out.stdout_lossy().contains(&n.to_string()),
            "the refresh lists job {n}"
        );
    }
    l.check(&read, cost, version);
    // sacct's cost depends on whether it finds the job (names of TRES and QOS are asked
    // for rows only): wait until slurmdbd has the job's record, as it has for a job that
    // really left (before the count starts).
    let held_s = held.to_string();
    wait_for(
        "slurmdbd's record of the held job",
        Duration::from_secs(60),
        || {
            let (r, held_s) = (&r, &held_s);
            async move {
                let out = run(r, &["sacct", "-n", "-X", "-o", "JobID", "-j", held_s]).await;
                out.stdout_lossy().contains(held_s.as_str()).then_some(())
            }
        },
    )
    .await;
    let read = batched(
        "refresh with a job that left",
        &slurmdash::io::poll::commands(&query, &[id(held)]),
    );
    let (cost, _) = measure(&r, &read).await;
    l.check(&read, cost, version);
    // The final state of jobs that left, asked at once on its own.
    let read = single(
        "sacct of jobs that left",
        command::sacct_jobs(&[id(cpu), id(held)], command::RECENT),
    );
    let (cost, out) = measure(&r, &read).await;
    assert!(
        out.stdout_lossy().contains(&cpu.to_string()),
        "sacct lists {cpu}"
    );
    l.check(&read, cost, version);

    // The state check, where the version answers it.
    if version.has_state_check() {
        let read = single(
            "squeue --only-job-state",
            statecheck::argv(&[cpu, gpu, held]),
        );
        let (cost, out) = measure(&r, &read).await;
        let seen = statecheck::parse(&out.stdout_lossy()).expect("state check answer");
        assert_eq!(seen.len(), 3, "{seen:?}");
        l.check(&read, cost, version);
    }

    // A job's detail.
    let read = single(
        "scontrol --local show job",
        command::scontrol_show_job(&id(cpu), false),
    );
    let (cost, out) = measure(&r, &read).await;
    assert!(
        out.stdout_lossy().contains(&format!("JobId={cpu}")),
        "{}",
        out.stdout_lossy()
    );
    l.check(&read, cost, version);

    // Why the held job pends, with and without the partitions' limits.
    let jobs = slurmdash::slurm::parse::read_squeue(
        &r.run(&command::squeue(&query), None, T)
            .await
            .expect("squeue")
            .stdout_lossy(),
    )
    .items;
    for (what, with_partitions) in [
        ("pending batch with partitions", true),
        ("pending batch", false),
    ] {
        let ask = Ask::of(OTHER_USER, &jobs, with_partitions).expect("a pending job to ask about");
        let read = batched(what, &slurmdash::slurm::pending::commands(&ask));
        let (cost, _) = measure(&r, &read).await;
        l.check(&read, cost, version);
    }

    // The live sample of a running job without GPUs (sstat alone) and of one with a GPU
    // (sstat and nvidia-smi through srun --overlap on its node).
    let probe = slurmdash::io::live::probe_secs(T);
    for (what, n, nodes) in [
        ("live sample, no GPU node", cpu, vec![]),
        ("live sample, one GPU node", gpu, vec![gpu_node.clone()]),
    ] {
        let t = LiveTarget {
            id: id(n),
            gpu_nodes: nodes.clone(),
            nodes_skipped: 0,
            timeout_secs: probe,
        };
        let read = single(what, live::argv(&t, "RPCCOSTMARK"));
        let (cost, out) = measure(&r, &read).await;
        let sample = live::parse_sample(&out.stdout_lossy(), "RPCCOSTMARK").expect("sample");
        let steps = sample.steps.expect("sstat answered");
        assert!(!steps.is_empty(), "sstat lists the job's steps");
        assert_eq!(sample.gpus.len(), nodes.len(), "{:?}", sample.gpus);
        for g in &sample.gpus {
            assert!(
                !matches!(g.probe, GpuProbe::Failed(_)),
                "srun --overlap ran on {}: {:?}",
                g.node,
                g.probe
            );
        }
        // What the budget plans for a sample is what the table counts in its argv.
        let planned = live::rpc_cost(&t);
        if planned != rpc_cost(&read.argv).ctld {
            l.wrong.push(format!(
                "{what}: the budget plans {planned} slurmctld RPCs, the table counts {:?}",
                rpc_cost(&read.argv)
            ));
        }
        l.check(&read, cost, version);
    }

    // The partitions: sinfo, scontrol show partition and an all-users squeue.
    let read = batched("partitions", &partview::commands());
    let (cost, _) = measure(&r, &read).await;
    l.check(&read, cost, version);

    // The reservations with the login node's clock (`why`, read on a schedule).
    let read = batched("reservations", &reservation::commands());
    let (cost, _) = measure(&r, &read).await;
    l.check(&read, cost, version);

    // Two alternatives of `why --alternatives`, checked with sbatch --test-only.
    let shape = |partition: &str| Shape {
        partition: partition.into(),
        time_limit: SlurmDuration::from_secs(300),
        nodes: 1,
        cpus: 1,
        mem_per_node: Some("50M".into()),
        ..Shape::default()
    };
    let read = batched(
        "test-only checks",
        &[
            shape("short").test_only_argv(),
            shape("polar").test_only_argv(),
        ],
    );
    let (cost, out) = measure(&r, &read).await;
    assert!(
        out.stderr_lossy().matches(" to start at ").count() == 2,
        "{}",
        out.stderr_lossy()
    );
    l.check(&read, cost, version);

    println!("RPCs of sdother per read on Slurm {version}:");
    for row in &l.rows {
        println!("  {row}");
    }
    assert!(
        l.wrong.is_empty(),
        "the cost table (src/slurm/command.rs) disagrees with the daemons on Slurm {version}:\n{}",
        l.wrong.join("\n")
    );
}
