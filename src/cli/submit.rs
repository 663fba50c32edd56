//! `slurmdash submit`: the form's submission from the command line, through the same path
//! (validate -> stage -> submit -> record).

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use crate::config::{Cluster, Loaded};
use crate::io::connect::connect;
use crate::launch::directives::{self, FromScript};
use crate::launch::{self, submit, LaunchSpec};
use crate::registry::Registry;

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Your own batch script (a file on this machine), e.g. `slurmdash submit train.sbatch
    /// -- --lr 3e-4`: its `#SBATCH` options are read (those slurmdash knows are checked as
    /// the form's fields, `--set` wins over them; the rest pass to Slurm unchanged), it is
    /// copied into the job directory and runs as the batch step with the arguments after
    /// `--`. Without SCRIPT the words after `--` are the command.
    #[arg(value_name = "SCRIPT")]
    pub script: Option<std::path::PathBuf>,
    /// Start from template NAME (over `[launch]`): the file
    /// `$XDG_CONFIG_HOME/slurmdash/templates/NAME.toml`, else `[templates.NAME]` in the config.
    #[arg(long, value_name = "NAME")]
    pub template: Option<String>,
    /// Set a launch field, e.g. `--set gpus=8 --set time=2h --set inputs=/lustre/data`
    /// (keys: name, partition, account, nodes, gpus, max_gpus_per_node, cpus_per_task, mem,
    /// time, array, sweep (`LR=1e-3,3e-4 SEED=1,2 %3`: see docs/launching.md), image,
    /// container_mounts, workdir, shell, env, secrets, extra_sbatch, inputs, requeue,
    /// sqsh_cache, force_reconvert, conversion_partition, sqsh_cache_dir, master_port,
    /// job_dir_mode, code, code_max_mb).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Validate and check input paths on the cluster, print the script; submit nothing.
    #[arg(long, conflicts_with = "test_only")]
    pub dry_run: bool,
    /// Ask the scheduler (`sbatch --test-only`) when and where the job would start.
    #[arg(long)]
    pub test_only: bool,
    /// Print the exact script before submitting it.
    #[arg(long)]
    pub preview: bool,
    #[command(flatten)]
    pub guard: GuardArgs,
    /// Slurm's mail for this launch (`--mail-type`, e.g. END,FAIL).
    #[arg(long, value_name = "TYPES")]
    pub mail_type: Option<String>,
    /// Where Slurm's mail goes (`--mail-user`).
    #[arg(long, value_name = "ADDRESS")]
    pub mail_user: Option<String>,
    /// The name of an environment variable holding the HTTP(S) URL the cluster's retry guard
    /// POSTs each decision to (over `[retry] webhook`/`webhook_env`). The URL itself is never
    /// an argument: `ps` and shell history would keep its token.
    #[arg(long, value_name = "VAR")]
    pub webhook_env: Option<String>,
    /// `snapshot`: carry the git repository this command runs in (tracked files with their
    /// uncommitted changes, untracked files git does not ignore, minus `.slurmdashignore`)
    /// into `<job_dir>/code`, and run there; `none`: no code (over `[launch] code`).
    #[arg(long, value_name = "MODE")]
    pub code: Option<String>,
    /// Print one JSON object when submitted: job_id, local_id, name, cluster, job_dir,
    /// script, stdout, stderr, and code (commit, dirty, hash) with a code snapshot.
    #[arg(long, conflicts_with_all = ["dry_run", "test_only", "preview"])]
    pub json: bool,
    /// The command the job runs (after `--`); with SCRIPT, the script's arguments.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// `session`: the sizes left to defaults are fitted to the partition's nodes
    /// (`validate::fit_defaults`); `None` (submit): checked as they are.
    #[arg(skip)]
    pub fit: Option<crate::launch::validate::Chosen>,
}

/// What the launch's guard job on the cluster does after it ends (`submit`, `adopt`).
#[derive(Debug, Default, Args)]
pub struct GuardArgs {
    /// Re-submissions after an infrastructure failure (default `[retry] max_retries`; 0: none).
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Also submit it again after these end states, by its guard job on the cluster:
    /// `timeout`, `preempt`, `node_fail`, comma-separated (a launch's default: `[launch]
    /// resume`). The job must pick up its own checkpoint.
    #[arg(long, value_name = "STATES")]
    pub resume: Option<String>,
    /// How many resumes at most (default `[launch] max_resumes`, 10).
    #[arg(long, value_name = "N")]
    pub max_resumes: Option<u32>,
}

/// The spec from config, template, the script's `#SBATCH` options, `--set` and the command
/// (or the script's arguments), in that order: a later one wins. With a script, what it
/// read of the script.
pub fn spec_from_args(
    loaded: &Loaded,
    cluster: &Cluster,
    args: &SubmitArgs,
) -> Result<(LaunchSpec, Option<FromScript>)> {
    let mut spec = loaded
        .config
        .launch_spec(args.template.as_deref())
        .map_err(|e| eyre!("config file {}: {e}", loaded.path.display()))?;
    let from_script = match &args.script {
        Some(path) => Some(script_into(&mut spec, path)?),
        None => None,
    };
    for kv in &args.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| eyre!("--set takes KEY=VALUE, not `{kv}`"))?;
        spec.set(k.trim(), v)
            .map_err(|e| eyre!("--set {kv}: {e}"))?;
    }
    if let Some(c) = &args.code {
        spec.set("code", c).map_err(|e| eyre!("--code {c}: {e}"))?;
    }
    if let Some(r) = args.guard.retries {
        spec.retries = Some(r);
    }
    if let Some(r) = &args.guard.resume {
        spec.resume = r.clone();
    }
    if let Some(m) = args.guard.max_resumes {
        spec.max_resumes = m;
    }
    if let Some(t) = &args.mail_type {
        spec.mail_type = t.clone();
    }
    if let Some(u) = &args.mail_user {
        spec.mail_user = u.clone();
    }
    if from_script.is_some() {
        if args.command.iter().any(|a| a.contains('\0')) {
            return Err(eyre!("an argument of the script contains a NUL byte"));
        }
        spec.script_args = args.command.clone();
    } else if !args.command.is_empty() {
        spec.command = crate::slurm::command::shell_line(&args.command)
            .map_err(|_| eyre!("the command contains a NUL byte"))?;
    }
    let spec = spec.with_cluster_defaults(
        cluster.settings.partition.as_deref(),
        cluster.settings.account.as_deref(),
    );
    Ok((spec, from_script))
}

/// Reads the script at `path` (on this machine) into `spec`: it becomes the batch step, and
/// its `#SBATCH` options set what they name. What the script does not ask for is what
/// sbatch gives without options (one node, one CPU a task, no GPU, no container); time,
/// memory, partition and account stay those of the config (or template) when it names none.
fn script_into(spec: &mut LaunchSpec, path: &std::path::Path) -> Result<FromScript> {
    use std::io::Read;
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| eyre!("script {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(directives::MAX_SCRIPT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| eyre!("script {shown}: {e}"))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    directives::from_script(spec, stem, bytes).map_err(|e| eyre!("script {shown}: {e}"))
}

/// What `submit SCRIPT` says it did with the script's options, on stderr.
fn say_from_script(path: &std::path::Path, r: &FromScript) {
    let shown = path.display();
    if !r.read.is_empty() {
        eprintln!(
            "{shown}: read and checked as the launch's fields: {}",
            r.read.join(" ")
        );
    }
    if !r.passed.is_empty() {
        eprintln!("{shown}: passed to Slurm unchanged: {}", r.passed.join(" "));
    }
    for i in &r.ignored {
        eprintln!("{shown}: left out: {i}");
    }
}

/// What is ready for the submission itself.
struct Ready {
    remote: std::sync::Arc<dyn crate::remote::Remote>,
    prepared: submit::Prepared,
    secrets: Vec<(String, String)>,
    timeout: std::time::Duration,
}

enum Step {
    /// Done without submitting (a dry run, a test-only estimate, refused fields).
    Done(ExitCode),
    Submit(Box<Ready>),
}

/// `slurmdash submit`. A signal (ctrl-c, a closed terminal, SIGTERM) before the submission
/// stops it with nothing queued. Once the submission has begun it is finished first, so
/// that the launch ends up queued and recorded, or not queued at all; a second signal
/// leaves at once, and then the launch stays recorded as being submitted (a dashboard
/// adopts its job, or submits it, later).
pub async fn run(loaded: &Loaded, cluster: &Cluster, args: &SubmitArgs) -> Result<ExitCode> {
    let (spec, from_script) = spec_from_args(loaded, cluster, args)?;
    if let (Some(path), Some(r)) = (&args.script, &from_script) {
        say_from_script(path, r);
    }
    let (s, prepared, interrupted) = match launch(loaded, cluster, args, spec).await? {
        Launched::Done(code) => return Ok(code),
        Launched::Submitted(l) => *l,
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "job_id": s.job_id,
                "local_id": s.local_id,
                "name": s.entry.name,
                "cluster": cluster.name,
                "job_dir": s.job_dir,
                "script": s.script_path,
                "stdout": s.stdout,
                "stderr": s.stderr,
                "code": s.entry.code,
            })
        );
        if let Some(c) = &s.code {
            eprintln!("{c}");
        }
        for w in &s.warnings {
            eprintln!("warning: {w}");
        }
    } else {
        print_submitted(&s, &prepared);
        if prepared.plan.batch_script.is_some() {
            println!(
                "your script, as staged: {}",
                prepared.layout.recovered_path()
            );
        }
    }
    if let Some((name, num)) = interrupted {
        eprintln!(
            "slurmdash: {name} came after the submission had begun: job {} is queued and recorded; `slurmdash cancel {}` cancels it",
            s.job_id, s.job_id
        );
        return Ok(ExitCode::from(128 + num as u8));
    }
    Ok(ExitCode::SUCCESS)
}

/// A signal that came once the submission had begun: its name and number.
pub(super) type Interrupted = Option<(&'static str, i32)>;

/// How [`launch`] ended.
pub(super) enum Launched {
    /// Nothing submitted (a dry run, a test-only estimate, refused fields, a signal).
    Done(ExitCode),
    Submitted(Box<(submit::Submitted, submit::Prepared, Interrupted)>),
}

/// The submission of `spec` with the options of `args` (dry run, test only, preview,
/// webhook), as `submit` does it; `session` uses it too. Signals as told at [`run`].
pub(super) async fn launch(
    loaded: &Loaded,
    cluster: &Cluster,
    args: &SubmitArgs,
    spec: LaunchSpec,
) -> Result<Launched> {
    let mut stop = crate::signals::Stop::new()?;
    let ready = tokio::select! {
        r = prepare(loaded, cluster, args, spec) => r?,
        (name, num) = stop.recv() => {
            eprintln!("slurmdash: stopped by {name}; nothing was submitted");
            return Ok(Launched::Done(ExitCode::from(128 + num as u8)));
        }
    };
    let ready = match ready {
        Step::Done(code) => return Ok(Launched::Done(code)),
        Step::Submit(r) => r,
    };
    let Ready {
        remote,
        prepared,
        secrets,
        timeout,
    } = *ready;
    let registry = Registry::open_default();
    let target = crate::io::submit::Target {
        remote: remote.as_ref(),
        cluster: &cluster.name,
        registry: &registry,
        timeout,
        convert_timeout: std::time::Duration::from_secs(30 * 60),
    };
    let local_id = prepared.layout.local_id.clone();
    let mut interrupted: Interrupted = None;
    let result = {
        let work = crate::io::submit::submit(&target, &prepared, &secrets);
        tokio::pin!(work);
        loop {
            tokio::select! {
                r = &mut work => break r,
                (name, num) = stop.recv() => {
                    if interrupted.is_some() {
                        eprintln!("slurmdash: stopped by {name} again: leaving mid-submission; launch {local_id} stays recorded as being submitted, and a dashboard adopts its job (or submits it) later");
                        return Ok(Launched::Done(ExitCode::from(128 + num as u8)));
                    }
                    eprintln!("slurmdash: {name}: finishing the submission first, so that launch {local_id} is either queued and recorded or not queued at all ({name} again leaves at once)");
                    interrupted = Some((name, num));
                }
            }
        }
    };
    let s = result.map_err(|e| eyre!(e))?;
    Ok(Launched::Submitted(Box::new((s, prepared, interrupted))))
}

async fn prepare(
    loaded: &Loaded,
    cluster: &Cluster,
    args: &SubmitArgs,
    spec: LaunchSpec,
) -> Result<Step> {
    if cluster.settings.read_only && !(args.dry_run || args.test_only) {
        return Err(eyre!(
            "cluster {} is read-only (--read-only or read_only = true in the config): nothing submitted (--dry-run and --test-only still work)",
            cluster.name
        ));
    }
    let results_root = cluster.results_root().map_err(|e| eyre!("{e}"))?;
    let remote = connect(cluster)?;
    let timeout = cluster.settings.command_timeout();
    let facts = crate::io::facts::fetch(remote.as_ref(), timeout)
        .await
        .map_err(|e| eyre!("reading the cluster's partitions: {e}"))?;
    let mut spec = spec;
    if let Some(chosen) = args.fit {
        for (field, said) in crate::launch::validate::fit_defaults(&mut spec, &facts, chosen) {
            let flag = if field == crate::launch::validate::Field::Mem {
                "--mem"
            } else {
                "--cpus"
            };
            eprintln!("slurmdash: {said}; {flag} sets it");
        }
    }
    let code = if args.test_only {
        None
    } else {
        code_snapshot(&spec).await?
    };
    let prepared =
        submit::prepare_with_code(&spec, &facts, &results_root, &submit::new_local_id(), code);
    let Some(mut prepared) = say_problems(prepared) else {
        return Ok(Step::Done(ExitCode::from(2)));
    };
    if let (Some(c), true) = (&prepared.code, args.dry_run) {
        eprintln!(
            "{} ({} files, {:.1} MB) would be staged in <job_dir>/code",
            launch::code::summary(&c.commit, c.dirty),
            c.files,
            c.bytes as f64 / (1024.0 * 1024.0)
        );
    }
    if args.test_only {
        let e = crate::io::submit::test_only(remote.as_ref(), &prepared, timeout)
            .await
            .map_err(|e| eyre!(e))?;
        println!(
            "estimated start {} on {} in partition {}\n({})",
            e.start, e.nodes, e.partition, e.text
        );
        return Ok(Step::Done(ExitCode::SUCCESS));
    }
    if args.dry_run || args.preview {
        print!("{}", prepared.script);
    }
    if args.dry_run {
        crate::io::stage::check_inputs(remote.as_ref(), &prepared.plan.inputs, timeout)
            .await
            .map_err(|e| eyre!(e))?;
        eprintln!("dry run: valid; nothing was submitted");
        return Ok(Step::Done(ExitCode::SUCCESS));
    }
    let secrets = submit::read_secrets(&prepared.plan.secrets, |n| std::env::var(n).ok())
        .map_err(|e| eyre!(e))?;
    let patterns = loaded.triage_patterns().map_err(|e| eyre!(e))?;
    let webhook = match &args.webhook_env {
        Some(name) => {
            let mut policy = crate::retry::RetryPolicy {
                webhook_env: Some(name.clone()),
                ..Default::default()
            };
            policy
                .resolve_webhook(|n| std::env::var(n).ok())
                .map_err(|e| eyre!("--webhook-env: {e}"))?;
            policy.webhook
        }
        None => None,
    };
    if let Some(w) = &webhook {
        crate::debug_log::add_secret(w);
        launch::guard::webhook_file_with(w, loaded.config.retry.webhook_plain_http)
            .map_err(|e| eyre!("--webhook-env: {e}"))?;
    }
    prepared.guard = prepared.guard_plan(&loaded.config.retry, &patterns, webhook.as_deref());
    Ok(Step::Submit(Box::new(Ready {
        remote,
        prepared,
        secrets,
        timeout,
    })))
}

/// With `code = "snapshot"`, the snapshot of the git repository holding the current
/// directory (see `io::code::snapshot`); refused with the reason when it cannot be made.
pub(super) async fn code_snapshot(spec: &LaunchSpec) -> Result<Option<launch::code::Snapshot>> {
    if spec.code == "same" {
        let r = spec
            .snapshot_ran()
            .ok_or_else(|| eyre!("code `same`: the launch ran no snapshot"))?;
        return Ok(Some(launch::code::Snapshot::reused(&r)));
    }
    if spec.code != "snapshot" {
        return Ok(None);
    }
    let here = std::env::current_dir().map_err(|e| eyre!("the current directory: {e}"))?;
    let max = spec.code_max_mb;
    let snap = tokio::task::spawn_blocking(move || crate::io::code::snapshot(&here, max))
        .await
        .map_err(|e| eyre!("making the code snapshot: {e}"))?
        .map_err(|e| eyre!("not submitted: {e}"))?;
    Ok(Some(snap))
}

pub(super) fn print_submitted(s: &submit::Submitted, prepared: &submit::Prepared) {
    println!("Submitted job {} (launch {})", s.job_id, s.local_id);
    println!("job dir: {}", s.job_dir);
    println!("script:  {}", s.script_path);
    println!("stdout:  {}", s.stdout);
    println!("stderr:  {}", s.stderr);
    match (&s.entry.guard, &prepared.guard) {
        (Some(_), Ok(g)) => println!(
            "retries: up to {} on infrastructure failures, by a guard job on the cluster (sdguard-{}); see {}",
            g.max_attempts - 1,
            prepared.plan.name,
            launch::guard::chain_path(&s.job_dir)
        ),
        (_, Err(why)) => println!("retries: by a running dashboard only ({why})"),
        (None, Ok(_)) => println!("retries: by a running dashboard only (the guard was not queued)"),
    }
    if let (Some(_), Ok(g)) = (&s.entry.guard, &prepared.guard) {
        if !g.resume.is_empty() {
            println!(
                "resume: {} by the same guard job, with {} set to the resume's number",
                launch::resume::describe(&g.resume, g.max_resumes),
                launch::resume::ATTEMPT_VAR
            );
        }
    }
    if let Some(c) = &s.code {
        println!("code:    {c}");
    }
    for w in &s.warnings {
        eprintln!("warning: {w}");
    }
}

/// The launch of `spec` under a new local id, or none after printing why it is not submitted.
pub(super) fn prepare_or_say(
    spec: &crate::launch::LaunchSpec,
    facts: &crate::launch::ClusterFacts,
    results_root: &str,
) -> Option<submit::Prepared> {
    say_problems(submit::prepare(
        spec,
        facts,
        results_root,
        &submit::new_local_id(),
    ))
}

fn say_problems(
    prepared: Result<submit::Prepared, Vec<crate::launch::Problem>>,
) -> Option<submit::Prepared> {
    prepared
        .map_err(|problems| {
            eprintln!("slurmdash: not submitted:");
            for p in problems {
                eprintln!("  {:?}: {}", p.field, p.message);
            }
        })
        .ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(argv: &[&str]) -> SubmitArgs {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            a: SubmitArgs,
        }
        T::try_parse_from(std::iter::once("submit").chain(argv.iter().copied()))
            .unwrap()
            .a
    }

    fn setup() -> (Loaded, Cluster) {
        let text = "[clusters.dev]\nhosts = ['h']\npartition = 'short'\naccount = 'research'\n[launch]\ntime = '2h'\ngpus = 4\nimage = 'nvcr.io#x'\n";
        let config = crate::config::parse(text, std::path::Path::new("c.toml")).unwrap();
        let settings = config.clusters["dev"].clone();
        let cluster = Cluster {
            name: "dev".into(),
            settings,
        };
        (
            Loaded {
                path: "c.toml".into(),
                config,
            },
            cluster,
        )
    }

    /// The script's options over the config, `--set` over the script, ARGS the script's.
    #[test]
    fn set_wins_over_the_script_which_wins_over_the_config() {
        let (loaded, cluster) = setup();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my train.sbatch");
        std::fs::write(
            &path,
            "#!/bin/bash\n#SBATCH -p long -t 30 --mem=8G\n#SBATCH --qos=high\nsrun python x.py \"$@\"\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let a = args(&[p, "--set", "mem=16G", "--", "--lr", "3e-4 x"]);
        let (spec, r) = spec_from_args(&loaded, &cluster, &a).unwrap();
        let r = r.unwrap();
        assert_eq!(spec.partition, "long");
        assert_eq!(spec.time, "30");
        assert_eq!(spec.mem, "16G");
        assert_eq!(spec.account, "research");
        // What the script does not ask for is sbatch's default, not the config's.
        assert_eq!((spec.nodes, spec.gpus, spec.cpus_per_task), (1, 0, 1));
        assert_eq!(spec.image, "");
        assert_eq!(spec.name, "my-train");
        assert_eq!(spec.command, "");
        assert_eq!(spec.script_args, ["--lr", "3e-4 x"]);
        assert!(spec.batch_script.starts_with("#!/bin/bash\n"));
        assert_eq!(r.passed, ["--qos=high"]);

        // Without a script, the words after `--` are the command, as before.
        let a = args(&["--", "python", "a b.py"]);
        let (spec, r) = spec_from_args(&loaded, &cluster, &a).unwrap();
        assert!(r.is_none());
        assert_eq!(spec.command, "python 'a b.py'");
        assert_eq!((spec.partition.as_str(), spec.gpus), ("short", 4));

        // A file that is not a script is refused naming it.
        std::fs::write(&path, b"\xff\xfe").unwrap();
        let e = spec_from_args(&loaded, &cluster, &args(&[p])).unwrap_err();
        assert!(e.to_string().contains("my train.sbatch"), "{e}");
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }
}
