//! Configuration: the embedded defaults, the user's TOML file and the environment
//! variables that TAO-style tooling already sets (SLURM_HOSTNAME, SLURM_USER, ...).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::launch::LaunchSpec;

pub mod commands;
pub mod template_files;

/// The example shipped with the project; a test proves it parses.
pub const EXAMPLE: &str = include_str!("../config.example.toml");

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Cluster used when `--cluster` is not given.
    pub default_cluster: Option<String>,
    /// Clusters the dashboard and `jobs` show together when `--cluster` is not given
    /// (`watch = ["a", "b"]`); empty: `default_cluster` alone.
    pub watch: Vec<String>,
    pub clusters: BTreeMap<String, ClusterConfig>,
    /// Key bindings: `[keys.global]`, `[keys.queue]`, `[keys.detail]`, `[keys.log]`.
    pub keys: crate::keymap::KeyConfig,
    pub ui: UiConfig,
    /// Defaults for launching jobs (`[launch]`): the form's and `submit`'s starting values.
    pub launch: LaunchSpec,
    /// Named launch presets (`[templates.NAME]`), each over `[launch]`.
    pub templates: BTreeMap<String, toml::Table>,
    /// `[triage]`: extra log patterns for failure classes.
    pub triage: crate::triage::TriageConfig,
    /// `[progress]`: how progress is read from the logs (built-in readers, own patterns).
    pub progress: crate::logview::progress::ProgressConfig,
    /// `[retry]`: automatic re-submission of launches that failed on infrastructure.
    pub retry: crate::retry::RetryPolicy,
    /// `[notify]`: bell and desktop notifications on job changes.
    pub notify: crate::notify::NotifyConfig,
    /// `[files]`: where the files view and `fetch` put what they copy.
    pub files: crate::jobfiles::FilesConfig,
    /// `[poll]`: how much the dashboard may ask of slurmctld.
    pub poll: PollConfig,
    /// `[[commands]]`: the user's own commands, each on a key.
    pub commands: Vec<commands::CommandDef>,
    /// The templates of `templates` that came from template files (name -> file): a file
    /// replaces the config's `[templates.NAME]` of the same name.
    #[serde(skip)]
    pub template_files: BTreeMap<String, PathBuf>,
    /// Template files that were left out, (name, what is wrong: the file and the key).
    #[serde(skip)]
    pub template_problems: Vec<(String, String)>,
}

/// `[poll]`: the dashboard's budget of slurmctld RPCs.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PollConfig {
    /// At most this many slurmctld RPCs a minute, averaged over any five minutes, for the
    /// refreshes and every read the dashboard plans (detail, pending insight, live samples,
    /// partitions); 0: no budget. `[clusters.X] max_rpcs_per_minute` overrides it.
    pub max_rpcs_per_minute: u32,
}

impl Default for PollConfig {
    fn default() -> Self {
        PollConfig {
            max_rpcs_per_minute: 4,
        }
    }
}

/// The largest budget accepted: beyond it a budget limits nothing (0 says so plainly).
pub const MAX_RPCS_PER_MINUTE: u32 = 6000;

impl Config {
    /// The slurmctld RPC budget of a cluster: its own setting, else `[poll]`'s (0: none).
    pub fn rpc_budget(&self, cluster: &ClusterConfig) -> u32 {
        cluster
            .max_rpcs_per_minute
            .unwrap_or(self.poll.max_rpcs_per_minute)
    }
}

impl Config {
    /// The starting values: `[launch]`, overlaid with `[templates.NAME]` when a template is
    /// named. Errors name the template and the bad key.
    pub fn launch_spec(&self, template: Option<&str>) -> Result<LaunchSpec, String> {
        let Some(name) = template else {
            return Ok(self.launch.clone());
        };
        let overlay = match self.templates.get(name) {
            Some(t) => t,
            None => {
                if let Some((_, why)) = self.template_problems.iter().find(|p| p.0 == name) {
                    return Err(why.clone());
                }
                let known: Vec<&str> = self.templates.keys().map(String::as_str).collect();
                return Err(format!(
                    "no template `{name}`; configured: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        };
        let mut spec = self.overlay(overlay)?;
        spec.template = Some(name.to_string());
        Ok(spec)
    }

    /// `[launch]` with `overlay`'s keys over it.
    fn overlay(&self, overlay: &toml::Table) -> Result<LaunchSpec, String> {
        let mut table = toml::Table::try_from(&self.launch).map_err(|e| e.to_string())?;
        for (k, v) in overlay {
            table.insert(k.clone(), v.clone());
        }
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string().trim().to_string())
    }

    /// Whether a template table makes a launch; the error names the first key that does
    /// not (serde's messages do not always say which).
    pub fn check_template(&self, t: &toml::Table) -> Result<(), (Option<String>, String)> {
        let Err(whole) = self.overlay(t) else {
            return Ok(());
        };
        for (k, v) in t {
            let one = toml::Table::from_iter([(k.clone(), v.clone())]);
            if let Err(e) = self.overlay(&one) {
                return Err((Some(k.clone()), e));
            }
        }
        Err((None, whole))
    }

    /// Adds the template files of `dir` to `templates` (a file wins over the config's
    /// template of the same name); bad files go to `template_problems`.
    pub fn add_template_files(&mut self, dir: &Path) {
        let (files, problems) = template_files::load(dir, |t| self.check_template(t));
        for f in files {
            self.templates.insert(f.name.clone(), f.table);
            self.template_files.insert(f.name, f.path);
        }
        self.template_problems = problems;
    }

    /// Where template `name` comes from, for the form: its file, or the config.
    pub fn template_origin(&self, name: &str) -> String {
        match self.template_files.get(name) {
            Some(p) => p.display().to_string(),
            None => format!("[templates.{name}] in the config"),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    /// Queue columns in order (default: id, name, partition, state, time, nodes, gpus,
    /// where, start, waited, submitted).
    pub columns: Option<Vec<crate::queue::Column>>,
    /// `D` cancels without asking; false makes `D` ask like `d`.
    pub quick_cancel: bool,
    /// Mark (`z`) running jobs whose GPUs showed 0 % in every live sample for this many
    /// minutes; 0 turns the mark off.
    pub idle_gpu_minutes: u64,
    /// Mark (`u`) running jobs whose cores busy stayed under this percent of their cores
    /// in every live sample for `idle_gpu_minutes`; 0 turns it off.
    pub low_cpu_percent: u64,
    /// ... or whose peak resident memory stayed under this percent of the memory they
    /// asked for over `idle_gpu_minutes` of samples; 0 turns it off.
    pub low_mem_percent: u64,
    /// At least this many seconds between two live samples of the selected running job
    /// (sstat costs slurmctld RPCs; the refresh can come every few seconds).
    pub live_sample_secs: u64,
    /// Keep a copy of the batch script of a job of the user's own that slurmdash did not
    /// launch when it is selected while slurmctld knows it (one `scontrol write batch_script` per job), so
    /// `L` can relaunch it from its script after it ended.
    pub keep_scripts: bool,
    /// The colours: `dark` (default), `light` (for a white background) or
    /// `high-contrast`. NO_COLOR still turns colour off whatever this says.
    pub theme: crate::theme::Palette,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            columns: None,
            quick_cancel: true,
            idle_gpu_minutes: 10,
            low_cpu_percent: 25,
            low_mem_percent: 25,
            live_sample_secs: 30,
            keep_scripts: true,
            theme: crate::theme::Palette::Dark,
        }
    }
}

crate::remote::with_login_fields! {
    #[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    pub struct ClusterConfig {
        /// Run Slurm commands on this machine instead of over SSH (slurmdash on the login node).
        pub local: bool = false,
        pub partition: Option<String> = None,
        pub account: Option<String> = None,
        pub results_root: Option<String> = None,
        pub poll_interval_secs: u64 = 5,
        pub connect_timeout_secs: u64 = 10,
        pub command_timeout_secs: u64 = 30,
        /// How long the cluster's SSH master stays open after the last slurmdash using it exits,
        /// for the next command to reuse; 0: it is closed when slurmdash exits.
        pub persist_secs: u64 = 600,
        /// Refuse every action that changes jobs (also `--read-only`).
        pub read_only: bool = false,
        /// The adaptive refresh never goes faster than this (a job starting, ending, changing)…
        pub poll_min_secs: u64 = 2,
        /// …nor slower than this (reached while the queue stays the same).
        pub poll_max_secs: u64 = 30,
        /// This cluster's slurmctld RPC budget, over `[poll] max_rpcs_per_minute`.
        pub max_rpcs_per_minute: Option<u32> = None,
    }
}

const HOUR_SECS: u64 = 3600;
const DAY_SECS: u64 = 86_400;

fn human_secs(secs: u64) -> &'static str {
    if secs == HOUR_SECS {
        "one hour"
    } else {
        "one day"
    }
}

impl ClusterConfig {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_secs(self.poll_interval_secs)
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }
    pub fn command_timeout(&self) -> Duration {
        Duration::from_secs(self.command_timeout_secs)
    }
    pub fn persist(&self) -> Duration {
        Duration::from_secs(self.persist_secs)
    }
    /// (usual, fastest, slowest) refresh intervals.
    pub fn poll_bounds(&self) -> (Duration, Duration, Duration) {
        (
            self.poll_interval(),
            Duration::from_secs(self.poll_min_secs),
            Duration::from_secs(self.poll_max_secs),
        )
    }
}

/// A cluster picked from the config, with environment overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub settings: ClusterConfig,
}

impl Cluster {
    /// Where launches go (`results_root`), or a sentence saying how to set it.
    pub fn results_root(&self) -> Result<String, String> {
        self.settings.results_root.clone().ok_or_else(|| {
            format!(
                "cluster `{}` has no results_root: set it in the config or export SLURM_BASE_RESULTS_DIR",
                self.name
            )
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("config file {path}: key `{key}`: {reason}")]
    Invalid {
        path: PathBuf,
        key: String,
        reason: String,
    },
    #[error(
        "no cluster configured: create {path} (see config.example.toml) or set SLURM_HOSTNAME=login1[,login2]"
    )]
    NoCluster { path: PathBuf },
    #[error("no cluster named `{name}` in {path}; known clusters: {known}")]
    UnknownCluster {
        name: String,
        path: PathBuf,
        known: String,
    },
}

/// The environment variables slurmdash reads, passed in explicitly so tests need not touch
/// the process environment.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    pub const NAMES: [&'static str; 6] = [
        "SLURM_USER",
        "SLURM_HOSTNAME",
        "SLURM_PARTITION",
        "SSH_KEY_PATH",
        "SLURM_ACCOUNT",
        "SLURM_BASE_RESULTS_DIR",
    ];

    pub fn from_process() -> Self {
        let vars = Self::NAMES
            .iter()
            .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
            .collect();
        Self { vars }
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let vars = pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self { vars }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// Where the config is read from when `--config` is not given:
/// `$XDG_CONFIG_HOME/slurmdash/config.toml` (or `~/.config/slurmdash/config.toml`).
pub fn default_path() -> PathBuf {
    directories::ProjectDirs::from("", "", "slurmdash")
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from("slurmdash.toml"))
}

/// A loaded config together with the file it came from (for messages).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub config: Config,
}

impl Loaded {
    /// The triage patterns the config adds to the built-in ones, or which one is bad.
    pub fn triage_patterns(&self) -> Result<crate::triage::Patterns, String> {
        crate::triage::Patterns::new(&self.config.triage).map_err(|e| {
            format!(
                "config file {}: {}: {}",
                self.path.display(),
                e.key,
                e.reason
            )
        })
    }

    /// Reads `explicit` (must exist) or the default path (may be absent).
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let (path, must_exist) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => (default_path(), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
                let mut config = Config::default();
                if let Some(dir) = template_files::dir() {
                    config.add_template_files(&dir);
                }
                return Ok(Self { path, config });
            }
            Err(e) => {
                return Err(ConfigError::Read {
                    path,
                    reason: e.to_string(),
                })
            }
        };
        let mut config = parse(&text, &path)?;
        config
            .retry
            .resolve_webhook(|n| std::env::var(n).ok())
            .map_err(|reason| ConfigError::Invalid {
                path: path.clone(),
                key: "retry.webhook_env".into(),
                reason,
            })?;
        if let Some(url) = &config.retry.webhook {
            crate::debug_log::add_secret(url);
        }
        if let Some(dir) = template_files::dir() {
            config.add_template_files(&dir);
        }
        Ok(Self { path, config })
    }

    /// The clusters to show: `--cluster a,b` (one or several names), else `watch`, else the
    /// one [`Self::cluster`] picks. Each is checked as `cluster` checks one.
    pub fn clusters(&self, names: Option<&str>, env: &Env) -> Result<Vec<Cluster>, ConfigError> {
        let names: Vec<String> = match names {
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
            None => self.config.watch.clone(),
        };
        if names.is_empty() {
            return Ok(vec![self.cluster(None, env)?]);
        }
        let mut out: Vec<Cluster> = Vec::new();
        for n in names {
            if !out.iter().any(|c| c.name == n) {
                out.push(self.cluster(Some(&n), env)?);
            }
        }
        Ok(out)
    }

    /// Picks the cluster (`--cluster`, else `default_cluster`, else the only one) and
    /// applies the environment overrides. With no config at all, SLURM_HOSTNAME alone
    /// defines a cluster named `default`.
    pub fn cluster(&self, name: Option<&str>, env: &Env) -> Result<Cluster, ConfigError> {
        let clusters = &self.config.clusters;
        let wanted = name
            .map(str::to_string)
            .or_else(|| self.config.default_cluster.clone());
        let (name, mut settings) = match wanted {
            Some(n) => match clusters.get(&n) {
                Some(c) => (n, c.clone()),
                None if clusters.is_empty() && env.get("SLURM_HOSTNAME").is_some() => {
                    (n, ClusterConfig::default())
                }
                None => {
                    return Err(ConfigError::UnknownCluster {
                        name: n,
                        path: self.path.clone(),
                        known: known_names(clusters),
                    })
                }
            },
            None => match clusters.iter().next() {
                Some((n, c)) if clusters.len() == 1 => (n.clone(), c.clone()),
                Some(_) => {
                    return Err(ConfigError::Invalid {
                        path: self.path.clone(),
                        key: "default_cluster".into(),
                        reason: format!(
                            "several clusters are configured ({}): set default_cluster or pass --cluster",
                            known_names(clusters)
                        ),
                    })
                }
                None => ("default".to_string(), ClusterConfig::default()),
            },
        };
        apply_env(&mut settings, env);
        for p in [
            &mut settings.key_path,
            &mut settings.ssh_config,
            &mut settings.control_path,
        ]
        .into_iter()
        .flatten()
        {
            *p = expand_tilde(p);
        }
        if settings.hosts.is_empty() && !settings.local {
            return Err(ConfigError::NoCluster {
                path: self.path.clone(),
            });
        }
        // SLURM_HOSTNAME comes after the file's check: the same rule for it.
        if let Some(h) = settings.hosts.iter().find(|h| h.starts_with('-')) {
            return Err(ConfigError::Invalid {
                path: self.path.clone(),
                key: "SLURM_HOSTNAME".into(),
                reason: format!("`{h}` starts with `-`, which ssh would read as an option, not a host: write the login host's name or ssh alias"),
            });
        }
        Ok(Cluster { name, settings })
    }
}

fn known_names(clusters: &BTreeMap<String, ClusterConfig>) -> String {
    if clusters.is_empty() {
        "none".into()
    } else {
        clusters.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

fn apply_env(c: &mut ClusterConfig, env: &Env) {
    if let Some(h) = env.get("SLURM_HOSTNAME") {
        c.hosts = split_hosts(h);
    }
    if let Some(u) = env.get("SLURM_USER") {
        c.user = Some(u.to_string());
    }
    if let Some(p) = env.get("SLURM_PARTITION") {
        c.partition = Some(p.to_string());
    }
    if let Some(a) = env.get("SLURM_ACCOUNT") {
        c.account = Some(a.to_string());
    }
    if let Some(k) = env.get("SSH_KEY_PATH") {
        c.key_path = Some(PathBuf::from(k));
    }
    if let Some(b) = env.get("SLURM_BASE_RESULTS_DIR") {
        c.results_root = Some(format!("{}/results", b.trim_end_matches('/')));
    }
}

/// `~/x` -> `$HOME/x`, as ssh does for IdentityFile.
pub fn expand_tilde(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}

fn split_hosts(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses and validates config text; errors name `path` and the offending key.
pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        reason: e.to_string().trim_end().to_string(),
    })?;
    let mut config = config;
    let base = path.parent().unwrap_or(Path::new("."));
    for (name, table) in config.templates.iter_mut() {
        if let Err(reason) = crate::launch::sweep::read_file_runs(table, base) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: format!("templates.{name}.sweep.file"),
                reason,
            });
        }
    }
    validate(&config, path)?;
    Ok(config)
}

fn validate(config: &Config, path: &Path) -> Result<(), ConfigError> {
    let invalid = |key: String, reason: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        reason: reason.to_string(),
    };
    if let Some(d) = &config.default_cluster {
        if !config.clusters.contains_key(d) {
            return Err(invalid(
                "default_cluster".into(),
                &format!(
                    "names `{d}`, which is not a [clusters.*] table (known: {})",
                    known_names(&config.clusters)
                ),
            ));
        }
    }
    if let Some(w) = config
        .watch
        .iter()
        .find(|w| !config.clusters.contains_key(*w))
    {
        return Err(invalid(
            "watch".into(),
            &format!(
                "names `{w}`, which is not a [clusters.*] table (known: {})",
                known_names(&config.clusters)
            ),
        ));
    }
    if config.ui.columns.as_ref().is_some_and(Vec::is_empty) {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            key: "ui.columns".into(),
            reason: "must name at least one column".into(),
        });
    }
    let keymap = match crate::keymap::Keymap::with_overrides(&config.keys) {
        Ok(k) => k,
        Err(e) => {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "keys".into(),
                reason: e,
            })
        }
    };
    if let Err(p) = commands::check(&config.commands, &keymap) {
        return Err(invalid(p.key, &p.reason));
    }
    for name in config.templates.keys() {
        if let Err(e) = config.launch_spec(Some(name)) {
            return Err(invalid(format!("templates.{name}"), &e));
        }
    }
    if let Err(e) = crate::triage::Patterns::new(&config.triage) {
        return Err(invalid(e.key, &e.reason));
    }
    if let Err(e) = crate::logview::progress::Patterns::new(&config.progress) {
        return Err(invalid(e.key, &e.reason));
    }
    let budget = |key: String, v: u32| {
        if v > MAX_RPCS_PER_MINUTE {
            return Err(invalid(
                key,
                &format!(
                    "must be at most {MAX_RPCS_PER_MINUTE} slurmctld RPCs a minute, not {v} (0 turns the budget off)"
                ),
            ));
        }
        Ok(())
    };
    budget(
        "poll.max_rpcs_per_minute".into(),
        config.poll.max_rpcs_per_minute,
    )?;
    for (name, c) in &config.clusters {
        let key = |k: &str| format!("clusters.{name}.{k}");
        if let Some(v) = c.max_rpcs_per_minute {
            budget(key("max_rpcs_per_minute"), v)?;
        }
        if c.hosts.is_empty() && !c.local {
            return Err(invalid(
                key("hosts"),
                "must list at least one login host (or set local = true)",
            ));
        }
        if let Some(h) = c
            .hosts
            .iter()
            .find(|h| h.trim().is_empty() || h.contains(' '))
        {
            return Err(invalid(
                key("hosts"),
                &format!("`{h}` is not a host name or ssh alias"),
            ));
        }
        if let Some(h) = c.hosts.iter().find(|h| h.trim_start().starts_with('-')) {
            return Err(invalid(
                key("hosts"),
                &format!("`{h}` starts with `-`, which ssh would read as an option, not a host: write the login host's name or ssh alias"),
            ));
        }
        // Durations in seconds, each between 1 and a bound that keeps every sum and product
        // made from them far from overflow.
        for (name, value, max) in [
            ("poll_interval_secs", c.poll_interval_secs, DAY_SECS),
            ("poll_min_secs", c.poll_min_secs, DAY_SECS),
            ("poll_max_secs", c.poll_max_secs, DAY_SECS),
            ("connect_timeout_secs", c.connect_timeout_secs, HOUR_SECS),
            ("command_timeout_secs", c.command_timeout_secs, DAY_SECS),
        ] {
            if value == 0 {
                return Err(invalid(key(name), "must be at least 1"));
            }
            if value > max {
                return Err(invalid(
                    key(name),
                    &format!("must be at most {max} ({}), not {value}", human_secs(max)),
                ));
            }
        }
        // 0 is meaningful here: the master closes with slurmdash.
        if c.persist_secs > DAY_SECS {
            return Err(invalid(
                key("persist_secs"),
                &format!(
                    "must be at most {DAY_SECS} ({}), not {}",
                    human_secs(DAY_SECS),
                    c.persist_secs
                ),
            ));
        }
        if c.poll_max_secs < c.poll_min_secs {
            return Err(invalid(
                key("poll_max_secs"),
                "must be at least poll_min_secs",
            ));
        }
        if let Some(r) = &c.results_root {
            if !r.starts_with('/') {
                return Err(invalid(
                    key("results_root"),
                    "must be an absolute path on the cluster",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> PathBuf {
        PathBuf::from("/home/u/.config/slurmdash/config.toml")
    }

    #[test]
    fn a_webhook_variable_the_config_names_must_be_set() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("c.toml");
        std::fs::write(
            &p,
            "[clusters.a]\nhosts = [\"h\"]\n[retry]\nwebhook_env = \"SLURMDASH_TEST_UNSET_HOOK_4711\"\n",
        )
        .expect("write");
        let e = Loaded::load(Some(&p)).expect_err("unset variable");
        let msg = e.to_string();
        assert!(
            msg.contains("retry.webhook_env") && msg.contains("SLURMDASH_TEST_UNSET_HOOK_4711"),
            "{msg}"
        );
        // The shipped example names a variable only in a comment.
        let example = parse(EXAMPLE, Path::new("config.example.toml")).expect("example");
        assert_eq!(example.retry.webhook_env, None);
    }

    #[test]
    fn shipped_example_parses_and_has_a_usable_default_cluster() {
        let cfg = parse(EXAMPLE, Path::new("config.example.toml")).expect("example parses");
        let loaded = Loaded {
            path: p(),
            config: cfg,
        };
        let c = loaded
            .cluster(None, &Env::default())
            .expect("default cluster");
        assert!(!c.settings.hosts.is_empty());
    }

    #[test]
    fn persist_secs_defaults_to_ten_minutes_and_zero_is_allowed() {
        let cfg = parse("[clusters.a]\nhosts=['h']\n", &p()).expect("parses");
        assert_eq!(cfg.clusters["a"].persist(), Duration::from_secs(600));
        let cfg = parse("[clusters.a]\nhosts=['h']\npersist_secs = 0\n", &p()).expect("parses");
        assert_eq!(cfg.clusters["a"].persist_secs, 0);
        let example = parse(EXAMPLE, Path::new("config.example.toml")).expect("example parses");
        assert_eq!(example.clusters["polar"].persist_secs, 600);
    }

    #[test]
    fn unknown_key_names_the_file_and_the_key() {
        let err = parse("[clusters.a]\nhosts=['x']\nhostz = 1\n", &p()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("config.toml"), "{msg}");
        assert!(msg.contains("hostz"), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let err = parse("[clusters.a]\nhosts = 'login1'\n", &p()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("hosts") && msg.contains("expected"), "{msg}");
    }

    #[test]
    fn semantic_errors_name_the_dotted_key() {
        let err = parse("[clusters.a]\nhosts = []\n", &p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config file /home/u/.config/slurmdash/config.toml: key `clusters.a.hosts`: must list at least one login host (or set local = true)"
        );
        let err = parse("[clusters.a]\nhosts=['h']\npoll_interval_secs = 0\n", &p()).unwrap_err();
        assert!(err.to_string().contains("clusters.a.poll_interval_secs"));
        let err = parse("default_cluster='b'\n[clusters.a]\nhosts=['h']\n", &p()).unwrap_err();
        assert!(err.to_string().contains("`default_cluster`"));
        let err = parse("[clusters.a]\nhosts=['h']\nresults_root='results'\n", &p()).unwrap_err();
        assert!(err.to_string().contains("clusters.a.results_root"));
        let err = parse("[clusters.a]\nhosts=['h']\npersist_secs = 90000\n", &p()).unwrap_err();
        assert!(
            err.to_string()
                .contains("key `clusters.a.persist_secs`: must be at most 86400"),
            "{err}"
        );
        let err = parse("[clusters.a]\nhosts=['h']\npersist_secs = -1\n", &p()).unwrap_err();
        assert!(err.to_string().contains("persist_secs"), "{err}");
        let err = parse(
            "[clusters.a]\nhosts=['login1', '-oProxyCommand=sh']\n",
            &p(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("key `clusters.a.hosts`: `-oProxyCommand=sh` starts with `-`, which ssh would read as an option"),
            "{err}"
        );
    }

    #[test]
    fn the_rpc_budget_defaults_to_four_a_cluster_may_set_its_own_and_bad_ones_are_named() {
        let cfg = parse("[clusters.a]\nhosts=['h']\n", &p()).expect("parses");
        assert_eq!(cfg.rpc_budget(&cfg.clusters["a"]), 4);
        let cfg = parse(
            "[poll]\nmax_rpcs_per_minute = 0\n[clusters.a]\nhosts=['h']\n[clusters.b]\nhosts=['h']\nmax_rpcs_per_minute = 10\n",
            &p(),
        )
        .expect("parses");
        assert_eq!(cfg.rpc_budget(&cfg.clusters["a"]), 0, "0: no budget");
        assert_eq!(cfg.rpc_budget(&cfg.clusters["b"]), 10);
        let err = parse("[poll]\nmax_rpcs_per_minute = 100000\n", &p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config file /home/u/.config/slurmdash/config.toml: key `poll.max_rpcs_per_minute`: must be at most 6000 slurmctld RPCs a minute, not 100000 (0 turns the budget off)"
        );
        let err = parse(
            "[clusters.a]\nhosts=['h']\nmax_rpcs_per_minute = 7000\n",
            &p(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("key `clusters.a.max_rpcs_per_minute`: must be at most 6000"),
            "{err}"
        );
        let err = parse("[poll]\nmax_rpcs_per_minute = -1\n", &p()).unwrap_err();
        assert!(err.to_string().contains("max_rpcs_per_minute"), "{err}");
        let err = parse("[poll]\nmax_rpc_per_minute = 4\n", &p()).unwrap_err();
        assert!(err.to_string().contains("max_rpc_per_minute"), "{err}");
        let example = parse(EXAMPLE, Path::new("config.example.toml")).expect("example");
        assert_eq!(example.poll.max_rpcs_per_minute, 4);
    }

    #[test]
    fn columns_and_keys_are_checked_at_load() {
        let cfg = parse("[ui]\ncolumns = [\"id\", \"gpus\"]\n", &p()).expect("valid");
        assert_eq!(cfg.ui.columns.map(|c| c.len()), Some(2));
        let err = parse("[ui]\ncolumns = [\"id\", \"bogus\"]\n", &p()).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        let err = parse("[ui]\ncolumns = []\n", &p()).unwrap_err();
        assert!(err.to_string().contains("ui.columns"), "{err}");
        let err = parse("[keys.queue]\n\"hyper-x\" = \"quit\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("keys.queue"), "{err}");
    }

    #[test]
    fn env_overrides_apply_to_the_selected_cluster() {
        let cfg = parse(
            "default_cluster='a'\n[clusters.a]\nhosts=['h1']\nuser='me'\n[clusters.b]\nhosts=['h2']\n",
            &p(),
        )
        .expect("parses");
        let loaded = Loaded {
            path: p(),
            config: cfg,
        };
        let env = Env::from_pairs([
            ("SLURM_HOSTNAME", "login1, login2"),
            ("SLURM_USER", "alice"),
            ("SLURM_PARTITION", "polar"),
            ("SLURM_ACCOUNT", "vision"),
            ("SSH_KEY_PATH", "/k/id"),
            ("SLURM_BASE_RESULTS_DIR", "/lustre/fsw/alice/"),
        ]);
        let c = loaded.cluster(None, &env).expect("cluster");
        assert_eq!(c.name, "a");
        assert_eq!(c.settings.hosts, vec!["login1", "login2"]);
        let bad = Env::from_pairs([("SLURM_HOSTNAME", "login1,-oProxyCommand=sh")]);
        let err = loaded.cluster(None, &bad).unwrap_err().to_string();
        assert!(
            err.contains("SLURM_HOSTNAME") && err.contains("`-oProxyCommand=sh` starts with `-`"),
            "{err}"
        );
        assert_eq!(c.settings.user.as_deref(), Some("alice"));
        assert_eq!(c.settings.partition.as_deref(), Some("polar"));
        assert_eq!(c.settings.account.as_deref(), Some("vision"));
        assert_eq!(c.settings.key_path, Some(PathBuf::from("/k/id")));
        assert_eq!(
            c.settings.results_root.as_deref(),
            Some("/lustre/fsw/alice/results")
        );
        let b = loaded.cluster(Some("b"), &Env::default()).expect("b");
        assert_eq!(b.settings.hosts, vec!["h2"]);
    }

    #[test]
    fn environment_alone_defines_a_cluster() {
        let loaded = Loaded {
            path: p(),
            config: Config::default(),
        };
        let c = loaded
            .cluster(None, &Env::from_pairs([("SLURM_HOSTNAME", "login1")]))
            .expect("cluster from env");
        assert_eq!(c.name, "default");
        assert_eq!(c.settings.hosts, vec!["login1"]);
        let err = loaded.cluster(None, &Env::default()).unwrap_err();
        assert!(err.to_string().contains("SLURM_HOSTNAME"), "{err}");
    }

    #[test]
    fn unknown_and_ambiguous_clusters_are_explained() {
        let cfg = parse(
            "[clusters.a]\nhosts=['h']\n[clusters.b]\nhosts=['h']\n",
            &p(),
        )
        .expect("parses");
        let loaded = Loaded {
            path: p(),
            config: cfg,
        };
        let err = loaded.cluster(Some("c"), &Env::default()).unwrap_err();
        assert!(err.to_string().contains("known clusters: a, b"), "{err}");
        let err = loaded.cluster(None, &Env::default()).unwrap_err();
        assert!(err.to_string().contains("--cluster"), "{err}");
    }

    #[test]
    fn missing_default_file_is_empty_but_missing_explicit_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope.toml");
        let err = Loaded::load(Some(&missing)).unwrap_err();
        assert!(err.to_string().contains("nope.toml"), "{err}");
    }

    #[test]
    fn progress_patterns_are_checked_at_load_naming_their_key() {
        let cfg = parse(EXAMPLE, &p()).expect("example parses");
        let pats = crate::logview::progress::Patterns::new(&cfg.progress).expect("compile");
        assert!(pats.latest(b"42/100 images done").is_some());
        let err = parse("[progress]\npatterns = [\"(?P<done>\\\\d+)\"]\n", &p()).unwrap_err();
        assert!(
            err.to_string().contains("key `progress.patterns[0]`"),
            "{err}"
        );
        let err = parse("[progress]\nbuiltins = [\"tqdm\", \"pct\"]\n", &p()).unwrap_err();
        assert!(err.to_string().contains("progress.builtins"), "{err}");
    }

    #[test]
    fn triage_patterns_extend_the_builtins_and_bad_ones_name_their_key() {
        let cfg = parse(EXAMPLE, Path::new("config.example.toml")).expect("example parses");
        let pats = crate::triage::Patterns::new(&cfg.triage).expect("example patterns compile");
        assert!(pats
            .infra
            .last_match("LustreError: Lustre: scratch has evicted us")
            .is_some());
        assert_eq!(cfg.notify.desktop, crate::notify::Desktop::Auto);
        assert!(!cfg.notify.bell);
        let err = parse("[notify]\ndesktop = \"smoke\"\n", &p()).unwrap_err();
        assert!(err.to_string().contains("desktop"), "{err}");
        let err = parse("[triage]\noom_patterns = [\"ok\", \"(unclosed\"]\n", &p()).unwrap_err();
        assert!(
            err.to_string().contains("key `triage.oom_patterns[1]`"),
            "{err}"
        );
    }

    #[test]
    fn shipped_example_has_tao_defaults_and_a_template() {
        let cfg = parse(EXAMPLE, std::path::Path::new("x")).unwrap();
        assert_eq!(cfg.launch, LaunchSpec::default());
        let t = cfg.launch_spec(Some("train-8gpu")).unwrap();
        assert_eq!((t.gpus, t.time.as_str()), (8, "4h"));
        assert!(t.image.starts_with("nvcr.io/"));
    }

    #[test]
    fn template_files_load_beside_the_config_and_a_file_wins_its_name() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join("a.toml"), "gpus = 2\ncommand = \"echo a\"\n").expect("w");
        std::fs::write(d.path().join("b.toml"), "gpus = \"two\"\n").expect("w");
        let mut cfg = parse(
            "[launch]\ntime = \"1h\"\n[templates.a]\ngpus = 8\n[templates.c]\ngpus = 1\n",
            &p(),
        )
        .expect("parses");
        cfg.add_template_files(d.path());
        let a = cfg.launch_spec(Some("a")).expect("a");
        assert_eq!(
            (a.gpus, a.time.as_str(), a.command.as_str()),
            (2, "1h", "echo a")
        );
        assert_eq!(
            cfg.template_origin("a"),
            d.path().join("a.toml").display().to_string()
        );
        assert_eq!(cfg.template_origin("c"), "[templates.c] in the config");
        assert_eq!(cfg.launch_spec(Some("c")).expect("c").gpus, 1);
        // The bad file is named with its key, for the form and for submit --template.
        let e = cfg.launch_spec(Some("b")).unwrap_err();
        assert!(e.contains("b.toml") && e.contains("key `gpus`"), "{e}");
        assert_eq!(cfg.template_problems.len(), 1);
    }

    #[test]
    fn templates_overlay_launch_defaults() {
        let text = "[launch]\ncpus_per_task = 8\ntime = \"2h\"\n[templates.train-8gpu]\ngpus = 8\nimage = \"nvcr.io/nvidia/pytorch:24.01-py3\"\n";
        let cfg = parse(text, std::path::Path::new("c.toml")).unwrap();
        let s = cfg.launch_spec(Some("train-8gpu")).unwrap();
        assert_eq!((s.gpus, s.cpus_per_task, s.time.as_str()), (8, 8, "2h"));
        assert_eq!(s.template.as_deref(), Some("train-8gpu"));
        assert!(cfg
            .launch_spec(Some("nope"))
            .unwrap_err()
            .contains("configured: train-8gpu"));
        let bad = "[templates.x]\ngpu = 8\n";
        let e = parse(bad, std::path::Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("templates.x") && e.contains("gpu"), "{e}");
    }
}
