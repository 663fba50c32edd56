//! Association and QOS limits as slurmctld holds them, with slurmctld's own usage beside
//! each, and how much of them a user already holds.
//!
//! One `scontrol show assoc_mgr` (one slurmctld RPC, no slurmdbd) prints every limit of the
//! job's account, the user's association and the job's QOS as `GrpTRES=cpu=16(1),gres/gpu=4(2)`
//! and `MaxJobs=5(1)`: the limit (`N` when none is set) and, in brackets, what slurmctld
//! counts against it. Pure: the argv builder, [`parse_assoc_mgr`], [`select`] (the limits
//! that apply to one job) and [`headroom`], which turns them into sentences such as
//! "you hold 8 of the 8 GPUs QOS normal allows per user".
//!
//! Two things slurmctld does that show here: it counts usage only where
//! `AccountingStorageEnforce` includes `limits` (elsewhere every count is 0, and no limit is
//! enforced either); and it lists a QOS's per-user and per-account limits (`MaxTRESPU`,
//! `MaxJobsPA`, ...) only inside the entry of a user or account that holds something under
//! the QOS, so a QOS nobody uses shows none of them.

use super::error::ParseError;

const CMD: &str = "scontrol show assoc_mgr";

/// The account's and the user's associations and the QOS, with usage (one slurmctld RPC).
/// `users=` does not narrow a QOS's per-user entries: [`select`] picks the user's.
pub fn scontrol_assoc_mgr(user: &str, account: &str, qos: &str) -> Vec<String> {
    vec![
        "scontrol".into(),
        "show".into(),
        "assoc_mgr".into(),
        format!("users={user}"),
        format!("accounts={account}"),
        format!("qos={qos}"),
        "flags=assoc,qos".into(),
    ]
}

/// `Key=value` pairs of one record or entry, in the order printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<(String, String)>);

impl Fields {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One association: the account's own (no user) or a user's in that account.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssocRec {
    pub account: String,
    pub user: Option<String>,
    pub uid: Option<u32>,
    pub partition: Option<String>,
    pub fields: Fields,
}

/// A user's or an account's entry under a QOS (`sduser(1001)`; 22.05 prints the uid alone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosEntry {
    pub name: Option<String>,
    pub uid: Option<u32>,
    pub fields: Fields,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosRec {
    pub name: String,
    pub fields: Fields,
    pub accounts: Vec<QosEntry>,
    pub users: Vec<QosEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssocMgr {
    pub assocs: Vec<AssocRec>,
    pub qos: Vec<QosRec>,
}

/// A limit and slurmctld's count against it: `4(2)`, `N(0)` (no limit), `3` (per-job
/// limits carry no count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub max: Option<u64>,
    pub used: Option<u64>,
}

pub fn tally(v: &str) -> Option<Tally> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    let (max, used) = match v.split_once('(') {
        Some((m, rest)) => (m, Some(rest.strip_suffix(')')?)),
        None => (v, None),
    };
    let num = |s: &str| -> Option<u64> {
        s.parse::<u64>().ok().or_else(|| {
            // GrpWall's count is minutes with decimals. What is not a count (NaN, -1, a
            // number no u64 holds) is not read as one.
            let f = s.parse::<f64>().ok()?.round();
            (f.is_finite() && f >= 0.0 && f < u64::MAX as f64).then_some(f as u64)
        })
    };
    let max = match max {
        "N" => None,
        m => Some(num(m)?),
    };
    let used = match used {
        Some(u) => Some(num(u)?),
        None => None,
    };
    Some(Tally { max, used })
}

/// `cpu=16(1),mem=N(50),gres/gpu=4(2)` or `cpu=8,gres/gpu=4`, in order; items that do not
/// read are left out.
pub fn tres_tallies(v: &str) -> Vec<(String, Tally)> {
    v.split(',')
        .filter_map(|item| {
            let (k, v) = item.split_once('=')?;
            Some((k.trim().to_string(), tally(v)?))
        })
        .collect()
}

fn fields_of(line: &str, into: &mut Fields) {
    for tok in line.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            into.0.push((k.to_string(), v.to_string()));
        }
    }
}

/// `sduser(1001)` -> (Some("sduser"), Some(1001)); `1001` -> (None, Some(1001)).
fn name_uid(s: &str) -> (Option<String>, Option<u32>) {
    let s = s.trim();
    if let Some((n, rest)) = s.split_once('(') {
        let uid = rest.strip_suffix(')').and_then(|u| u.parse().ok());
        return (Some(n.to_string()).filter(|n| !n.is_empty()), uid);
    }
    match s.parse::<u32>() {
        Ok(uid) => (None, Some(uid)),
        Err(_) => (Some(s.to_string()).filter(|n| !n.is_empty()), None),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    None,
    Assoc,
    Qos,
    Other,
}

#[derive(Clone, Copy, PartialEq)]
enum QosPart {
    Own,
    Accounts,
    Users,
}

/// Reads `scontrol show assoc_mgr ... flags=assoc,qos` (22.05 to 26.05). Sections other than
/// associations and QOS (`User Records`) are skipped.
pub fn parse_assoc_mgr(out: &str) -> Result<AssocMgr, ParseError> {
    let mut mgr = AssocMgr::default();
    let mut section = Section::None;
    let mut part = QosPart::Own;
    let mut seen_header = false;
    for (i, raw) in out.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        match line {
            "Current Association Manager state" => {
                seen_header = true;
                continue;
            }
            "Association Records" => {
                section = Section::Assoc;
                continue;
            }
            "QOS Records" => {
                section = Section::Qos;
                continue;
            }
            "User Records" => {
                section = Section::Other;
                continue;
            }
            _ => {}
        }
        if !seen_header {
            return Err(ParseError::new(
                CMD,
                n,
                "expected 'Current Association Manager state' first",
                line,
            ));
        }
        if line.starts_with("No ") && line.ends_with("cached in Slurm.") {
            section = Section::Other;
            continue;
        }
        match section {
            Section::Other => {}
            Section::None => {
                return Err(ParseError::new(CMD, n, "a line outside any section", line));
            }
            Section::Assoc => {
                if line.starts_with("ClusterName=") {
                    let mut f = Fields::default();
                    fields_of(line, &mut f);
                    let (user, uid) = f.get("UserName").map(name_uid).unwrap_or((None, None));
                    let Some(account) = f.get("Account").map(str::to_string) else {
                        return Err(ParseError::new(
                            CMD,
                            n,
                            "an association without Account=",
                            line,
                        ));
                    };
                    mgr.assocs.push(AssocRec {
                        account,
                        user,
                        uid,
                        partition: f
                            .get("Partition")
                            .filter(|p| !p.is_empty())
                            .map(str::to_string),
                        fields: Fields::default(),
                    });
                } else if let Some(a) = mgr.assocs.last_mut() {
                    fields_of(line, &mut a.fields);
                } else {
                    return Err(ParseError::new(
                        CMD,
                        n,
                        "a field before any association",
                        line,
                    ));
                }
            }
            Section::Qos => {
                if let Some(rest) = line.strip_prefix("QOS=") {
                    let name = rest.split('(').next().unwrap_or(rest).trim().to_string();
                    mgr.qos.push(QosRec {
                        name,
                        ..QosRec::default()
                    });
                    part = QosPart::Own;
                    continue;
                }
                let Some(q) = mgr.qos.last_mut() else {
                    return Err(ParseError::new(CMD, n, "a field before any QOS", line));
                };
                match line {
                    "Account Limits" => part = QosPart::Accounts,
                    "User Limits" => part = QosPart::Users,
                    "No Accounts" | "No Users" => {}
                    _ if part != QosPart::Own && !line.contains('=') => {
                        let (name, uid) = name_uid(line);
                        let e = QosEntry {
                            name,
                            uid,
                            fields: Fields::default(),
                        };
                        if part == QosPart::Accounts {
                            q.accounts.push(e);
                        } else {
                            q.users.push(e);
                        }
                    }
                    _ => {
                        let f = match part {
                            QosPart::Own => Some(&mut q.fields),
                            QosPart::Accounts => q.accounts.last_mut().map(|e| &mut e.fields),
                            QosPart::Users => q.users.last_mut().map(|e| &mut e.fields),
                        };
                        match f {
                            Some(f) => fields_of(line, f),
                            None => {
                                return Err(ParseError::new(
                                    CMD,
                                    n,
                                    "limits before the account or user they belong to",
                                    line,
                                ))
                            }
                        }
                    }
                }
            }
        }
    }
    if !seen_header {
        return Err(ParseError::new(CMD, 0, "no association manager state", ""));
    }
    Ok(mgr)
}

/// Who a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// The user (a QOS's per-user limit, or the user's own association).
    User,
    /// Everyone in the account (its association's Grp*) or everyone using the QOS (QOS Grp*).
    Group,
    /// The account, under a QOS (MaxTRESPA, MaxJobsPA).
    Account,
    Job,
    Node,
}

/// What a limit counts: a TRES (`cpu`, `gres/gpu`, `mem`, `node`, `billing`), running jobs,
/// queued-or-running jobs, or wall time (minutes).
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
    /// In Slurm's units: a count, MB of memory, minutes of wall time.
    pub max: u64,
    /// What slurmctld counts against it (none for per-job and per-node limits).
    pub used: Option<u64>,
}

/// The limits that apply to one job, from [`parse_assoc_mgr`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selected {
    pub limits: Vec<Limit>,
    /// Whether slurmctld counts usage: the job's own association shows it queued
    /// (`GrpSubmitJobs=N(1)` or more). `None` when the association is not listed.
    pub counted: Option<bool>,
    /// The QOS has no entry of the user (so its per-user limits are not known).
    pub qos_user_missing: bool,
}

/// What a limit field holds: TRES tallies (`cpu=16(1),gres/gpu=4(2)`) or one tally.
#[derive(Clone, Copy)]
enum Holds {
    Tres,
    Jobs,
    Submit,
    Wall,
}

/// Limit fields of an account's association and of a QOS: (field, holds, counted per).
const GROUP_FIELDS: &[(&str, Holds, Per)] = &[
    ("GrpTRES", Holds::Tres, Per::Group),
    ("GrpJobs", Holds::Jobs, Per::Group),
    ("GrpSubmitJobs", Holds::Submit, Per::Group),
    ("MaxTRESPJ", Holds::Tres, Per::Job),
    ("MaxTRESPN", Holds::Tres, Per::Node),
    ("MaxWallPJ", Holds::Wall, Per::Job),
];

/// Limit fields of the user's association in an account.
const USER_ASSOC_FIELDS: &[(&str, Holds, Per)] = &[
    ("GrpTRES", Holds::Tres, Per::User),
    ("GrpJobs", Holds::Jobs, Per::User),
    ("GrpSubmitJobs", Holds::Submit, Per::User),
    ("MaxJobs", Holds::Jobs, Per::User),
    ("MaxSubmitJobs", Holds::Submit, Per::User),
    ("MaxTRESPJ", Holds::Tres, Per::Job),
    ("MaxTRESPN", Holds::Tres, Per::Node),
    ("MaxWallPJ", Holds::Wall, Per::Job),
];

/// A QOS's limits per user (its `User Limits` entry of the user).
const QOS_USER_FIELDS: &[(&str, Holds, Per)] = &[
    ("MaxTRESPU", Holds::Tres, Per::User),
    ("MaxJobsPU", Holds::Jobs, Per::User),
    ("MaxSubmitJobsPU", Holds::Submit, Per::User),
];

/// A QOS's limits per account (its `Account Limits` entry of the account).
const QOS_ACCOUNT_FIELDS: &[(&str, Holds, Per)] = &[
    ("MaxTRESPA", Holds::Tres, Per::Account),
    ("MaxJobsPA", Holds::Jobs, Per::Account),
    ("MaxSubmitJobsPA", Holds::Submit, Per::Account),
];

/// The limits `owner` sets in `fields`, by the table `which`: only those with a maximum.
fn push_limits(out: &mut Vec<Limit>, owner: &str, fields: &Fields, which: &[(&str, Holds, Per)]) {
    for &(name, holds, per) in which {
        let Some(v) = fields.get(name) else { continue };
        let tallies: Vec<(What, Tally)> = match holds {
            Holds::Tres => tres_tallies(v)
                .into_iter()
                .map(|(k, t)| (What::Tres(k), t))
                .collect(),
            Holds::Jobs => tally(v).map(|t| (What::Jobs, t)).into_iter().collect(),
            Holds::Submit => tally(v).map(|t| (What::Submit, t)).into_iter().collect(),
            Holds::Wall => tally(v).map(|t| (What::Wall, t)).into_iter().collect(),
        };
        for (what, t) in tallies {
            let Some(max) = t.max else { continue };
            out.push(Limit {
                owner: owner.to_string(),
                what,
                per,
                max,
                used: t.used,
            });
        }
    }
}

/// The limits of `account`'s association, the user's association in it (one for
/// `partition` wins over the general one) and QOS `qos`, with slurmctld's counts.
pub fn select(mgr: &AssocMgr, user: &str, account: &str, partition: &str, qos: &str) -> Selected {
    let mut out = Vec::new();
    let acct = mgr
        .assocs
        .iter()
        .find(|a| a.account == account && a.user.is_none() && a.partition.is_none());
    let mine = mgr
        .assocs
        .iter()
        .filter(|a| a.account == account && a.user.as_deref() == Some(user))
        .filter(|a| a.partition.is_none() || a.partition.as_deref() == Some(partition))
        .max_by_key(|a| a.partition.is_some());
    if let Some(a) = acct {
        let owner = format!("account {}", a.account);
        push_limits(&mut out, &owner, &a.fields, GROUP_FIELDS);
    }
    if let Some(a) = mine {
        let owner = format!("association {}/{user}", a.account);
        push_limits(&mut out, &owner, &a.fields, USER_ASSOC_FIELDS);
    }
    let counted = mine
        .and_then(|a| a.fields.get("GrpSubmitJobs"))
        .and_then(tally)
        .and_then(|t| t.used)
        .map(|n| n > 0);
    let uid = mine.and_then(|a| a.uid);
    let mut qos_user_missing = false;
    if let Some(q) = mgr.qos.iter().find(|q| q.name == qos) {
        let owner = format!("QOS {}", q.name);
        push_limits(&mut out, &owner, &q.fields, GROUP_FIELDS);
        match q.users.iter().find(|e| {
            e.name.as_deref() == Some(user) || (e.name.is_none() && e.uid.is_some() && e.uid == uid)
        }) {
            Some(e) => push_limits(&mut out, &owner, &e.fields, QOS_USER_FIELDS),
            None => qos_user_missing = true,
        }
        if let Some(e) = q
            .accounts
            .iter()
            .find(|e| e.name.as_deref() == Some(account))
        {
            push_limits(&mut out, &owner, &e.fields, QOS_ACCOUNT_FIELDS);
        }
    }
    Selected {
        limits: out,
        counted,
        qos_user_missing,
    }
}

/// The job's own request, for per-job limits and whether it fits beside what is held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Request {
    pub cpus: u64,
    pub gpus: u64,
    pub nodes: u64,
    /// The time limit in minutes (0 when unknown).
    pub minutes: u64,
}

fn counted(what: &What) -> Option<(&'static str, &'static str)> {
    Some(match what {
        What::Tres(t) if t == "cpu" => ("CPU", "CPUs"),
        What::Tres(t) if t == "gres/gpu" => ("GPU", "GPUs"),
        What::Tres(t) if t == "node" => ("node", "nodes"),
        What::Tres(t) if t == "mem" => ("MB of memory", "MB of memory"),
        What::Jobs => ("running job", "running jobs"),
        What::Submit => ("queued or running job", "queued or running jobs"),
        _ => return None,
    })
}

fn requested(r: &Request, what: &What) -> u64 {
    match what {
        What::Tres(t) if t == "cpu" => r.cpus,
        What::Tres(t) if t == "gres/gpu" => r.gpus,
        What::Tres(t) if t == "node" => r.nodes,
        What::Jobs => 1,
        What::Wall => r.minutes,
        _ => 0,
    }
}

fn minutes_text(m: u64) -> String {
    let (d, h, mi) = (m / 1440, (m % 1440) / 60, m % 60);
    if d > 0 {
        format!("{d}-{h:02}:{mi:02}:00")
    } else {
        format!("{h}:{mi:02}:00")
    }
}

/// One sentence per limit: how much is held against it, and whether the job fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headroom {
    pub text: String,
    /// The limit is reached (or the job alone exceeds it).
    pub full: bool,
    /// The limit it speaks of (none for notes).
    pub limit: Option<Limit>,
}

impl Headroom {
    fn note(text: String) -> Headroom {
        Headroom {
            text,
            full: false,
            limit: None,
        }
    }
}

/// Sentences for the limits of `sel`, given what the job asks. Usage is slurmctld's own
/// count; where slurmctld counts none (limits not enforced) the limits are listed without it.
pub fn headroom(sel: &Selected, job: &Request) -> Vec<Headroom> {
    let mut out = Vec::new();
    let uncounted = sel.counted == Some(false);
    if uncounted && !sel.limits.is_empty() {
        out.push(Headroom::note(
            "slurmctld counts no usage against these limits (AccountingStorageEnforce \
             without 'limits'), so it does not enforce them either"
                .into(),
        ));
    }
    for l in &sel.limits {
        let per = match l.per {
            Per::User => " per user",
            Per::Job => " per job",
            Per::Node => " per node",
            Per::Account => " per account",
            Per::Group => "",
        };
        let is_assoc_user = l.owner.starts_with("association ");
        let Some((one, many)) = counted(&l.what) else {
            let (what, max) = match &l.what {
                What::Tres(t) => (t.as_str(), l.max.to_string()),
                What::Wall => ("wall time", minutes_text(l.max)),
                _ => ("?", l.max.to_string()),
            };
            let want = requested(job, &l.what);
            let full = l.per == Per::Job && want > l.max;
            let mut text = format!("{} allows {what} {max}{per}", l.owner);
            if l.what == What::Wall && want > 0 {
                text = format!("the job asks {}; {text}", minutes_text(want));
            } else if let Some(u) = l.used.filter(|_| !uncounted) {
                text.push_str(&format!(" ({u} held)"));
            }
            out.push(Headroom {
                text,
                full,
                limit: Some(l.clone()),
            });
            continue;
        };
        let max = l.max;
        let unit = if max == 1 { one } else { many };
        let want = requested(job, &l.what);
        let (text, full) = match (l.per, l.used.filter(|_| !uncounted)) {
            (Per::Job, _) => (
                format!(
                    "the job asks {want}; {} allows {max} {unit} per job",
                    l.owner
                ),
                want > max,
            ),
            (Per::Node, _) => (format!("{} allows {max} {unit} per node", l.owner), false),
            (_, None) => (format!("{} allows {max} {unit}{per}", l.owner), false),
            (per, Some(have)) => {
                // The job is already among the queued ones; a running-job or TRES limit
                // must also hold it once it starts.
                let full = match l.what {
                    What::Submit => have > max,
                    _ => have.saturating_add(want) > max,
                };
                let text = match per {
                    Per::User if is_assoc_user => {
                        format!("you hold {have} of the {max} {unit} {} allows", l.owner)
                    }
                    Per::User => {
                        format!(
                            "you hold {have} of the {max} {unit} {} allows per user",
                            l.owner
                        )
                    }
                    Per::Account => format!(
                        "your account holds {have} of the {max} {unit} {} allows per account",
                        l.owner
                    ),
                    _ if l.owner.starts_with("QOS ") => format!(
                        "all users of {} hold {have} of the {max} {unit} it allows",
                        l.owner
                    ),
                    _ => format!("{} holds {have} of the {max} {unit} it allows", l.owner),
                };
                (text, full)
            }
        };
        out.push(Headroom {
            text,
            full,
            limit: Some(l.clone()),
        });
    }
    if sel.qos_user_missing && !uncounted {
        out.push(Headroom::note(
            "the QOS lists no per-user limits for you: slurmctld shows them once you hold \
             a job under it"
                .into(),
        ));
    }
    out
}

/// Whether a pending reason speaks of an association or QOS limit.
pub fn names_a_limit(reason: &str) -> bool {
    reason.starts_with("QOS") || reason.starts_with("Assoc")
}

/// The limit a pending reason names (`QOSMaxGRESPerUser`, `AssocGrpCpuLimit`,
/// `QOSMaxJobsPerAccountLimit`, ...): the index in `h` of the full one it speaks of.
pub fn blocking(reason: &str, h: &[Headroom]) -> Option<usize> {
    let (qos, rest) = if let Some(r) = reason.strip_prefix("QOS") {
        (true, r)
    } else if let Some(r) = reason.strip_prefix("Assoc") {
        (false, r)
    } else {
        return None;
    };
    let rest = rest.strip_suffix("Limit").unwrap_or(rest);
    let (grp, rest) = if let Some(r) = rest.strip_prefix("Grp") {
        (true, r)
    } else if let Some(r) = rest.strip_prefix("Max") {
        (false, r)
    } else {
        return None;
    };
    // Time-based limits (…Minutes, …RunMinutes, Wall) are not among those we show.
    let (what, scope) = [
        ("GRES", "gres/"),
        ("Cpu", "cpu"),
        ("Node", "node"),
        ("Mem", "mem"),
        ("Billing", "billing"),
        ("SubmitJob", "#submit"),
        ("Jobs", "#jobs"),
        ("Job", "#jobs"),
        ("WallDuration", "#wall"),
        ("Wall", "#wall"),
    ]
    .iter()
    .find_map(|(p, w)| rest.strip_prefix(p).map(|s| (*w, s)))?;
    if scope.contains("Min") {
        return None;
    }
    let per = if grp {
        None
    } else if scope.contains("PerUser") {
        Some(Per::User)
    } else if scope.contains("PerAccount") || scope.contains("PerAcct") {
        Some(Per::Account)
    } else if scope.contains("PerNode") {
        Some(Per::Node)
    } else if scope.contains("PerJob") || what == "#wall" {
        Some(Per::Job)
    } else {
        // AssocMaxJobsLimit, AssocMaxSubmitJobLimit: the user's association.
        Some(Per::User)
    };
    let matches = |l: &Limit| {
        let owner_ok = l.owner.starts_with("QOS ") == qos;
        let what_ok = match (what, &l.what) {
            ("#jobs", What::Jobs) | ("#submit", What::Submit) | ("#wall", What::Wall) => true,
            ("gres/", What::Tres(t)) => t.starts_with("gres/"),
            (w, What::Tres(t)) => t == w,
            _ => false,
        };
        let per_ok = match per {
            None => matches!(l.per, Per::Group) || (!qos && l.per == Per::User),
            Some(p) => l.per == p,
        };
        owner_ok && what_ok && per_ok
    };
    let mut found = None;
    for (i, x) in h.iter().enumerate() {
        if let Some(l) = &x.limit {
            if matches(l) {
                if x.full {
                    return Some(i);
                }
                found.get_or_insert(i);
            }
        }
    }
    found
}

#[cfg(test)]
#[path = "limits_props.rs"]
mod props;

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
