//! What the user asks for: the form's values, also read from `[launch]` defaults and
//! `[templates.NAME]` tables in the config and from `--set key=value` on the command line.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::launch::sweep::Sweep;

/// One launch request. Values are kept as the user typed them (e.g. time `4h`,
/// `lustre:///data`); [`crate::launch::validate`] turns them into a [`crate::launch::Plan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LaunchSpec {
    /// Job name (letters, digits, `.`, `_`, `-`): also names the log directory.
    pub name: String,
    /// Empty: the cluster's configured partition, else Slurm's default partition.
    pub partition: String,
    /// Empty: the cluster's configured account, else none (`--account` is left out).
    pub account: String,
    pub nodes: u32,
    /// GPUs for the whole job. At or above `max_gpus_per_node` the job takes whole nodes.
    pub gpus: u32,
    pub max_gpus_per_node: u32,
    pub cpus_per_task: u32,
    /// As Slurm takes it (`64G`); empty: the partition's default.
    pub mem: String,
    /// `4h`, `90m`, `1d12h`, or Slurm's `HH:MM:SS` / `D-HH:MM:SS`.
    pub time: String,
    /// A job array's task indices as sbatch's `--array` takes them (`0-19`, `3,7-9%2`);
    /// empty: a single job. Each task logs to `slurm-logs/<name>-<array id>/main-<index>.out`.
    pub array: String,
    /// A sweep: runs of values handed to the array's tasks as environment variables
    /// (`LR=1e-3,3e-4 BATCH=32 %3`); empty: none. See [`crate::launch::sweep`].
    #[serde(skip_serializing_if = "Sweep::is_empty")]
    pub sweep: Sweep,
    /// `/path/image.sqsh`, `registry#image:tag`, `docker://registry#image:tag` or
    /// `registry/image:tag`; empty: no container.
    pub image: String,
    pub container_mounts: String,
    /// Directory the command runs in (cluster path); empty: the job directory.
    pub workdir: String,
    /// Shell command run by each task (inside the container when there is one).
    pub command: String,
    /// The shell that runs `command`: `sh` (`/bin/sh`), `bash`, or an absolute path.
    /// Empty: `/bin/sh` inside a container (every image has it, not every image has
    /// bash), bash without one.
    pub shell: String,
    /// Plain environment variables for the job (written into the script).
    pub env: BTreeMap<String, String>,
    /// Names of variables read from this machine's environment and handed to sbatch over
    /// the SSH channel's stdin; their values are never written anywhere.
    pub secrets: Vec<String>,
    /// Further sbatch options, one per entry (`--qos=high`).
    pub extra_sbatch: Vec<String>,
    /// Paths the job reads; each must exist on the cluster (`test -e`) before submitting.
    pub inputs: Vec<String>,
    pub requeue: bool,
    /// Convert registry images to a cached SQSH file before the job starts.
    pub sqsh_cache: bool,
    /// Reconvert `:latest` images even when a cached SQSH exists.
    pub force_reconvert: bool,
    /// Partition for the `enroot import` step; empty: the job's partition.
    pub conversion_partition: String,
    /// Where converted SQSH images are cached; empty: `<results_root>/../sqsh-cache`.
    pub sqsh_cache_dir: String,
    pub master_port: u16,
    /// Octal mode of the job directory and its sub-directories (`0700`: only you; `0750`
    /// lets your group read results).
    pub job_dir_mode: String,
    /// Re-submissions after an infrastructure failure; unset: `[retry] max_retries`.
    pub retries: Option<u32>,
    /// Auto-resume: after which end states (`timeout,preempt,node_fail`) the guard on the
    /// cluster submits the same script again; empty: none.
    pub resume: String,
    /// How many resumes at most.
    pub max_resumes: u32,
    /// A signal Slurm sends before the time limit (`USR1@120`: to the job's steps, where
    /// the program runs), so the program can write a checkpoint; empty: none.
    pub signal: String,
    /// Slurm's mail (`--mail-type`, e.g. `END,FAIL`) and its address (`--mail-user`).
    pub mail_type: String,
    pub mail_user: String,
    /// The template these values started from (recorded in the registry).
    pub template: Option<String>,
    /// A batch script recovered from a job slurmdash did not launch (`L`), run instead of
    /// `command`: staged verbatim as `sbatch/recovered.sh`, checked by its sha256 and run
    /// as the batch step. Empty: none. Typing a command replaces it.
    pub batch_script: String,
    /// The arguments `batch_script` runs with (`slurmdash submit SCRIPT -- ARGS`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub script_args: Vec<String>,
    /// Several steps in one allocation (`[[steps]]` of a template), run instead of
    /// `command`; see [`crate::launch::steps`]. Empty: one command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<crate::launch::steps::StepSpec>,
    /// `snapshot`: the launch carries the files of the git repository slurmdash runs in
    /// (see [`crate::launch::code`]); `same`: the snapshot an earlier launch ran
    /// ([`Self::code_ran`]), already on the cluster; empty or `none`: no code is copied.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// A snapshot over this many MiB is refused, naming its largest files.
    #[serde(skip_serializing_if = "is_default_max_mb")]
    pub code_max_mb: u32,
    /// The snapshot's content hash this launch ran (set when staged): `L` runs the same
    /// one unless asked for the current code. Empty: none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub code_hash: String,
    /// The snapshot this launch ran (set when staged): what `same` reruns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_ran: Option<crate::registry::CodeRecord>,
}

fn is_default_max_mb(v: &u32) -> bool {
    *v == crate::launch::code::DEFAULT_MAX_MB
}

impl Default for LaunchSpec {
    fn default() -> Self {
        Self {
            name: "job".into(),
            partition: String::new(),
            account: String::new(),
            nodes: 1,
            gpus: 4,
            max_gpus_per_node: 8,
            cpus_per_task: 16,
            mem: String::new(),
            time: "4h".into(),
            array: String::new(),
            sweep: Sweep::default(),
            image: String::new(),
            container_mounts: "/lustre".into(),
            workdir: String::new(),
            command: String::new(),
            shell: String::new(),
            env: BTreeMap::new(),
            secrets: Vec::new(),
            extra_sbatch: Vec::new(),
            inputs: Vec::new(),
            requeue: true,
            sqsh_cache: true,
            force_reconvert: false,
            conversion_partition: String::new(),
            sqsh_cache_dir: String::new(),
            master_port: 29500,
            job_dir_mode: "0700".into(),
            retries: None,
            resume: String::new(),
            max_resumes: 10,
            signal: String::new(),
            mail_type: String::new(),
            mail_user: String::new(),
            template: None,
            batch_script: String::new(),
            script_args: Vec::new(),
            steps: Vec::new(),
            code: String::new(),
            code_max_mb: crate::launch::code::DEFAULT_MAX_MB,
            code_hash: String::new(),
            code_ran: None,
        }
    }
}

/// The keys `--set key=value` and the form accept, in form order.
pub const KEYS: &[&str] = &[
    "name",
    "partition",
    "account",
    "nodes",
    "gpus",
    "max_gpus_per_node",
    "cpus_per_task",
    "mem",
    "time",
    "array",
    "sweep",
    "image",
    "container_mounts",
    "workdir",
    "command",
    "shell",
    "env",
    "secrets",
    "extra_sbatch",
    "inputs",
    "requeue",
    "sqsh_cache",
    "force_reconvert",
    "conversion_partition",
    "sqsh_cache_dir",
    "master_port",
    "job_dir_mode",
    "retries",
    "resume",
    "max_resumes",
    "signal",
    "mail_type",
    "mail_user",
    "code",
    "code_max_mb",
];

impl LaunchSpec {
    /// The code snapshot this launch ran, when it ran one: [`Self::code_ran`], else (a
    /// spec written before the record had its commit) the bare [`Self::code_hash`].
    pub fn snapshot_ran(&self) -> Option<crate::registry::CodeRecord> {
        self.code_ran.clone().or_else(|| {
            (!self.code_hash.is_empty()).then(|| crate::registry::CodeRecord {
                hash: self.code_hash.clone(),
                ..Default::default()
            })
        })
    }

    /// Sets one field from text, as typed in the form or given to `--set`. Lists are
    /// comma-separated (`inputs=/a,/b`, `env=A=1,B=2`, `secrets=HF_TOKEN,NGC_KEY`); for
    /// extra sbatch options a space also separates (`--qos=high --exclude=n1`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        let num = |what: &str| -> Result<u32, String> {
            v.parse::<u32>()
                .map_err(|_| format!("{what} must be a whole number, not `{v}`"))
        };
        let flag = || -> Result<bool, String> {
            match v.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Ok(true),
                "false" | "no" | "off" | "0" => Ok(false),
                _ => Err(format!("{key} must be true or false, not `{v}`")),
            }
        };
        let list = |sep: &[char]| -> Vec<String> {
            v.split(sep)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        match key {
            "name" => self.name = v.to_string(),
            "partition" => self.partition = v.to_string(),
            "account" => self.account = v.to_string(),
            "nodes" => self.nodes = num("nodes")?,
            "gpus" => self.gpus = num("gpus")?,
            "max_gpus_per_node" => self.max_gpus_per_node = num("max_gpus_per_node")?,
            "cpus_per_task" | "cpus" => self.cpus_per_task = num("cpus_per_task")?,
            "mem" => self.mem = v.to_string(),
            "time" => self.time = v.to_string(),
            "array" => self.array = v.to_string(),
            "sweep" => self.sweep = Sweep::parse(v)?,
            "image" => self.image = v.to_string(),
            "container_mounts" | "mounts" => self.container_mounts = v.to_string(),
            "workdir" => self.workdir = v.to_string(),
            "command" => {
                self.command = value.to_string();
                if !v.is_empty() {
                    self.batch_script.clear();
                    self.script_args.clear();
                }
            }
            "shell" => self.shell = v.to_string(),
            "env" => {
                let mut env = BTreeMap::new();
                for pair in list(&[',']) {
                    let (k, val) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("env entries are NAME=value, not `{pair}`"))?;
                    env.insert(k.trim().to_string(), val.to_string());
                }
                self.env = env;
            }
            "secrets" => self.secrets = list(&[',', ' ']),
            "extra_sbatch" | "extra" => self.extra_sbatch = list(&[' ']),
            "inputs" => self.inputs = list(&[',']),
            "requeue" => self.requeue = flag()?,
            "sqsh_cache" => self.sqsh_cache = flag()?,
            "force_reconvert" => self.force_reconvert = flag()?,
            "conversion_partition" => self.conversion_partition = v.to_string(),
            "sqsh_cache_dir" => self.sqsh_cache_dir = v.to_string(),
            "master_port" => {
                self.master_port = v
                    .parse()
                    .map_err(|_| format!("master_port must be a port number, not `{v}`"))?
            }
            "job_dir_mode" => self.job_dir_mode = v.to_string(),
            "retries" => {
                self.retries = if v.is_empty() {
                    None
                } else {
                    Some(num("retries")?)
                }
            }
            "resume" => self.resume = v.to_string(),
            "max_resumes" => self.max_resumes = num("max_resumes")?,
            "signal" => self.signal = v.to_string(),
            "mail_type" => self.mail_type = v.to_string(),
            "mail_user" => self.mail_user = v.to_string(),
            "code" => {
                self.code = match v {
                    "" | "none" => String::new(),
                    "snapshot" => "snapshot".into(),
                    "same" if self.snapshot_ran().is_some() => "same".into(),
                    "same" => {
                        return Err(
                            "code `same` reruns the snapshot an earlier launch ran; this one ran none: `snapshot` or `none`".into(),
                        )
                    }
                    _ if self.snapshot_ran().is_some() => {
                        return Err(format!("code is `snapshot`, `same` or `none`, not `{v}`"))
                    }
                    _ => return Err(format!("code is `snapshot` or `none`, not `{v}`")),
                }
            }
            "code_max_mb" => self.code_max_mb = num("code_max_mb")?,
            _ => {
                return Err(format!(
                    "unknown launch setting `{key}`; known: {}",
                    KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// What the form shows for the command when it is a recovered batch script.
    pub fn batch_script_summary(&self) -> Option<String> {
        if self.batch_script.is_empty() || !self.command.trim().is_empty() {
            return None;
        }
        let n = self.batch_script.lines().count();
        Some(format!(
            "the job's recovered batch script: {n} line{} (type a command to replace it)",
            if n == 1 { "" } else { "s" }
        ))
    }

    /// The field's value as text, in the form `set` accepts.
    pub fn get(&self, key: &str) -> String {
        let b = |x: bool| if x { "true" } else { "false" }.to_string();
        match key {
            "name" => self.name.clone(),
            "partition" => self.partition.clone(),
            "account" => self.account.clone(),
            "nodes" => self.nodes.to_string(),
            "gpus" => self.gpus.to_string(),
            "max_gpus_per_node" => self.max_gpus_per_node.to_string(),
            "cpus_per_task" => self.cpus_per_task.to_string(),
            "mem" => self.mem.clone(),
            "time" => self.time.clone(),
            "array" => self.array.clone(),
            "sweep" => self.sweep.to_string(),
            "image" => self.image.clone(),
            "container_mounts" => self.container_mounts.clone(),
            "workdir" => self.workdir.clone(),
            "command" => self.command.clone(),
            "shell" => self.shell.clone(),
            "env" => self
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            "secrets" => self.secrets.join(","),
            "extra_sbatch" => self.extra_sbatch.join(" "),
            "inputs" => self.inputs.join(","),
            "requeue" => b(self.requeue),
            "sqsh_cache" => b(self.sqsh_cache),
            "force_reconvert" => b(self.force_reconvert),
            "conversion_partition" => self.conversion_partition.clone(),
            "sqsh_cache_dir" => self.sqsh_cache_dir.clone(),
            "master_port" => self.master_port.to_string(),
            "job_dir_mode" => self.job_dir_mode.clone(),
            "retries" => self.retries.map(|r| r.to_string()).unwrap_or_default(),
            "resume" => self.resume.clone(),
            "max_resumes" => self.max_resumes.to_string(),
            "signal" => self.signal.clone(),
            "mail_type" => self.mail_type.clone(),
            "mail_user" => self.mail_user.clone(),
            "code" => self.code.clone(),
            "code_max_mb" => self.code_max_mb.to_string(),
            _ => String::new(),
        }
    }

    /// Fills what the user left empty from the cluster's settings.
    pub fn with_cluster_defaults(mut self, partition: Option<&str>, account: Option<&str>) -> Self {
        if self.partition.is_empty() {
            if let Some(p) = partition {
                // SLURM_PARTITION may list several (`polar,polar3`): the first is ours.
                self.partition = p.split(',').next().unwrap_or(p).trim().to_string();
            }
        }
        if self.account.is_empty() {
            if let Some(a) = account {
                self.account = a.trim().to_string();
            }
        }
        self
    }
}

/// Slurm's `--time` as a person writes it: `5h`, `90m`.
pub fn time_text(secs: u64) -> String {
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else {
        format!("{}m", secs.div_ceil(60))
    }
}

/// Applies the suggestion to the spec; returns what changed, in words.
pub fn apply_suggestion(spec: &mut LaunchSpec, s: &crate::efficiency::Suggestion) -> Vec<String> {
    let mut changed = Vec::new();
    if let Some(t) = s.time_s {
        let new = time_text(t);
        changed.push(format!("time {new} (was {})", spec.time));
        spec.time = new;
    }
    if let Some(p) = &s.partition {
        changed.push(format!(
            "partition {p} (was {})",
            or_default(&spec.partition)
        ));
        spec.partition = p.clone();
    }
    if let Some(m) = &s.mem {
        changed.push(format!("memory {m} (was {})", or_default(&spec.mem)));
        spec.mem = m.clone();
    }
    if let Some(g) = s.gpus {
        changed.push(format!("GPUs {g} (was {})", spec.gpus));
        spec.gpus = g;
    }
    changed
}

fn or_default(s: &str) -> &str {
    if s.is_empty() {
        "the default"
    } else {
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_tao_packaged_values() {
        let s = LaunchSpec::default();
        assert_eq!((s.nodes, s.gpus, s.max_gpus_per_node), (1, 4, 8));
        assert_eq!((s.cpus_per_task, s.time.as_str()), (16, "4h"));
        assert_eq!(s.container_mounts, "/lustre");
        assert!(s.requeue && s.sqsh_cache);
    }

    #[test]
    fn set_and_get_round_trip_every_key() {
        let mut s = LaunchSpec::default();
        s.set("env", "A=1,B=x=y").unwrap();
        assert_eq!(s.env.get("B").map(String::as_str), Some("x=y"));
        s.set("extra_sbatch", "--qos=high  --exclude=n1").unwrap();
        assert_eq!(s.extra_sbatch, vec!["--qos=high", "--exclude=n1"]);
        s.set("requeue", "no").unwrap();
        assert!(!s.requeue);
        for k in KEYS {
            let v = s.get(k);
            let mut t = s.clone();
            t.set(k, &v).unwrap();
            assert_eq!(t, s, "{k}");
        }
        assert!(s.set("gpus", "four").unwrap_err().contains("whole number"));
        assert!(s
            .set("gpu", "4")
            .unwrap_err()
            .contains("unknown launch setting"));
    }

    #[test]
    fn cluster_defaults_fill_only_empty_fields() {
        let s = LaunchSpec::default().with_cluster_defaults(Some("polar,polar3"), Some("research"));
        assert_eq!(
            (s.partition.as_str(), s.account.as_str()),
            ("polar", "research")
        );
        let t = LaunchSpec {
            partition: "long".into(),
            ..LaunchSpec::default()
        };
        let t = t.with_cluster_defaults(Some("polar"), None);
        assert_eq!((t.partition.as_str(), t.account.as_str()), ("long", ""));
    }
}
