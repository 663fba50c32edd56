//! Association and QOS limits (sacctmgr) and how much of them a user already holds.
//!
//! Pure: argv builders, parsers of `sacctmgr -nP` output, and [`headroom`], which turns
//! limits plus the user's and account's current jobs into sentences such as
//! "you hold 8 of the 8 GPUs QOS normal allows per user".

use super::error::ParseError;
use super::model::gpus_in_tres;

pub const ASSOC_FIELDS: &[&str] = &[
    "Account",
    "User",
    "Partition",
    "GrpTRES",
    "GrpJobs",
    "GrpSubmit",
    "MaxTRES",
    "MaxJobs",
    "MaxSubmit",
    "MaxWall",
];

pub const QOS_FIELDS: &[&str] = &[
    "Name",
    "GrpTRES",
    "GrpJobs",
    "GrpSubmit",
    "MaxTRES",
    "MaxTRESPU",
    "MaxJobsPU",
    "MaxSubmitPU",
    "MaxWall",
    "MaxTRESPA",
    "MaxJobsPA",
];

/// Every association of `account` (the account's own row has an empty user).
pub fn sacctmgr_assoc(account: &str) -> Vec<String> {
    vec![
        "sacctmgr".into(),
        "--noheader".into(),
        "--parsable2".into(),
        "show".into(),
        "assoc".into(),
        format!("account={account}"),
        format!("format={}", ASSOC_FIELDS.join(",")),
    ]
}

pub fn sacctmgr_qos(qos: &str) -> Vec<String> {
    vec![
        "sacctmgr".into(),
        "--noheader".into(),
        "--parsable2".into(),
        "show".into(),
        "qos".into(),
        format!("name={qos}"),
        format!("format={}", QOS_FIELDS.join(",")),
    ]
}

/// Who a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    User,
    /// Everyone in the account (association Grp*) or everyone using the QOS (QOS Grp*).
    Group,
    Account,
    Job,
}

/// What a limit counts: a TRES (`cpu`, `gres/gpu`, `mem`, `node`, `billing`), running jobs,
/// or submitted jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    Tres(String),
    Jobs,
    Submit,
    Wall,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// "QOS normal", "account research", "association research/sduser".
    pub owner: String,
    pub what: What,
    pub per: Per,
    /// As sacctmgr prints it: `8`, `64G`, `4:00:00`.
    pub max: String,
}

fn tres_limits(out: &mut Vec<Limit>, owner: &str, per: Per, tres: &str) {
    for item in tres.split(',').filter(|s| !s.trim().is_empty()) {
        if let Some((k, v)) = item.split_once('=') {
            out.push(Limit {
                owner: owner.to_string(),
                what: What::Tres(k.trim().to_string()),
                per,
                max: v.trim().to_string(),
            });
        }
    }
}

fn num_limit(out: &mut Vec<Limit>, owner: &str, what: What, per: Per, v: &str) {
    let v = v.trim();
    if !v.is_empty() {
        out.push(Limit {
            owner: owner.to_string(),
            what,
            per,
            max: v.to_string(),
        });
    }
}

fn rows<'a>(
    cmd: &'static str,
    out: &'a str,
    n: usize,
) -> impl Iterator<Item = Result<(usize, Vec<&'a str>), ParseError>> + 'a {
    out.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(move |(i, l)| {
            let f: Vec<&str> = l.split('|').collect();
            if f.len() == n {
                Ok((i + 1, f))
            } else {
                Err(ParseError::new(
                    cmd,
                    i + 1,
                    format!("expected {n} fields, found {}", f.len()),
                    l,
                ))
            }
        })
}

/// Limits from `sacctmgr_assoc` that apply to `user` in `partition`: the account's own row
/// (group limits) and the user's row (a partition-specific row wins over the general one).
pub fn parse_assoc(out: &str, user: &str, partition: &str) -> Result<Vec<Limit>, ParseError> {
    let mut acct: Option<Vec<&str>> = None;
    let mut mine: Option<Vec<&str>> = None;
    for r in rows("sacctmgr show assoc", out, ASSOC_FIELDS.len()) {
        let (_, f) = r?;
        let (u, p) = (f[1].trim(), f[2].trim());
        if u.is_empty() && p.is_empty() {
            acct = Some(f);
        } else if u == user
            && (p.is_empty() || p == partition)
            && mine.as_ref().is_none_or(|m| m[2].trim().is_empty())
        {
            mine = Some(f);
        }
    }
    let mut out = Vec::new();
    if let Some(f) = acct {
        let owner = format!("account {}", f[0].trim());
        tres_limits(&mut out, &owner, Per::Group, f[3]);
        num_limit(&mut out, &owner, What::Jobs, Per::Group, f[4]);
        num_limit(&mut out, &owner, What::Submit, Per::Group, f[5]);
        tres_limits(&mut out, &owner, Per::Job, f[6]);
        num_limit(&mut out, &owner, What::Jobs, Per::User, f[7]);
        num_limit(&mut out, &owner, What::Submit, Per::User, f[8]);
        num_limit(&mut out, &owner, What::Wall, Per::Job, f[9]);
    }
    if let Some(f) = mine {
        let owner = format!("association {}/{}", f[0].trim(), f[1].trim());
        tres_limits(&mut out, &owner, Per::User, f[3]);
        num_limit(&mut out, &owner, What::Jobs, Per::User, f[4]);
        num_limit(&mut out, &owner, What::Submit, Per::User, f[5]);
        tres_limits(&mut out, &owner, Per::Job, f[6]);
        num_limit(&mut out, &owner, What::Jobs, Per::User, f[7]);
        num_limit(&mut out, &owner, What::Submit, Per::User, f[8]);
        num_limit(&mut out, &owner, What::Wall, Per::Job, f[9]);
    }
    Ok(out)
}

/// Limits from `sacctmgr_qos`.
pub fn parse_qos(out: &str) -> Result<Vec<Limit>, ParseError> {
    let mut res = Vec::new();
    for r in rows("sacctmgr show qos", out, QOS_FIELDS.len()) {
        let (_, f) = r?;
        let owner = format!("QOS {}", f[0].trim());
        tres_limits(&mut res, &owner, Per::Group, f[1]);
        num_limit(&mut res, &owner, What::Jobs, Per::Group, f[2]);
        num_limit(&mut res, &owner, What::Submit, Per::Group, f[3]);
        tres_limits(&mut res, &owner, Per::Job, f[4]);
        tres_limits(&mut res, &owner, Per::User, f[5]);
        num_limit(&mut res, &owner, What::Jobs, Per::User, f[6]);
        num_limit(&mut res, &owner, What::Submit, Per::User, f[7]);
        num_limit(&mut res, &owner, What::Wall, Per::Job, f[8]);
        tres_limits(&mut res, &owner, Per::Account, f[9]);
        num_limit(&mut res, &owner, What::Jobs, Per::Account, f[10]);
    }
    Ok(res)
}

/// What a set of jobs holds (running) and has queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub running_jobs: u64,
    pub submitted_jobs: u64,
    pub cpus: u64,
    pub gpus: u64,
    pub nodes: u64,
}

/// One job's share of a [`Usage`]: `running` adds its resources.
pub fn add_job(u: &mut Usage, running: bool, cpus: u32, nodes: u32, tres_per_node: Option<&str>) {
    u.submitted_jobs += 1;
    if running {
        u.running_jobs += 1;
        u.cpus += u64::from(cpus);
        u.nodes += u64::from(nodes);
        let g = tres_per_node.map(gpus_in_tres).unwrap_or(0);
        u.gpus += u64::from(g) * u64::from(nodes.max(1));
    }
}

/// The job's own request, for per-job limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Request {
    pub cpus: u64,
    pub gpus: u64,
    pub nodes: u64,
}

fn counted(what: &What) -> Option<(&'static str, &'static str)> {
    Some(match what {
        What::Tres(t) if t == "cpu" => ("CPU", "CPUs"),
        What::Tres(t) if t == "gres/gpu" => ("GPU", "GPUs"),
        What::Tres(t) if t == "node" => ("node", "nodes"),
        What::Jobs => ("running job", "running jobs"),
        What::Submit => ("queued job", "queued jobs"),
        _ => return None,
    })
}

fn used(u: &Usage, what: &What) -> u64 {
    match what {
        What::Tres(t) if t == "cpu" => u.cpus,
        What::Tres(t) if t == "gres/gpu" => u.gpus,
        What::Tres(t) if t == "node" => u.nodes,
        What::Jobs => u.running_jobs,
        What::Submit => u.submitted_jobs,
        _ => 0,
    }
}

fn requested(r: &Request, what: &What) -> u64 {
    match what {
        What::Tres(t) if t == "cpu" => r.cpus,
        What::Tres(t) if t == "gres/gpu" => r.gpus,
        What::Tres(t) if t == "node" => r.nodes,
        _ => 0,
    }
}

/// One sentence per limit: how much is held against it, and whether the job fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headroom {
    pub text: String,
    /// The limit is reached (or the job alone exceeds it).
    pub full: bool,
}

/// Sentences for `limits`, given what the user and the account hold and what the job asks.
pub fn headroom(limits: &[Limit], user: &Usage, account: &Usage, job: &Request) -> Vec<Headroom> {
    let mut out = Vec::new();
    for l in limits {
        let Some((one, many)) = counted(&l.what) else {
            let what = match &l.what {
                What::Tres(t) => t.as_str(),
                What::Wall => "wall time",
                _ => "?",
            };
            let per = match l.per {
                Per::User => " per user",
                Per::Job => " per job",
                Per::Account => " per account",
                Per::Group => " in total",
            };
            out.push(Headroom {
                text: format!("{} allows {what} {}{per}", l.owner, l.max),
                full: false,
            });
            continue;
        };
        let Ok(max) = l.max.parse::<u64>() else {
            continue;
        };
        let unit = if max == 1 { one } else { many };
        let (text, full) = match l.per {
            Per::Job => {
                let want = requested(job, &l.what);
                (
                    format!(
                        "the job asks {want}; {} allows {max} {unit} per job",
                        l.owner
                    ),
                    want > max,
                )
            }
            Per::User => {
                let have = used(user, &l.what);
                (
                    format!(
                        "you hold {have} of the {max} {unit} {} allows per user",
                        l.owner
                    ),
                    have + requested(job, &l.what) > max || have >= max,
                )
            }
            Per::Group | Per::Account => {
                let have = used(account, &l.what);
                (
                    format!(
                        "the account holds {have} of the {max} {unit} {} allows",
                        l.owner
                    ),
                    have + requested(job, &l.what) > max || have >= max,
                )
            }
        };
        out.push(Headroom { text, full });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn real_output_without_limits_gives_none() {
        let assoc = "research|||||||||\nresearch|sdother||||||||\nresearch|sduser||||||||\n";
        assert!(parse_assoc(assoc, "sduser", "polar").unwrap().is_empty());
        assert!(parse_qos("normal||||||||||\n").unwrap().is_empty());
        assert!(parse_qos("normal|0|\n").is_err());
    }

    #[test]
    fn qos_gpu_limit_per_user_reads_as_a_sentence() {
        let qos = "normal||||gres/gpu=4|cpu=32,gres/gpu=8|10||||\n";
        let l = parse_qos(qos).unwrap();
        assert_eq!(l.len(), 4);
        let user = Usage {
            running_jobs: 3,
            submitted_jobs: 5,
            cpus: 12,
            gpus: 8,
            nodes: 3,
        };
        let h = headroom(
            &l,
            &user,
            &user,
            &Request {
                cpus: 4,
                gpus: 2,
                nodes: 1,
            },
        );
        let texts: Vec<&str> = h.iter().map(|h| h.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "the job asks 2; QOS normal allows 4 GPUs per job",
                "you hold 12 of the 32 CPUs QOS normal allows per user",
                "you hold 8 of the 8 GPUs QOS normal allows per user",
                "you hold 3 of the 10 running jobs QOS normal allows per user",
            ]
        );
        assert_eq!(h.iter().filter(|h| h.full).count(), 1);
        assert!(h[2].full);
    }

    #[test]
    fn partition_specific_association_wins_and_account_row_is_group() {
        let out = "research||||20||gres/gpu=16|||\n\
                   research|sduser|||||||3|\n\
                   research|sduser|polar|gres/gpu=2||||||\n";
        let l = parse_assoc(out, "sduser", "polar").unwrap();
        assert_eq!(l[0].owner, "account research");
        assert_eq!(l[0].what, What::Jobs);
        assert_eq!(l[0].per, Per::Group);
        assert!(l.iter().any(|x| x.owner == "association research/sduser"
            && x.what == What::Tres("gres/gpu".into())
            && x.max == "2"));
        let mut u = Usage::default();
        add_job(&mut u, true, 4, 2, Some("gres:gpu:2"));
        add_job(&mut u, false, 4, 1, Some("gres:gpu:2"));
        assert_eq!(
            (u.gpus, u.cpus, u.running_jobs, u.submitted_jobs),
            (4, 4, 1, 2)
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fixture_tests {
    use super::*;

    #[test]
    fn real_sacctmgr_output_of_the_dev_cluster() {
        let a = include_str!("../../tests/fixtures/slurm/sacctmgr_assoc.out");
        let q = include_str!("../../tests/fixtures/slurm/sacctmgr_qos.out");
        assert!(parse_assoc(a, "sduser", "short").unwrap().is_empty());
        assert!(parse_qos(q).unwrap().is_empty());
    }
}
