//! Everything about one pending job that the queue poll does not carry: its rank among the
//! partition's pending jobs, its priority factors, fair-share, limit headroom and the
//! partitions that could run it. One batched remote command fetches it, only for the
//! selected job.

use super::command::{self, Scope, FIELD_SEP, RECORD_END};
use super::error::ParseError;
use super::jobid::JobId;
use super::limits::{self, Headroom, Limit, Request};
use super::model::{Job, Partition, SprioRow, SshareRow};
use super::parse::{parse_scontrol_partitions, parse_sprio, parse_sshare, terminated_records, Row};

/// `squeue` fields of the rank listing: id, priority, user, account, state, cpus, nodes,
/// tres-per-node, QOS.
const RANK_FIELDS: &[&str] = &["%i", "%Q", "%u", "%a", "%T", "%C", "%D", "%b", "%q"];

fn fmt(fields: &[&str]) -> String {
    let mut f = fields.join(&FIELD_SEP.to_string());
    f.push(RECORD_END);
    f
}

/// The commands, in section order (see [`parse`]).
pub fn commands(job: &Job) -> Vec<Vec<String>> {
    let part = job.partition.as_str();
    vec![
        // Every pending job in the job's partition(s), all users: the rank.
        vec![
            "squeue".into(),
            "--noheader".into(),
            // --local: this cluster only, no federation lookup (one slurmctld RPC fewer).
            "--local".into(),
            "--all".into(),
            format!("--partition={part}"),
            "--states=PENDING".into(),
            format!("--format={}", fmt(RANK_FIELDS)),
        ],
        // sprio refuses a folded id (`3_[2-20]`): ask for the array's own id.
        command::sprio(&[job.id.per_job_target()], &Scope::Me),
        vec![
            "sshare".into(),
            "--noheader".into(),
            "--parsable2".into(),
            format!("--accounts={}", job.account.as_str()),
            format!("--users={}", job.user.as_str()),
            format!("--format={}", command::SSHARE_FIELDS.join(",")),
        ],
        // slurmctld's accounting cache: the account's, the user's association's and the
        // QOS's limits with slurmctld's own usage beside each (one RPC, no slurmdbd).
        limits::scontrol_assoc_mgr(job.user.as_str(), job.account.as_str(), job.qos.as_str()),
        command::scontrol_show_partition(),
    ]
}

/// One row of the rank listing.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedJob {
    pub id: JobId,
    pub priority: u64,
    pub user: String,
    pub account: String,
    pub running: bool,
    pub cpus: u32,
    pub nodes: u32,
    pub tres_per_node: Option<String>,
    pub qos: String,
}

pub fn parse_queued(out: &str) -> Result<Vec<QueuedJob>, ParseError> {
    let recs = terminated_records("squeue", out)?;
    let mut v = Vec::with_capacity(recs.len());
    for rec in &recs {
        let r = Row::split_fields("squeue", rec, RANK_FIELDS.len())?;
        v.push(QueuedJob {
            id: r.job_id(0, "job id (%i)")?,
            priority: r.opt_num(1, "priority (%Q)")?.unwrap_or(0),
            user: r.str(2).trim().to_string(),
            account: r.str(3).trim().to_string(),
            running: r.str(4).trim() == "RUNNING",
            cpus: r.num(5, "cpus (%C)")?,
            nodes: r.num(6, "nodes (%D)")?,
            tres_per_node: r.opt(7),
            qos: r.str(8).trim().to_string(),
        });
    }
    Ok(v)
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

pub fn rank(id: &JobId, partition: &str, queued: &[QueuedJob]) -> Option<Rank> {
    let mine = queued.iter().find(|q| &q.id == id)?;
    let ahead = queued.iter().filter(|q| q.priority > mine.priority).count();
    let key = |q: &QueuedJob| (q.id.base(), q.id.as_str().to_string());
    let ties_before = queued
        .iter()
        .filter(|q| q.priority == mine.priority && key(q) < key(mine))
        .count();
    Some(Rank {
        position: ahead + ties_before + 1,
        of: queued.len(),
        partition: partition.to_string(),
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

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PendingInfo {
    pub id: Option<JobId>,
    /// The id per-job commands (sprio) were given, when it is not `id`: a folded array
    /// (`3_[2-20]`) is asked about by the array's own id (`3`).
    pub asked_as: Option<JobId>,
    pub rank: Option<Rank>,
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

/// Puts the sections of the batch for `job` together. A failed section becomes a problem
/// sentence; the rest still shows.
pub fn parse(job: &Job, sections: &[super::batch::Section]) -> PendingInfo {
    let target = job.id.per_job_target();
    let mut info = PendingInfo {
        id: Some(job.id.clone()),
        asked_as: (target != job.id).then_some(target),
        ..PendingInfo::default()
    };
    let names = [
        "squeue (rank)",
        "sprio",
        "sshare",
        "scontrol show assoc_mgr",
        "scontrol show partition",
    ];
    let mut ok = |i: usize| -> Option<&str> {
        let s = sections.get(i)?;
        if s.success() {
            Some(s.stdout.as_str())
        } else {
            info.problems.push(format!(
                "{} failed: {}",
                names[i],
                s.stderr.trim().lines().next().unwrap_or("no message")
            ));
            None
        }
    };
    let rank_out = ok(0).map(str::to_string);
    let sprio_out = ok(1).map(str::to_string);
    let sshare_out = ok(2).map(str::to_string);
    let assoc_out = ok(3).map(str::to_string);
    let part_out = ok(4).map(str::to_string);
    let mut bad = |what: &str, e: ParseError| info.problems.push(format!("{what}: {e}"));
    let mut rank_v = None;
    if let Some(o) = rank_out {
        match parse_queued(&o) {
            Ok(q) => rank_v = rank(&job.id, job.partition.as_str(), &q),
            Err(e) => bad("squeue (rank)", e),
        }
    }
    let mut sprio_v = Vec::new();
    // sprio says this on stdout (exit 0) for a job without factors, e.g. a held one.
    if let Some(o) = sprio_out.filter(|o| !o.trim_start().starts_with("Unable to find jobs")) {
        match parse_sprio(&o) {
            Ok(r) => sprio_v = r,
            Err(e) => bad("sprio", e),
        }
    }
    let mut sshare_v = Vec::new();
    if let Some(o) = sshare_out {
        match parse_sshare(&o) {
            Ok(r) => sshare_v = r,
            Err(e) => bad("sshare", e),
        }
    }
    let mut sel = limits::Selected::default();
    if let Some(o) = assoc_out {
        match limits::parse_assoc_mgr(&o) {
            Ok(m) => {
                sel = limits::select(
                    &m,
                    job.user.as_str(),
                    job.account.as_str(),
                    job.partition.as_str(),
                    job.qos.as_str(),
                )
            }
            Err(e) => bad("scontrol show assoc_mgr", e),
        }
    }
    let mut parts = Vec::new();
    if let Some(o) = part_out {
        match parse_scontrol_partitions(&o) {
            Ok(p) => parts = p,
            Err(e) => bad("scontrol show partition", e),
        }
    }
    let req = Request {
        cpus: u64::from(job.cpus),
        gpus: u64::from(job.gpus()),
        nodes: u64::from(job.nodes),
        minutes: job.time_limit.known().map_or(0, |d| d.as_secs() / 60),
    };
    info.headroom = limits::headroom(&sel, &req);
    info.limits_counted = sel.counted;
    let lims = sel.limits;
    info.limits = lims;
    info.rank = rank_v;
    info.sprio = sprio_v;
    info.sshare = sshare_v;
    info.partitions = parts;
    info
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn q(id: &str, prio: u64) -> QueuedJob {
        QueuedJob {
            id: id.parse().unwrap(),
            priority: prio,
            user: "u".into(),
            account: "a".into(),
            running: false,
            cpus: 1,
            nodes: 1,
            tres_per_node: None,
            qos: "normal".into(),
        }
    }

    #[test]
    fn rank_counts_higher_priority_and_earlier_ties() {
        let v = vec![q("3", 500), q("2", 900), q("1", 500), q("4", 100)];
        let r = rank(&"3".parse().unwrap(), "polar", &v).unwrap();
        assert_eq!((r.position, r.of, r.ahead), (3, 4, 1));
        assert_eq!(r.text(), "3rd of 4 in polar");
        assert_eq!(
            rank(&"2".parse().unwrap(), "polar", &v).unwrap().position,
            1
        );
        assert!(rank(&"9".parse().unwrap(), "polar", &v).is_none());
        assert_eq!(ordinal(7), "7th");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
    }

    #[test]
    fn queued_rows_parse_with_hostile_fields() {
        let out =
            "12\x1f4294\x1fsduser\x1fresearch\x1fPENDING\x1f2\x1f1\x1fgres:gpu:2\x1fnormal\x1e\n\
                   13\x1f0\x1fsdother\x1fresearch\x1fRUNNING\x1f4\x1f1\x1fN/A\x1fnormal\x1e\n";
        let v = parse_queued(out).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].tres_per_node.as_deref(), Some("gres:gpu:2"));
        assert!(v[1].running);
        assert!(parse_queued("12\x1f1\x1e\n").is_err());
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

    /// The sections of one pending-info fetch, from fixtures captured on the dev cluster.
    pub(crate) fn sections() -> Vec<Section> {
        let f = |n: &str| -> String {
            std::fs::read_to_string(format!(
                "{}/tests/fixtures/slurm/{n}.out",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
        };
        vec![
            ok(&f("squeue_rank")),
            ok(&f("sprio")),
            ok(&f("sshare_acct_user")),
            ok(&f("22.05/scontrol_assoc_mgr")),
            ok(&f("scontrol_partition")),
        ]
    }

    #[test]
    fn parse_of_a_real_fetch() {
        let mut job = parse_squeue(include_str!("../../tests/fixtures/slurm/squeue_me.out"))
            .unwrap()
            .into_iter()
            .find(|j| j.id.as_str() == "248")
            .unwrap();
        job.id = "909".parse().unwrap();
        let info = parse(&job, &sections());
        assert!(info.problems.is_empty(), "{:?}", info.problems);
        assert_eq!(info.rank.unwrap().text(), "2nd of 23 in short");
        assert_eq!(info.sshare.len(), 2);
        assert_eq!(info.partitions.len(), 3);
        let mut s = sections();
        s[1] = Section {
            stdout: String::new(),
            stderr: "sprio: error: You are not running a supported priority plugin\n".into(),
            code: Some(1),
        };
        let info = parse(&job, &s);
        assert_eq!(
            info.problems,
            ["sprio failed: sprio: error: You are not running a supported priority plugin"]
        );
        assert!(info.rank.is_some());
        s[1] = ok("Unable to find jobs matching user/id(s) specified\n");
        let info = parse(&job, &s);
        assert!(info.problems.is_empty() && info.sprio.is_empty());
    }
}
