//! The pending part of the detail pane: why it waits (with the partition's numbers), rank,
//! priority factors, fair-share, limit headroom and the partitions that could run it.

use ratatui::style::Style;

use super::{DetailWidget, Lines};
use crate::slurm::fit::{fits, JobRequest};
use crate::slurm::model::JobDetail;
use crate::slurm::pending::{factors, PendingInfo};
use crate::slurm::reason::Context;

/// What the App knows about the selected pending job beyond its squeue row.
#[derive(Debug, Clone, Default)]
pub struct PendingView<'a> {
    pub info: Option<&'a PendingInfo>,
    pub loading: bool,
    pub error: Option<&'a str>,
    /// The key that opens the edit form, named in fixes.
    pub edit_key: Option<&'a str>,
    /// How long the user's recent jobs like this one waited (shown under the estimate).
    pub waited: Option<crate::slurm::usage::waits::Waited>,
    /// When the answer shown was read (it is kept for every pending job of the user).
    pub as_of: Option<chrono::NaiveDateTime>,
    /// The maintenance window its time limit runs into, in words (`app::maintenance`).
    pub maintenance: Option<&'a str>,
    /// `:sooner`'s changes with the scheduler's estimates (`app::sooner::lines`).
    pub sooner: &'a [String],
}

impl<'a> DetailWidget<'a> {
    pub(super) fn reason_context(&self, dd: &'a JobDetail) -> Context<'a> {
        let part = self
            .job
            .map(|j| j.partition.as_str())
            .or(dd.partition.as_deref());
        Context {
            partition: self
                .pending
                .info
                .zip(part)
                .and_then(|(i, p)| i.partition(p)),
            time_limit: self.job.map(|j| j.time_limit).or(dd.time_limit),
            nodes: self.job.map(|j| j.nodes).or(dd.nodes),
            dependency: dd.dependency.as_deref(),
            edit_key: self.pending.edit_key,
        }
    }

    fn request(&self, dd: &JobDetail) -> JobRequest {
        let j = self.job;
        JobRequest {
            time_limit: j
                .map(|j| j.time_limit)
                .or(dd.time_limit)
                .unwrap_or_default(),
            nodes: j.map(|j| j.nodes).or(dd.nodes).unwrap_or(1),
            cpus: j.map(|j| j.cpus).or(dd.cpus).unwrap_or(1),
            gpus: j.map(|j| j.gpus()).unwrap_or_else(|| dd.gpus()),
            account: j
                .map(|j| j.account.to_string())
                .or(dd.account.clone())
                .unwrap_or_default(),
            qos: j
                .map(|j| j.qos.to_string())
                .or(dd.qos.clone())
                .unwrap_or_default(),
        }
    }

    pub(super) fn pending_lines(&self, l: &mut Lines, dd: &JobDetail) {
        let t = self.theme;
        let p = &self.pending;
        if let Some(e) = p.error {
            l.field("Queue info", &format!("could not load: {e}"), t.error());
        }
        let Some(info) = p.info else {
            if p.loading {
                l.field("Rank", "reading (sprio, sshare, scontrol)…", t.dim());
            }
            return;
        };
        // A kept answer: its age, and that a newer one is on its way.
        let age = p.as_of.map(|at| (at, (self.now - at).num_seconds()));
        match (p.loading, age) {
            (true, Some((at, _))) => l.field(
                "Queue info",
                &format!(
                    "read {}, reading again…",
                    crate::queue::format::human_ago(at, self.now)
                ),
                t.dim(),
            ),
            (false, Some((at, a))) if a >= 60 => l.field(
                "Queue info",
                &format!("read {}", crate::queue::format::human_ago(at, self.now)),
                t.dim(),
            ),
            _ => {}
        }
        match &info.rank {
            Some(r) => {
                let before = r.position.saturating_sub(1);
                let ties = before.saturating_sub(r.ahead);
                let mut ahead = match before {
                    0 => "first in line".to_string(),
                    1 => "1 job ahead".to_string(),
                    n => format!("{n} jobs ahead"),
                };
                if ties > 0 {
                    ahead.push_str(&format!(", {ties} of equal priority submitted earlier"));
                }
                l.plain("Rank", &format!("{} ({ahead})", r.text()));
            }
            None => l.field("Rank", "not among the partition's pending jobs", t.dim()),
        }
        if let Some(m) = p.maintenance {
            l.field("Maintenance", m, t.warn());
            if p.sooner.is_empty() {
                l.field(
                    "Sooner",
                    ":sooner asks the scheduler which change starts it sooner",
                    t.dim(),
                );
            }
        }
        for (i, s) in p.sooner.iter().enumerate() {
            l.plain(if i == 0 { "Sooner if" } else { "" }, s);
        }
        let part = self.job.map(|j| j.partition.as_str()).unwrap_or("");
        let id = self.job.map(|j| &j.id).or(info.id.as_ref());
        let asked = info.asked_as.as_ref();
        let mine: Vec<_> = info
            .sprio
            .iter()
            .filter(|r| Some(&r.id) == id || Some(&r.id) == asked)
            .collect();
        let row = mine
            .iter()
            .find(|r| r.partition == part)
            .or(mine.first())
            .copied();
        if let Some(r) = row {
            let f = factors(r);
            let parts: Vec<String> = f
                .iter()
                .filter(|(_, v)| *v > 0.0)
                .map(|(n, v)| format!("{n} {}", trim_num(*v)))
                .collect();
            let mut text = format!("{} = {}", r.priority, parts.join(" + "));
            if let Some((name, _)) = f.first().filter(|(_, v)| *v > 0.0) {
                text.push_str(&format!("; {name} weighs most"));
            }
            l.plain("Factors", &text);
        } else if self
            .job
            .and_then(|j| j.reason.as_deref())
            .is_some_and(|r| r.starts_with("JobHeld"))
        {
            l.field("Factors", "none while held (priority 0)", t.dim());
        }
        if let (Some(a), Some(id)) = (asked, id) {
            l.field(
                "Asked as",
                &format!("{a}, the array's own id (sprio refuses a folded id like {id})"),
                t.dim(),
            );
        }
        let user = self.job.map(|j| j.user.as_str()).unwrap_or("");
        let acct_row = info.sshare.iter().find(|s| s.user.is_none());
        let user_row = info.sshare.iter().find(|s| s.user.as_deref() == Some(user));
        if user_row.is_some() || acct_row.is_some() {
            let mut parts = Vec::new();
            if let Some(u) = user_row {
                if let Some(f) = u.fairshare {
                    parts.push(format!("you {f:.3}"));
                }
            }
            if let Some(a) = acct_row {
                let share = a
                    .norm_shares
                    .map(|n| format!("{n:.3}"))
                    .unwrap_or("-".into());
                let used = a
                    .effective_usage
                    .map(|n| format!("{n:.3}"))
                    .unwrap_or("-".into());
                parts.push(format!(
                    "account {} share {share}, used {used}",
                    a.account.trim()
                ));
            }
            l.plain("Fair-share", &parts.join(" · "));
        }
        // The limit the job's reason (as of the last refresh) names, from slurmctld's count.
        let reason = self.job.and_then(|j| j.reason.as_deref());
        if let Some(h) = info.limit_hit(reason) {
            let reason = reason.unwrap_or("");
            l.field("Limit hit", &format!("{} ({reason})", h.text), t.warn());
        }
        if info.headroom.is_empty() {
            l.field("Limits", "no association or QOS limits set", t.dim());
        } else {
            for (i, h) in info.headroom.iter().enumerate() {
                let style = if h.full { t.warn() } else { Style::new() };
                l.field(if i == 0 { "Limits" } else { "" }, &h.text, style);
            }
        }
        if !info.partitions.is_empty() {
            let req = self.request(dd);
            let mut ok = Vec::new();
            let mut no = Vec::new();
            for p in &info.partitions {
                match fits(p, &req) {
                    Ok(()) => ok.push(p.name.clone()),
                    Err(why) => no.push(format!("{} ({why})", p.name)),
                }
            }
            if !ok.is_empty() {
                l.plain("Fits in", &ok.join(", "));
            }
            if !no.is_empty() {
                l.field("Not in", &no.join(", "), t.dim());
            }
        }
        for p in &info.problems {
            l.field("Problem", p, t.error());
        }
    }
}

fn trim_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}
