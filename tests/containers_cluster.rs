//! Real containers on the dev cluster (Pyxis and Enroot on every node, a local image
//! registry; scripts/dev-cluster.d/containers.sh): every image form TAO tooling accepts runs
//! from `slurmdash submit` and from the form, the command runs with /bin/sh inside a
//! busybox image, the SQSH cache converts once, and a private image needs credentials.
//! Each test reads the container's own output (its /etc/os-release) from main.out.

use crate::common;

use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use common::containers::{self as ct, ready};
use common::launch::LaunchSetup;
use common::*;
use slurmdash::io::fetch;
use slurmdash::io::triage::triage_job;
use slurmdash::launch::container::{parse_image, sqsh_name, sqsh_path};
use slurmdash::launch::LaunchSpec;
use slurmdash::remote::Remote;
use slurmdash::slurm::model::JobId;
use slurmdash::triage::{Class, Evidence, Patterns};

const JOB_LIMIT: Duration = Duration::from_secs(240);

/// What each job prints from inside its container: the image's ID, that /lustre is
/// mounted (the user's scratch tree), which shell runs the command and whether bash exists.
const PROBE: &str = "grep '^ID=' /etc/os-release; ls -d /lustre/fsw/sduser; echo \"shell=$0\"; if command -v bash >/dev/null; then echo has-bash; else echo no-bash; fi";

/// A config like the dev cluster's with its own results root and SQSH cache, and a
/// private state dir (registry of launches).
struct Setup {
    launch: LaunchSetup,
    root: String,
    cache: String,
}

async fn setup(tag: &str) -> Setup {
    ready();
    let launch = LaunchSetup::new(&format!("ct-{tag}")).await;
    Setup {
        root: launch.root.clone(),
        cache: format!("{}/sqsh-cache", launch.base),
        launch,
    }
}

impl Setup {
    /// `slurmdash submit` with `--set` for each pair (1 GPU, 1 CPU, 5 minutes, this
    /// setup's SQSH cache unless given).
    fn submit(&self, name: &str, set: &[(&str, &str)]) -> Output {
        let mut c = self.launch.submit_command();
        let cache = format!("sqsh_cache_dir={}", self.cache);
        let name = format!("name={name}");
        for kv in [
            name.as_str(),
            "gpus=1",
            "cpus_per_task=1",
            "time=5m",
            &cache,
        ] {
            c.arg("--set").arg(kv);
        }
        for (k, v) in set {
            c.arg("--set").arg(format!("{k}={v}"));
        }
        c.output().expect("run slurmdash submit")
    }
}

impl Setup {
    /// `slurmdash doctor` with this setup's config plus `[launch] image = IMAGE`.
    fn doctor_with_image(&self, image: &str) -> String {
        let base = std::fs::read_to_string(&self.launch.config).expect("config");
        let path = self.launch.config.with_file_name("doctor.toml");
        std::fs::write(&path, format!("{base}\n[launch]\nimage = \"{image}\"\n")).expect("write");
        let out = slurmdash_with(&path, &["doctor"]);
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    }
}

/// The job id and main.out/main.err paths `slurmdash submit` printed; fails the test with
/// everything it said when it did not submit.
fn submitted(out: &Output) -> (u64, String, String) {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "submit failed: {stdout}{}",
        text(&out.stderr)
    );
    (
        printed_job_id(&stdout),
        printed_field(&stdout, "stdout:").to_string(),
        printed_field(&stdout, "stderr:").to_string(),
    )
}

async fn completed_output(r: &dyn Remote, what: &str, out: &Output) -> String {
    let (id, stdout, stderr) = submitted(out);
    let state = final_state(r, id, JOB_LIMIT).await;
    assert_eq!(
        state,
        "COMPLETED",
        "{what}: job {id}; main.err:\n{}",
        cat(r, &stderr).await
    );
    cat(r, &stdout).await
}

fn assert_tiny_under_sh(what: &str, out: &str) {
    for want in [
        "ID=slurmdash-tiny\n",
        "/lustre/fsw/sduser\n",
        "shell=/bin/sh\n",
        "no-bash\n",
    ] {
        assert!(
            out.contains(want),
            "{what}: no {want:?} in main.out:\n{out}"
        );
    }
}

/// `inode mtime` of a file on the cluster, or None when it does not exist.
async fn stat(r: &dyn Remote, path: &str) -> Option<String> {
    let out = run(r, &["stat", "-c", "%i %Y", path]).await;
    out.success().then(|| out.stdout_lossy().trim().to_string())
}

#[tokio::test]
async fn every_image_form_runs_a_real_container_from_submit() {
    let s = setup("forms").await;
    let r = remote();
    let reg = ct::registry();
    let pyxis = format!("{reg}#{}", ct::TINY);
    let docker = format!("docker://{reg}#{}", ct::PY);
    let plain = format!("{reg}/{}", ct::TINY);
    // (what, image, SQSH cache): the registry forms both directly through Pyxis and
    // through the cache (an `enroot import` before submitting).
    let forms = [
        ("sqsh file", ct::TINY_SQSH, "false"),
        ("registry#image", pyxis.as_str(), "false"),
        ("registry/image, cached", plain.as_str(), "true"),
    ];
    let mut jobs = Vec::new();
    for (what, image, cache) in forms {
        let out = s.submit(
            "ct-form",
            &[("image", image), ("sqsh_cache", cache), ("command", PROBE)],
        );
        jobs.push((what, out));
    }
    // The bash + python3 image with bash asked for, through docker:// and the cache.
    let bash_out = s.submit(
        "ct-bash",
        &[
            ("image", &docker),
            ("sqsh_cache", "true"),
            ("shell", "bash"),
            (
                "command",
                "grep '^ID=' /etc/os-release; echo \"bash=$BASH_VERSION\"; python3 -c 'print(6 * 7)'",
            ),
        ],
    );
    for (what, out) in &jobs {
        let text = completed_output(&r, what, out).await;
        assert_tiny_under_sh(what, &text);
    }
    let text = completed_output(&r, "docker:// with bash", &bash_out).await;
    assert!(text.contains("ID=slurmdash-py\n"), "{text}");
    assert!(
        text.contains("bash=5."),
        "bash did not run the command:\n{text}"
    );
    assert!(text.contains("\n42\n"), "python3 did not run:\n{text}");
    // The cached forms left their SQSH files in the cache, named after the image reference
    // (readable, then a hash of it), private to the user.
    let ls = run(&r, &["ls", &s.cache]).await.stdout_lossy();
    let host = ct::host();
    for (readable, image) in [
        (format!("{host}+5000+team+tiny+1.0-"), &plain),
        (format!("{host}+5000+team+py+1.0-"), &docker),
    ] {
        let f = sqsh_name(parse_image(image).expect("image").pyxis());
        assert!(f.starts_with(&readable) && f.ends_with(".sqsh"), "{f}");
        assert!(ls.lines().any(|l| l == f), "no {f} in the cache: {ls}");
        let mode = run(&r, &["stat", "-c", "%U %a", &format!("{}/{f}", s.cache)]).await;
        assert_eq!(mode.stdout_lossy().trim(), "sduser 600", "{f}");
    }
    let mode = run(&r, &["stat", "-c", "%U %a", &s.cache]).await;
    assert_eq!(
        mode.stdout_lossy().trim(),
        "sduser 700",
        "the cache directory"
    );
    assert!(s.root.starts_with("/lustre/fsw/sduser/"));
}

#[tokio::test]
async fn the_sqsh_cache_converts_once_and_latest_only_when_asked() {
    let s = setup("cache").await;
    let r = remote();
    let reg = ct::registry();
    let latest = format!("{reg}/{}", ct::TINY_LATEST);
    let sqsh = sqsh_path(&s.cache, &format!("{reg}#{}", ct::TINY_LATEST));
    assert!(
        sqsh.contains(&format!("/{}+5000+team+tiny+latest-", ct::host())),
        "{sqsh}"
    );
    assert_eq!(stat(&r, &sqsh).await, None, "a fresh cache");
    let launch = |force: &'static str| {
        s.submit(
            "ct-cache",
            &[
                ("image", &latest),
                ("sqsh_cache", "true"),
                ("force_reconvert", force),
                ("conversion_partition", "cpu"),
                ("command", PROBE),
            ],
        )
    };
    // First launch: converted once (the file appears), and the job runs from it.
    let text = completed_output(&r, "first launch", &launch("false")).await;
    assert_tiny_under_sh("first launch", &text);
    let first = stat(&r, &sqsh).await.expect("converted into the cache");
    // Second: reused as is.
    let text = completed_output(&r, "second launch", &launch("false")).await;
    assert_tiny_under_sh("second launch", &text);
    assert_eq!(
        stat(&r, &sqsh).await.as_ref(),
        Some(&first),
        "reconverted without being asked"
    );
    // `:latest` with force_reconvert: converted again (a new file replaced the old one).
    let text = completed_output(&r, "forced launch", &launch("true")).await;
    assert_tiny_under_sh("forced launch", &text);
    let again = stat(&r, &sqsh).await.expect("still cached");
    assert_ne!(again, first, ":latest was not reconverted when asked");
    // Nothing half-written stays next to it.
    let ls = run(&r, &["ls", "-A", &s.cache]).await.stdout_lossy();
    assert_eq!(ls.lines().count(), 1, "leftovers in the cache: {ls}");
}

/// Another user cannot get an image of theirs run by your launch: while the cache directory
/// is writable by others the launch is refused, and so is a file they planted there under
/// the image's name (each time with the path and the fix, nothing queued); after the fixes
/// the message names, the launch converts its own image, 0600 in a 0700 directory.
#[tokio::test]
async fn an_image_another_user_planted_in_the_cache_is_never_used() {
    let s = setup("planted").await;
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let image = format!("{}/{}", ct::registry(), ct::TINY);
    let sqsh = sqsh_path(&s.cache, parse_image(&image).expect("image").pyxis());
    let name = format!("ct-planted-{}", std::process::id());
    // A cache directory left open to everyone (a careless chmod, a umask-less tool), below
    // a scratch directory others may enter.
    for argv in [
        vec!["chmod", "755", s.launch.base.as_str()],
        vec!["mkdir", "-m", "777", s.cache.as_str()],
    ] {
        let out = run(&r, &argv).await;
        assert!(out.success(), "{argv:?}: {}", out.stderr_lossy());
    }
    // The other user puts an image of their own there under the name slurmdash uses.
    let out = run(&other, &["cp", ct::TINY_SQSH, &sqsh]).await;
    assert!(out.success(), "{OTHER_USER} cp: {}", out.stderr_lossy());
    let set = [
        ("image", image.as_str()),
        ("sqsh_cache", "true"),
        ("command", PROBE),
    ];
    let refused = |what: &str, fix: &str| {
        let out = s.submit(&name, &set);
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(!out.status.success(), "{what}: submitted: {said}");
        assert!(
            said.contains(what) && said.contains(fix) && said.contains("nothing was submitted"),
            "{what}: {said}"
        );
        println!("refused: {}", said.trim());
    };
    refused(
        &format!("the SQSH cache {} is writable by group or others", s.cache),
        &format!("chmod 700 '{}'", s.cache),
    );
    // The fix it names; the planted file is still there, and its owner is not the user.
    let out = run(&r, &["chmod", "700", &s.cache]).await;
    assert!(out.success(), "chmod: {}", out.stderr_lossy());
    refused(
        &format!("the cached image {sqsh} belongs to uid"),
        &format!("rm '{sqsh}'"),
    );
    let queued = run(&r, &["squeue", "--me", "--noheader", "--name", &name]).await;
    assert_eq!(
        queued.stdout_lossy().trim(),
        "",
        "a refused launch queued a job"
    );
    // Removed as told: the launch converts the image itself and runs it.
    let out = run(&r, &["rm", "-f", &sqsh]).await;
    assert!(out.success(), "rm: {}", out.stderr_lossy());
    let text = completed_output(&r, "after the fixes", &s.submit(&name, &set)).await;
    assert_tiny_under_sh("after the fixes", &text);
    for (path, want) in [(&sqsh, "sduser 600"), (&s.cache, "sduser 700")] {
        let mode = run(&r, &["stat", "-c", "%U %a", path]).await;
        assert_eq!(mode.stdout_lossy().trim(), want, "{path}");
    }
}

#[tokio::test]
async fn a_private_image_needs_credentials_on_the_cluster() {
    // ~/.config/enroot/.credentials is in the home every version's cluster shares.
    let _creds = MachineLock::take("enroot-credentials");
    let s = setup("private").await;
    let r = remote();
    let image = format!("{}#{}", ct::private_registry(), ct::PRIVATE);
    let set = [
        ("image", image.as_str()),
        ("sqsh_cache", "false"),
        ("command", PROBE),
    ];
    ct::set_credentials(&r, None).await;
    // doctor sees Pyxis on the cluster itself, and the missing login for the registry
    // the config's image names.
    let doc = s.doctor_with_image(&image);
    assert!(
        doc.contains("[ok]   pyxis: srun --help lists --container-image"),
        "{doc}"
    );
    let host = ct::host();
    assert!(
        doc.contains(&format!("[warn] registry credentials: ~/.config/enroot/.credentials does not exist on the cluster; images from {host} need a login")),
        "{doc}"
    );
    // Without credentials: the job fails at start with Pyxis' own words, triaged as an
    // infrastructure failure whose remedy is the credentials file.
    let (id, _, stderr) = submitted(&s.submit("ct-private", &set));
    let state = final_state(&r, id, JOB_LIMIT).await;
    assert_eq!(state, "FAILED", "job {id}");
    let err = cat(&r, &stderr).await;
    let line = format!("pyxis: failed to import docker image: {image}");
    assert!(err.contains(&line), "main.err:\n{err}");
    let (detail, source) = fetch::detail(&r, &JobId::new(id), T)
        .await
        .unwrap_or_else(|e| panic!("detail of {id}: {e}"));
    let report = triage_job(&r, &detail, source, None, &Patterns::builtin())
        .await
        .expect("triage")
        .expect("a failed job is classified");
    assert_eq!(report.triage.class, Class::Infra, "{report:?}");
    match &report.triage.evidence {
        Evidence::LogLine { line: l, .. } => assert!(l.ends_with(&line), "evidence {l}"),
        other => panic!("expected Pyxis' line as evidence, got {other:?}"),
    }
    let hint = &report.triage.suggestion;
    assert!(
        hint.contains("~/.config/enroot/.credentials") && hint.contains("never"),
        "{hint}"
    );

    // With the credentials file in place, the same launch runs.
    let (user, pw) = ct::login();
    ct::set_credentials(&r, Some((&host, &user, &pw))).await;
    let doc = s.doctor_with_image(&image);
    assert!(
        doc.contains(&format!(
            "[ok]   registry credentials: ~/.config/enroot/.credentials has a login for {host}"
        )),
        "{doc}"
    );
    assert!(!doc.contains(&pw), "doctor printed the password: {doc}");
    let out = s.submit("ct-private", &set);
    let text = completed_output(&r, "with credentials", &out).await;
    ct::set_credentials(&r, None).await;
    assert_tiny_under_sh("private image", &text);
}

#[tokio::test]
async fn every_image_form_launched_from_the_form_runs_and_shows_in_the_log_pane() {
    let s = setup("form").await;
    let state = tempfile::tempdir().expect("state");
    std::env::set_var("SLURMDASH_STATE_DIR", state.path());
    let reg = ct::registry();
    let forms = [
        (ct::TINY_SQSH.to_string(), false),
        (format!("{reg}#{}", ct::TINY), false),
        (format!("docker://{reg}#{}", ct::TINY), true),
        (format!("{reg}/{}", ct::TINY), true),
    ];
    let remote: Arc<dyn Remote> = Arc::new(remote());
    for (i, (image, cache)) in forms.into_iter().enumerate() {
        let marker = format!("form-ct-{}-{i}", std::process::id());
        let defaults = LaunchSpec {
            name: "ct-form-app".into(),
            partition: "short".into(),
            account: "research".into(),
            gpus: 1,
            cpus_per_task: 1,
            time: "5m".into(),
            image: image.clone(),
            sqsh_cache: cache,
            sqsh_cache_dir: s.cache.clone(),
            command: format!("{PROBE}; echo {marker}"),
            ..LaunchSpec::default()
        };
        let (id, log) = app_driver::submit_from_form(
            remote.clone(),
            defaults,
            s.root.clone(),
            JOB_LIMIT,
            |t| t.contains(&marker),
        )
        .await;
        assert_tiny_under_sh(&format!("{image} from the form, job {id}"), &log);
    }
}

/// Pyxis is listed in every node's plugstack: a container starts on each compute node (but
/// those of partition `spare`, which the node-failure tests may have taken down meanwhile).
#[tokio::test]
async fn every_compute_node_runs_a_container() {
    ready();
    let r = remote();
    let not_spare = "--partition=short,polar,long,cpu";
    let nodes = run(&r, &["sinfo", "-h", "-N", not_spare, "-o", "%N %P"]).await;
    assert!(nodes.success(), "sinfo: {}", nodes.stderr_lossy());
    // (node, one partition it is in)
    let mut nodes: Vec<(String, String)> = nodes
        .stdout_lossy()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, p)| (n.to_string(), p.trim_end_matches('*').to_string()))
        .collect();
    nodes.sort();
    nodes.dedup_by(|a, b| a.0 == b.0);
    assert!(!nodes.is_empty(), "sinfo lists no node");
    for (node, partition) in &nodes {
        let image = format!("--container-image={}", ct::TINY_SQSH);
        // srun waits for room on that very node, beside the other tests' jobs: minutes
        // at worst, not the 30 s of a plain command.
        let argv = s(&[
            "srun",
            "-p",
            partition,
            "-w",
            node,
            "-n1",
            "-c1",
            "-t",
            "2",
            &image,
            "/bin/sh",
            "-c",
            "grep '^ID=' /etc/os-release; hostname",
        ]);
        let out = r
            .run(&argv, None, Duration::from_secs(240))
            .await
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let text = out.stdout_lossy();
        assert!(
            out.success() && text == format!("ID=slurmdash-tiny\n{node}\n"),
            "node {node} (partition {partition}): {text}{}",
            out.stderr_lossy()
        );
    }
}

/// A two-node launch: one container per node, each with its rank, under /bin/sh.
#[tokio::test]
async fn a_two_node_container_launch_gives_each_node_its_rank() {
    let s = setup("multi").await;
    let r = remote();
    let out = s.submit(
        "ct-multi",
        &[
            ("image", ct::TINY_SQSH),
            ("nodes", "2"),
            ("gpus", "2"),
            (
                "command",
                "echo \"rank=$NODE_RANK of $WORLD_SIZE $(grep '^ID=' /etc/os-release) shell=$0\"",
            ),
        ],
    );
    let text = completed_output(&r, "two nodes", &out).await;
    let mut lines: Vec<&str> = text.lines().filter(|l| l.starts_with("rank=")).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "rank=0 of 2 ID=slurmdash-tiny shell=/bin/sh",
            "rank=1 of 2 ID=slurmdash-tiny shell=/bin/sh"
        ],
        "main.out:\n{text}"
    );
}
