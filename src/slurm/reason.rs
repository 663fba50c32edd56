//! Why a job waits, in plain words, and what the user can do about it.
//!
//! Covers the reason codes of Slurm's "JOB REASON CODES" that a user meets on a pending job.
//! The limit families (`AssocGrp*`, `AssocMax*`, `QOSGrp*`, `QOSMax*`, `Max*PerAccount`) are
//! read by their parts, so e.g. `QOSMaxGRESPerUser` and `AssocGrpMemRunMinutes` both get a
//! sentence. Where the job's own request breaks a partition rule, [`Context`] carries what is
//! needed to name the number and the fix.

use super::model::{Partition, SlurmDuration};

/// What is known about the job and its partition when explaining.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    pub partition: Option<&'a Partition>,
    pub time_limit: Option<SlurmDuration>,
    pub nodes: Option<u32>,
    pub dependency: Option<&'a str>,
    /// The key that opens the edit form, if the dashboard has one.
    pub edit_key: Option<&'a str>,
}

/// How the wait will end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outlook {
    /// The scheduler will start it in time; nothing to do.
    Waits,
    /// It waits on something outside the scheduler's queue order (a dependency, a begin
    /// time, a limit freeing up, a reservation): it starts once that changes.
    Blocked,
    /// It will not start until someone changes the job (or an admin changes the cluster).
    Never,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// Slurm's code, as printed.
    pub code: String,
    /// What it means, in plain words.
    pub words: String,
    /// What to do, if anything.
    pub fix: Option<String>,
    pub outlook: Outlook,
}

fn ex(code: &str, words: impl Into<String>, fix: Option<String>, outlook: Outlook) -> Explanation {
    Explanation {
        code: code.to_string(),
        words: words.into(),
        fix,
        outlook,
    }
}

fn edit_hint(ctx: &Context, what: &str) -> String {
    match ctx.edit_key {
        Some(k) => format!("{k} to edit the {what}, or resubmit"),
        None => format!("change the {what} (scontrol update) or resubmit"),
    }
}

/// The resource in a limit code's middle part: `GRES`, `Cpu`, `MemRunMinutes`…
fn resource_words(part: &str) -> String {
    let (base, minutes) = match part
        .strip_suffix("RunMinutes")
        .map(|b| (b, " × time of running jobs"))
        .or_else(|| part.strip_suffix("Minutes").map(|b| (b, "-minutes")))
    {
        Some((b, m)) => (b, m),
        None => (part, ""),
    };
    let base = match base {
        "GRES" | "Gres" => "GPU/GRES",
        "Cpu" | "CPU" | "Cpus" => "CPU",
        "Mem" | "Memory" => "memory",
        "Node" | "Nodes" => "node",
        "Billing" => "billing",
        "Energy" => "energy",
        "BB" => "burst buffer",
        "License" | "Lic" => "license",
        "Wall" | "WallDuration" => "wall time",
        "Jobs" => "running jobs",
        "SubmitJobs" | "Submit" => "submitted jobs",
        other => other,
    };
    format!("{base}{minutes}")
}

/// `AssocGrpGRES`, `QOSMaxCpuPerUserLimit`, `MaxGRESPerAccount`… → who and what.
fn limit_family(code: &str) -> Option<Explanation> {
    let (owner, rest) = if let Some(r) = code.strip_prefix("Assoc") {
        ("your account (association)", r)
    } else if let Some(r) = code.strip_prefix("QOS") {
        ("the QOS", r)
    } else if code.starts_with("Max") && code.contains("PerAccount") {
        ("the QOS, per account,", code)
    } else {
        return None;
    };
    let rest = rest.strip_suffix("Limit").unwrap_or(rest);
    let (group, rest) = if let Some(r) = rest.strip_prefix("Grp") {
        (true, r)
    } else if let Some(r) = rest.strip_prefix("Max") {
        (false, r)
    } else {
        return None;
    };
    let (scope, res) = if let Some(r) = rest.strip_suffix("PerUser") {
        ("per user", r)
    } else if let Some(r) = rest.strip_suffix("PerAccount") {
        ("per account", r)
    } else if let Some(r) = rest.strip_suffix("PerJob") {
        ("per job", r)
    } else if let Some(r) = rest.strip_suffix("PerNode") {
        ("per node", r)
    } else if group {
        ("for the whole group", rest)
    } else {
        ("", rest)
    };
    if res.is_empty() {
        return None;
    }
    let what = resource_words(res);
    let minutes = res.ends_with("Minutes");
    let per_job = scope == "per job" || scope == "per node";
    let scope = if scope.is_empty() {
        String::new()
    } else {
        format!(" {scope}")
    };
    let (words, fix, outlook) = if per_job || res == "Wall" {
        (
            format!("the job asks for more {what} than {owner} allows{scope}"),
            Some("ask for less, or use another QOS/account".to_string()),
            Outlook::Never,
        )
    } else if minutes && !res.ends_with("RunMinutes") {
        (
            format!("{owner} has used up its {what} allocation{scope}"),
            Some("ask your admins for more, or submit with another account".to_string()),
            Outlook::Never,
        )
    } else {
        (
            format!("{owner} is at its {what} limit{scope}: it starts when your (or your group's) other jobs finish"),
            Some("wait, or cancel another of your jobs to make room".to_string()),
            Outlook::Blocked,
        )
    };
    Some(ex(code, words, fix, outlook))
}

fn duration(d: SlurmDuration) -> String {
    d.to_slurm()
}

/// Explains `reason` (Slurm's code as squeue/scontrol print it).
pub fn explain(reason: &str, ctx: &Context) -> Explanation {
    use Outlook::*;
    let code = reason.trim();
    let part_name = ctx
        .partition
        .map(|p| p.name.as_str())
        .unwrap_or("the partition");
    let s = |x: &str| Some(x.to_string());
    match code {
        "Priority" => ex(code, "jobs with higher priority are ahead of it in the queue", None, Waits),
        "Resources" => ex(
            code,
            "it is next in line and waits for enough CPUs/GPUs/memory to become free",
            None,
            Waits,
        ),
        "None" | "" => ex(code, "the scheduler has not looked at it yet", None, Waits),
        "Dependency" => {
            let on = ctx
                .dependency
                .filter(|d| !d.is_empty() && *d != "(null)")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            ex(code, format!("it waits for the jobs it depends on{on}"), None, Blocked)
        }
        "DependencyNeverSatisfied" => ex(
            code,
            "a job it depends on ended in a way that can never satisfy the dependency",
            s("cancel it and resubmit, or change the dependency (scontrol update)"),
            Never,
        ),
        "BeginTime" => ex(code, "it asked not to start before its begin time", None, Blocked),
        "JobHeldUser" => ex(
            code,
            "you (or another user of the job) put it on hold",
            s("release it (scontrol release) to let it run"),
            Never,
        ),
        "JobHeldAdmin" => ex(
            code,
            "an administrator put it on hold",
            s("ask your admins; only they can release it"),
            Never,
        ),
        "launch failed requeued held" | "launch_failed_requeued_held" => ex(
            code,
            "the job failed to launch on its node, was requeued and held",
            s("check the node/script, then release it (scontrol release) or resubmit"),
            Never,
        ),
        "PartitionTimeLimit" => {
            let words = match (ctx.time_limit, ctx.partition) {
                (Some(t), Some(p)) if p.max_time.known().is_some() => format!(
                    "time limit {} exceeds {}'s MaxTime {}",
                    duration(t),
                    p.name,
                    duration(p.max_time)
                ),
                _ => format!("its time limit is above {part_name}'s maximum"),
            };
            ex(code, words, Some(edit_hint(ctx, "time limit or partition")), Never)
        }
        "PartitionNodeLimit" => {
            let words = match (ctx.nodes, ctx.partition.and_then(|p| p.max_nodes)) {
                (Some(n), Some(max)) => {
                    format!("it asks for {n} nodes; {part_name} allows at most {max}")
                }
                _ => format!("its node count is outside {part_name}'s limits"),
            };
            ex(code, words, Some(edit_hint(ctx, "node count or partition")), Never)
        }
        "PartitionConfig" => ex(
            code,
            format!("the request does not fit {part_name}'s configuration (account, QOS, limits)"),
            Some(edit_hint(ctx, "request or partition")),
            Never,
        ),
        "PartitionDown" => ex(
            code,
            format!("{part_name} is down"),
            s("wait for the admins to bring it up, or move the job to another partition"),
            Blocked,
        ),
        "PartitionInactive" => ex(
            code,
            format!("{part_name} is inactive and takes no jobs"),
            s("move the job to another partition"),
            Never,
        ),
        "NodeDown" => ex(code, "a node it needs is down", None, Blocked),
        "ReqNodeNotAvail" => ex(
            code,
            "a node it needs is down, drained or reserved (often a maintenance reservation)",
            s("if its time limit runs into a maintenance, a shorter one may let it start"),
            Blocked,
        ),
        "Reservation" => ex(code, "it waits for its advanced reservation to start", None, Blocked),
        "BadConstraints" => ex(
            code,
            "no node can satisfy its constraints (features, memory, GPUs per node)",
            s("cancel and resubmit with a request the nodes can meet"),
            Never,
        ),
        "InvalidAccount" => ex(
            code,
            "its account is not valid for you",
            s("cancel and resubmit with an account you belong to (sacctmgr show assoc user=$USER)"),
            Never,
        ),
        "InvalidQOS" => ex(
            code,
            "its QOS is not valid for you or this account",
            s("cancel and resubmit with a QOS your association allows"),
            Never,
        ),
        "AccountNotAllowed" => ex(
            code,
            format!("your account may not use {part_name}"),
            Some(edit_hint(ctx, "partition or account")),
            Never,
        ),
        "QOSNotAllowed" => ex(
            code,
            format!("the job's QOS may not use {part_name}"),
            Some(edit_hint(ctx, "partition or QOS")),
            Never,
        ),
        "JobArrayTaskLimit" => ex(
            code,
            "the array's %N throttle is reached: more tasks start as others end",
            None,
            Blocked,
        ),
        "AssociationJobLimit" | "QOSJobLimit" => ex(
            code,
            "the limit on your running jobs is reached: it starts when another ends",
            None,
            Blocked,
        ),
        "AssociationResourceLimit" | "QOSResourceLimit" => ex(
            code,
            "your account/QOS is at a resource limit: it starts when your other jobs free it",
            None,
            Blocked,
        ),
        "AssociationTimeLimit" | "QOSTimeLimit" => ex(
            code,
            "its time limit exceeds what your account/QOS allows",
            Some(edit_hint(ctx, "time limit")),
            Never,
        ),
        "AccountingPolicy" => ex(code, "an accounting limit holds it back", None, Blocked),
        "Licenses" => ex(code, "it waits for licenses to become free", None, Blocked),
        "FrontEndDown" | "Prolog" | "Cleaning" => {
            ex(code, "the cluster is preparing or cleaning nodes", None, Waits)
        }
        "PowerUpNodeTimeout" | "NodeSuspended" => {
            ex(code, "its nodes are powering up or suspended", None, Blocked)
        }
        "SystemFailure" => ex(code, "a Slurm failure (file system, network…) stopped it", None, Blocked),
        "InactiveLimit" => ex(code, "it reached the system's inactive limit", None, Never),
        "BurstBufferResources" | "BurstBufferStageIn" | "BurstBufferOperation" => {
            ex(code, "it waits for its burst buffer", None, Blocked)
        }
        "WaitingForScheduling" => ex(code, "the scheduler has not evaluated it yet", None, Waits),
        "SchedDefer" => ex(code, "scheduling is deferred to the next cycle", None, Waits),
        "InvalidLicenses" => ex(
            code,
            "it asks for licenses the cluster does not have",
            s("cancel and resubmit without them"),
            Never,
        ),
        "MaxRequeue" => ex(code, "it was requeued too many times and is held", None, Never),
        _ => limit_family(code).unwrap_or_else(|| {
            ex(
                code,
                "Slurm gives no more detail (see \"JOB REASON CODES\" in man squeue)",
                None,
                Waits,
            )
        }),
    }
}

/// Why the backfill scheduler gives no start time for a job pending for `reason`.
pub fn why_no_estimate(reason: Option<&str>) -> String {
    let Some(r) = reason.filter(|r| !r.is_empty() && *r != "None") else {
        return "not yet evaluated by the backfill scheduler".to_string();
    };
    let e = explain(r, &Context::default());
    match (r, e.outlook) {
        ("Dependency", _) => "none while blocked by a dependency".to_string(),
        ("BeginTime", _) => "none before its begin time".to_string(),
        ("JobHeldUser" | "JobHeldAdmin", _) => "none while held".to_string(),
        (_, Outlook::Never) => format!("none: it cannot start as it is ({r})"),
        (_, Outlook::Blocked) => format!("none while {r} holds it back"),
        (_, Outlook::Waits) => "not yet evaluated by the backfill scheduler".to_string(),
    }
}

/// At most [`COMPACT_WIDTH`] characters for the queue's reason column: the code where it
/// says enough, plain words where it does not (`too long: E to edit`).
pub fn compact(reason: &str) -> String {
    let e = explain(reason, &Context::default());
    let short = match e.code.as_str() {
        "Priority" => "Priority: queued",
        "Resources" => "Resources: next",
        "Dependency" => "Dependency: waits",
        "DependencyNeverSatisfied" => "dependency failed",
        "BeginTime" => "BeginTime: later",
        "JobHeldUser" => "JobHeldUser (you)",
        "JobHeldAdmin" => "JobHeldAdmin",
        "PartitionTimeLimit" => "too long: E to edit",
        "PartitionNodeLimit" => "too many nodes: E",
        "ReqNodeNotAvail" => "node unavailable",
        "launch failed requeued held" => "launch failed, held",
        c if e.outlook == Outlook::Never && c.len() + 8 <= COMPACT_WIDTH => {
            return format!("{c} (stuck)")
        }
        c => return c.chars().take(COMPACT_WIDTH).collect(),
    };
    short.to_string()
}

pub const COMPACT_WIDTH: usize = 20;

/// Whether a pending job's reason says it is held: it cannot start until released, whatever
/// its start time says (a job requeued in held state shows its next eligible time in `%S`).
pub fn is_held(reason: Option<&str>) -> bool {
    match reason.map(str::trim) {
        Some("JobHeldUser" | "JobHeldAdmin") => true,
        Some(r) => r.to_ascii_lowercase().contains("held state"),
        None => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn polar() -> Partition {
        Partition {
            name: "polar".into(),
            max_time: SlurmDuration::parse("4:00:00").unwrap(),
            max_nodes: Some(2),
            ..Partition::default()
        }
    }

    const DOCUMENTED: &[&str] = &[
        "Resources",
        "Priority",
        "Dependency",
        "DependencyNeverSatisfied",
        "BeginTime",
        "JobHeldUser",
        "JobHeldAdmin",
        "PartitionTimeLimit",
        "PartitionNodeLimit",
        "PartitionConfig",
        "PartitionDown",
        "ReqNodeNotAvail",
        "Reservation",
        "QOSMaxGRESPerUser",
        "QOSMaxJobsPerUserLimit",
        "QOSMaxCpuPerUserLimit",
        "AssocGrpGRES",
        "AssocGrpCpuLimit",
        "AssocMaxJobsLimit",
        "AssocGrpBillingMinutes",
        "InvalidAccount",
        "InvalidQOS",
        "launch failed requeued held",
        "BadConstraints",
        "AssocGrpMemRunMinutes",
        "QOSGrpNodeLimit",
        "AssocMaxWallDurationPerJobLimit",
        "MaxGRESPerAccount",
        "QOSMaxGRESPerJob",
        "AccountNotAllowed",
        "NodeDown",
        "JobArrayTaskLimit",
    ];

    #[test]
    fn every_documented_reason_has_plain_words() {
        for r in DOCUMENTED {
            let e = explain(r, &Context::default());
            assert!(
                !e.words.contains("no more detail"),
                "{r} fell through: {e:?}"
            );
            assert!(!compact(r).is_empty());
        }
        let unknown = explain("SomethingNew", &Context::default());
        assert!(unknown.words.contains("man squeue"));
    }

    #[test]
    fn partition_time_limit_names_the_numbers_and_the_fix() {
        let p = polar();
        let ctx = Context {
            partition: Some(&p),
            time_limit: SlurmDuration::parse("10:00:00").ok(),
            edit_key: Some("E"),
            ..Context::default()
        };
        let e = explain("PartitionTimeLimit", &ctx);
        assert_eq!(
            e.words,
            "time limit 10:00:00 exceeds polar's MaxTime 4:00:00"
        );
        assert_eq!(
            e.fix.as_deref(),
            Some("E to edit the time limit or partition, or resubmit")
        );
        assert_eq!(e.outlook, Outlook::Never);
        let e = explain(
            "PartitionNodeLimit",
            &Context {
                partition: Some(&p),
                nodes: Some(4),
                ..Context::default()
            },
        );
        assert_eq!(e.words, "it asks for 4 nodes; polar allows at most 2");
        assert!(e.fix.unwrap().contains("scontrol update"));
    }

    #[test]
    fn limit_families_read_by_parts() {
        let e = explain("QOSMaxGRESPerUser", &Context::default());
        assert_eq!(
            e.words,
            "the QOS is at its GPU/GRES limit per user: it starts when your (or your group's) other jobs finish"
        );
        assert_eq!(e.outlook, Outlook::Blocked);
        let e = explain("AssocGrpBillingMinutes", &Context::default());
        assert!(
            e.words.contains("used up its billing-minutes allocation"),
            "{e:?}"
        );
        assert_eq!(e.outlook, Outlook::Never);
        let e = explain("QOSMaxGRESPerJob", &Context::default());
        assert!(e.words.contains("asks for more GPU/GRES"), "{e:?}");
        let e = explain("AssocGrpMemRunMinutes", &Context::default());
        assert!(e.words.contains("memory × time of running jobs"), "{e:?}");
        let e = explain("AssocMaxJobsLimit", &Context::default());
        assert!(e.words.contains("running jobs limit"), "{e:?}");
    }

    #[test]
    fn missing_estimates_say_why() {
        assert_eq!(why_no_estimate(Some("JobHeldUser")), "none while held");
        assert!(is_held(Some("JobHeldUser")) && is_held(Some("JobHeldAdmin")));
        // squeue's %r after `scontrol requeuehold`.
        assert!(is_held(Some("job requeued in held state")));
        assert!(!is_held(Some("BeginTime")) && !is_held(Some("Priority")) && !is_held(None));
        assert_eq!(
            why_no_estimate(Some("Dependency")),
            "none while blocked by a dependency"
        );
        assert!(why_no_estimate(Some("Priority")).contains("backfill"));
        assert!(why_no_estimate(Some("PartitionTimeLimit")).contains("cannot start"));
    }

    #[test]
    fn compact_forms_fit_the_column() {
        for r in DOCUMENTED {
            assert!(
                compact(r).chars().count() <= COMPACT_WIDTH,
                "{r}: {}",
                compact(r)
            );
        }
        assert_eq!(compact("JobHeldUser"), "JobHeldUser (you)");
        assert_eq!(compact("PartitionTimeLimit"), "too long: E to edit");
        assert_eq!(compact("InvalidQOS"), "InvalidQOS (stuck)");
        assert_eq!(compact("AssocGrpGRES"), "AssocGrpGRES");
    }
}
