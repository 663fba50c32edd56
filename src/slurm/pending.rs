//! Everything about a pending job that the queue poll does not carry: its rank among the
//! partition's pending jobs, its priority factors, fair-share, limit headroom and the
//! partitions that could run it. One batched remote command reads it for every pending job
//! of one user at once ([`Ask`]); the answer ([`Batch`]) is kept, and each job's view of it
//! ([`Batch::info_for`]) is worked out on the laptop, so moving the selection reads nothing.

use std::collections::{HashMap, HashSet};

use super::command::{self, SPRIO_FIELDS};
use super::error::ParseError;
use super::jobid::JobId;
use super::limits::{self, AssocMgr, Headroom, Limit, Request};
use super::model::{Job, Partition, SprioRow, SshareRow};
use super::parse::{parse_scontrol_partitions, parse_sprio, parse_sshare};

/// What one read asks about: the pending jobs of `user`, by their partitions, accounts
/// and QOS.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ask {
    pub user: String,
    /// Each partition once, sorted (a job's `p1,p2` counts for both).
    pub partitions: Vec<String>,
    pub accounts: Vec<String>,
    pub qos: Vec<String>,
    /// Read the partitions' limits too (`scontrol show partition`): static facts, read
    /// once a session and again now and then.
    pub with_partitions: bool,
}

fn sorted(set: HashSet<&str>) -> Vec<String> {
    let mut v: Vec<String> = set
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

impl Ask {
    /// The read for `user`'s pending jobs among `jobs` (any other job is left out); `None`
    /// when there is none.
    pub fn of<'a>(
        user: &str,
        jobs: impl IntoIterator<Item = &'a Job>,
        with_partitions: bool,
    ) -> Option<Ask> {
        let (mut parts, mut accts, mut qos) = (HashSet::new(), HashSet::new(), HashSet::new());
        let mut any = false;
        for j in jobs {
            if j.user.as_str() != user || j.status() != super::model::Status::Pending {
                continue;
            }
            any = true;
            parts.extend(j.partition.as_str().split(','));
            accts.insert(j.account.as_str());
            qos.insert(j.qos.as_str());
        }
        any.then(|| Ask {
            user: user.to_string(),
            partitions: sorted(parts),
            accounts: sorted(accts),
            qos: sorted(qos),
            with_partitions,
        })
    }

    /// Whether this read covers `job` (its user, every partition, account and QOS).
    pub fn covers(&self, job: &Job) -> bool {
        let has = |v: &[String], s: &str| v.iter().any(|x| x == s);
        job.user.as_str() == self.user
            && job
                .partition
                .as_str()
                .split(',')
                .all(|p| has(&self.partitions, p))
            && has(&self.accounts, job.account.as_str())
            && has(&self.qos, job.qos.as_str())
    }
}

/// How often slurmctld works its pending jobs' priorities out again
/// (`PriorityCalcPeriod` in `scontrol show config`, `00:05:00` by default): sprio's
/// figures do not move in between. `None` when the line is missing or not a duration.
pub fn priority_calc_period(show_config: &str) -> Option<std::time::Duration> {
    show_config.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        if k.trim() != "PriorityCalcPeriod" {
            return None;
        }
        super::time::SlurmDuration::parse(v.trim()).ok()?.known()
    })
}

/// The commands of one read, in section order (see [`parse`]):
/// - `sprio` of every pending job in the partitions, everyone's: the ranks, and the user's
///   own jobs' factors (held jobs have no priority and are not listed);
/// - `sshare` of the user in its accounts; slurmctld's accounting cache for the user, its
///   accounts and QOS (`scontrol show assoc_mgr`: limits with usage beside each);
/// - with [`Ask::with_partitions`], `scontrol show partition`.
///
/// 3 slurmctld RPCs, 4 with the partitions, whatever the number of jobs.
pub fn commands(ask: &Ask) -> Vec<Vec<String>> {
    let list = |v: &[String]| v.join(",");
    let mut cmds = vec![
        vec![
            "sprio".to_string(),
            "--noheader".into(),
            format!("--partition={}", list(&ask.partitions)),
            format!("--format={}", command::percent_format(SPRIO_FIELDS)),
        ],
        vec![
            "sshare".into(),
            "--noheader".into(),
            "--parsable2".into(),
            format!("--accounts={}", list(&ask.accounts)),
            format!("--users={}", ask.user),
            format!("--format={}", command::SSHARE_FIELDS.join(",")),
        ],
        limits::scontrol_assoc_mgr(&ask.user, &list(&ask.accounts), &list(&ask.qos)),
    ];
    if ask.with_partitions {
        cmds.push(command::scontrol_show_partition());
    }
    cmds
}

/// "7th of 42 in polar": 1-based position by priority; equal priorities go in submission
/// (job id) order, as the scheduler takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    pub position: usize,
    pub of: usize,
    pub partition: String,
    /// Pending jobs with strictly higher priority.
    pub ahead: usize,
}

/// The rank of `id` (asked as `target` where sprio lists it so) among the pending jobs of
/// `partitions` (`p1,p2`: its highest priority in any of them against theirs).
pub fn rank(id: &JobId, target: &JobId, partitions: &str, rows: &[SprioRow]) -> Option<Rank> {
    let parts: HashSet<&str> = partitions.split(',').collect();
    let mut best: HashMap<&JobId, u64> = HashMap::new();
    for r in rows.iter().filter(|r| parts.contains(r.partition.as_str())) {
        let p = best.entry(&r.id).or_insert(r.priority);
        *p = (*p).max(r.priority);
    }
    let (mine_id, mine) = [id, target]
        .into_iter()
        .find_map(|k| best.get_key_value(k).map(|(k, p)| (*k, *p)))?;
    let key = |i: &JobId| (i.base(), i.as_str().to_string());
    let ahead = best.values().filter(|p| **p > mine).count();
    let ties_before = best
        .iter()
        .filter(|(i, p)| **p == mine && key(i) < key(mine_id))
        .count();
    Some(Rank {
        position: ahead + ties_before + 1,
        of: best.len(),
        partition: partitions.to_string(),
        ahead,
    })
}

pub fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl Rank {
    pub fn text(&self) -> String {
        format!(
            "{} of {} in {}",
            ordinal(self.position),
            self.of,
            self.partition
        )
    }
}

/// The sprio factors by name, largest first.
pub fn factors(row: &SprioRow) -> Vec<(&'static str, f64)> {
    let mut v = vec![
        ("age", row.age),
        ("fair-share", row.fairshare),
        ("job size", row.job_size),
        ("partition", row.partition_factor),
        ("QOS", row.qos),
    ];
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// One pending job's view of a [`Batch`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PendingInfo {
    pub id: Option<JobId>,
    /// The id sprio lists the job by, when it is not `id`: a folded array (`3_[2-20]`) is
    /// listed by the array's own id (`3`).
    pub asked_as: Option<JobId>,
    pub rank: Option<Rank>,
    /// The job's own sprio rows (one per partition).
    pub sprio: Vec<SprioRow>,
    /// The account's row and the user's row.
    pub sshare: Vec<SshareRow>,
    pub limits: Vec<Limit>,
    pub headroom: Vec<Headroom>,
    /// Whether slurmctld counts usage against limits (see [`limits::Selected::counted`]).
    pub limits_counted: Option<bool>,
    pub partitions: Vec<Partition>,
    /// Sections that failed, each naming its command.
    pub problems: Vec<String>,
}

impl PendingInfo {
    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The headroom line of the limit `reason` names (`QOSMaxGRESPerUser`, ...): the job's
    /// current reason, which may have changed since this was fetched. Only from slurmctld's
    /// counts: without them no limit is enforced to wait for.
    pub fn limit_hit(&self, reason: Option<&str>) -> Option<&Headroom> {
        if self.limits_counted == Some(false) {
            return None;
        }
        let i = limits::blocking(reason?, &self.headroom)?;
        self.headroom.get(i)
    }
}

/// One read's answer for every pending job of its user.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub user: String,
    /// Every pending job's rows in the partitions asked about, everyone's.
    pub sprio: Vec<SprioRow>,
    pub sshare: Vec<SshareRow>,
    pub assoc: Option<AssocMgr>,
    /// The partitions' limits; empty when they were not asked for (see
    /// [`Ask::with_partitions`]).
    pub partitions: Vec<Partition>,
    /// Sections that failed, each naming its command.
    pub problems: Vec<String>,
}

/// Puts the sections of one read together. A failed section becomes a problem sentence;
/// the rest still shows.
pub fn parse(ask: &Ask, sections: &[super::batch::Section]) -> Batch {
    let mut b = Batch {
        user: ask.user.clone(),
        ..Batch::default()
    };
    let names = [
        "sprio",
        "sshare",
        "scontrol show assoc_mgr",
        "scontrol show partition",
    ];
    let wanted = if ask.with_partitions { 4 } else { 3 };
    let mut outs: Vec<Option<&str>> = Vec::new();
    for (i, name) in names.iter().enumerate().take(wanted) {
        match sections.get(i) {
            Some(s) if s.success() => outs.push(Some(s.stdout.as_str())),
            Some(s) => {
                b.problems.push(format!(
                    "{name} failed: {}",
                    s.stderr.trim().lines().next().unwrap_or("no message")
                ));
                outs.push(None);
            }
            None => {
                b.problems.push(format!("{name}: no answer"));
                outs.push(None);
            }
        }
    }
    let out = |i: usize| outs.get(i).copied().flatten();
    let mut bad = |what: &str, e: ParseError| b.problems.push(format!("{what}: {e}"));
    // sprio says this on stdout (exit 0) when no job matches, e.g. all held.
    if let Some(o) = out(0).filter(|o| !o.trim_start().starts_with("Unable to find jobs")) {
        match parse_sprio(o) {
            Ok(r) => b.sprio = r,
            Err(e) => bad("sprio", e),
        }
    }
    if let Some(o) = out(1) {
        match parse_sshare(o) {
            Ok(r) => b.sshare = r,
            Err(e) => bad("sshare", e),
        }
    }
    if let Some(o) = out(2) {
        match limits::parse_assoc_mgr(o) {
            Ok(m) => b.assoc = Some(m),
            Err(e) => bad("scontrol show assoc_mgr", e),
        }
    }
    if let Some(o) = out(3) {
        match parse_scontrol_partitions(o) {
            Ok(p) => b.partitions = p,
            Err(e) => bad("scontrol show partition", e),
        }
    }
    b
}

impl Batch {
    /// What the batch says of `job`.
    pub fn info_for(&self, job: &Job) -> PendingInfo {
        let target = job.id.per_job_target();
        let mine = |r: &&SprioRow| r.id == job.id || r.id == target;
        let sel = self
            .assoc
            .as_ref()
            .map(|m| {
                limits::select(
                    m,
                    job.user.as_str(),
                    job.account.as_str(),
                    job.partition.as_str(),
                    job.qos.as_str(),
                )
            })
            .unwrap_or_default();
        let req = Request {
            cpus: u64::from(job.cpus),
            gpus: u64::from(job.gpus()),
            nodes: u64::from(job.nodes),
            minutes: job.time_limit.known().map_or(0, |d| d.as_secs() / 60),
        };
        PendingInfo {
            id: Some(job.id.clone()),
            asked_as: (target != job.id).then(|| target.clone()),
            rank: rank(&job.id, &target, job.partition.as_str(), &self.sprio),
            sprio: self.sprio.iter().filter(mine).cloned().collect(),
            sshare: self
                .sshare
                .iter()
                .filter(|s| {
                    s.account == job.account.as_str()
                        && s.user.as_deref().is_none_or(|u| u == job.user.as_str())
                })
                .cloned()
                .collect(),
            headroom: limits::headroom(&sel, &req),
            limits_counted: sel.counted,
            limits: sel.limits,
            partitions: self.partitions.clone(),
            problems: self.problems.clone(),
        }
    }

    /// Every job id the batch holds, to label with its cluster.
    pub fn ids_mut(&mut self) -> impl Iterator<Item = &mut JobId> {
        self.sprio.iter_mut().map(|r| &mut r.id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(id: &str, part: &str, prio: u64) -> SprioRow {
        SprioRow {
            id: id.parse().unwrap(),
            partition: part.into(),
            user: "u".into(),
            priority: prio,
            age: 0.0,
            fairshare: 0.0,
            job_size: 0.0,
            partition_factor: 0.0,
            qos: 0.0,
            nice: 0,
            tres: String::new(),
        }
    }

    #[test]
    fn rank_counts_higher_priority_and_earlier_ties_in_the_jobs_partitions() {
        let v = vec![
            row("3", "polar", 500),
            row("2", "polar", 900),
            row("1", "polar", 500),
            row("4", "polar", 100),
            // Another partition's jobs do not count...
            row("5", "short", 9000),
            // ... but a job pending in both does, at its best priority.
            row("6", "short", 950),
            row("6", "polar", 10),
        ];
        let id: JobId = "3".parse().unwrap();
        let r = rank(&id, &id, "polar", &v).unwrap();
        assert_eq!((r.position, r.of, r.ahead), (3, 5, 1));
        assert_eq!(r.text(), "3rd of 5 in polar");
        let two: JobId = "2".parse().unwrap();
        assert_eq!(rank(&two, &two, "polar", &v).unwrap().position, 1);
        let nine: JobId = "9".parse().unwrap();
        assert!(rank(&nine, &nine, "polar", &v).is_none());
        // A job pending in two partitions competes with both.
        let r = rank(&id, &id, "polar,short", &v).unwrap();
        assert_eq!((r.position, r.of, r.ahead), (5, 6, 3));
        // A folded array is listed by its own id.
        let folded: JobId = "3_[2-20]".parse().unwrap();
        assert_eq!(rank(&folded, &id, "polar", &v).unwrap().position, 3);
        assert_eq!(ordinal(7), "7th");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fixture_tests {
    use super::*;
    use crate::slurm::batch::Section;
    use crate::slurm::parse::parse_squeue;

    fn ok(s: &str) -> Section {
        Section {
            stdout: s.to_string(),
            stderr: String::new(),
            code: Some(0),
        }
    }

    fn f(n: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/slurm/{n}.out",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// The sections of one read, from fixtures captured on the dev cluster.
    pub(crate) fn sections() -> Vec<Section> {
        vec![
            ok(&f("sprio")),
            ok(&f("sshare_acct_user")),
            ok(&f("22.05/scontrol_assoc_mgr")),
            ok(&f("scontrol_partition")),
        ]
    }

    fn jobs() -> Vec<Job> {
        parse_squeue(include_str!("../../tests/fixtures/slurm/squeue_me.out")).unwrap()
    }

    #[test]
    fn one_read_covers_every_pending_job_of_the_user_and_nothing_else() {
        let jobs = jobs();
        let ask = Ask::of("sduser", &jobs, true).unwrap();
        let pending: Vec<&Job> = jobs
            .iter()
            .filter(|j| j.status() == crate::slurm::model::Status::Pending)
            .collect();
        assert!(pending.len() >= 2, "the capture has pending jobs");
        assert!(pending.iter().all(|j| ask.covers(j)));
        assert!(Ask::of("nobody", &jobs, true).is_none());
        let cmds = commands(&ask);
        assert_eq!(cmds.len(), 4);
        assert_eq!(cmds[0][0], "sprio");
        assert!(cmds[0].contains(&format!("--partition={}", ask.partitions.join(","))));
        assert!(
            !cmds[0]
                .iter()
                .any(|a| a.starts_with("--jobs") || a.starts_with("--user")),
            "everyone's jobs: the rank"
        );
        assert!(cmds[1].contains(&"--users=sduser".to_string()));
        let without = Ask {
            with_partitions: false,
            ..ask
        };
        assert_eq!(commands(&without).len(), 3);
    }

    #[test]
    fn parse_of_a_real_read() {
        let mut job = jobs().into_iter().find(|j| j.id.as_str() == "248").unwrap();
        job.id = "249".parse().unwrap();
        let ask = Ask::of("sduser", [&job], true).unwrap();
        let b = parse(&ask, &sections());
        assert!(b.problems.is_empty(), "{:?}", b.problems);
        let info = b.info_for(&job);
        // The capture's sprio: 242 and 249 at 40310, 247 and 248 at 42500, 250 at 40310.
        assert_eq!(info.rank.clone().unwrap().text(), "4th of 5 in short");
        assert_eq!(info.sprio.len(), 1, "the job's own row");
        assert_eq!(info.sshare.len(), 2);
        assert_eq!(info.partitions.len(), 3);
        let mut s = sections();
        s[0] = Section {
            stdout: String::new(),
            stderr: "sprio: error: You are not running a supported priority plugin\n".into(),
            code: Some(1),
        };
        let info = parse(&ask, &s).info_for(&job);
        assert_eq!(
            info.problems,
            ["sprio failed: sprio: error: You are not running a supported priority plugin"]
        );
        assert!(info.rank.is_none());
        assert_eq!(info.sshare.len(), 2, "the rest still shows");
        s[0] = ok("Unable to find jobs matching user/id(s) specified\n");
        let info = parse(&ask, &s).info_for(&job);
        assert!(info.problems.is_empty() && info.sprio.is_empty());
        // Without the partitions asked for, their section is not expected.
        let no_parts = Ask {
            with_partitions: false,
            ..ask
        };
        let b = parse(&no_parts, &sections()[..3]);
        assert!(b.problems.is_empty() && b.partitions.is_empty());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod calc_period_tests {
    use super::priority_calc_period;
    use std::time::Duration;

    fn config(v: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/slurm/{v}.out",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn the_priority_calc_period_is_read_from_every_versions_show_config() {
        for v in [
            "22.05/scontrol_show_config",
            "24.11/scontrol_show_config_rl_enable",
            "26.05/scontrol_show_config",
        ] {
            assert_eq!(
                priority_calc_period(&config(v)),
                Some(Duration::from_secs(300)),
                "{v}"
            );
        }
        let odd = "PriorityCalcPeriod      = 1-00:00:00\nX = 1";
        assert_eq!(priority_calc_period(odd), Some(Duration::from_secs(86400)));
        assert_eq!(priority_calc_period("PriorityCalcPeriod = soon"), None);
        assert_eq!(priority_calc_period("PriorityType = priority/basic"), None);
    }
}
