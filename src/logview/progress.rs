//! Progress read from a log as it streams in: tqdm bars (`45%|████▌ | 450/1000
//! [01:23<01:40, 5.4it/s]`, each update after a `\r`), `step N/M`, `epoch N/M` (also
//! `Epoch [3/10]`), a bare `[N/M]`, a bare `N%`, and the user's own patterns
//! (`[progress] patterns`). Pure: [`Patterns::latest`] reads a piece of text, a
//! [`Tracker`] follows one job's log over time and works out the finish from the rate it
//! observed. Costs nothing remote: it reads the bytes the log pane's tailer delivers.

use chrono::NaiveDateTime;
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::slurm::model::{Job, SlurmDuration, Status};

/// Most bytes at the end of each delivered piece that are searched: the latest progress is
/// at the end, and a flood of output costs no more than this per piece.
pub const SCAN: usize = 64 << 10;
/// Most bytes of an unfinished line kept to be read again with the next piece.
const CARRY: usize = 4 << 10;

/// The built-in readers, by the name `[progress] builtins` uses, in the order they are
/// tried on one line.
pub const BUILTINS: &[&str] = &["tqdm", "step", "epoch", "fraction", "percent"];

/// `[progress]` in the config.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ProgressConfig {
    /// Which built-in readers are on (all by default; `percent` reads any `N%` in a log and
    /// is the one to leave out when the program prints other percentages).
    pub builtins: Vec<String>,
    /// Regular expressions with the named groups `done` and `total`, or `percent` (and
    /// optionally `remaining`, seconds or `H:MM:SS`), tried after the built-in ones.
    pub patterns: Vec<String>,
}

impl Default for ProgressConfig {
    fn default() -> Self {
        ProgressConfig {
            builtins: BUILTINS.iter().map(|s| s.to_string()).collect(),
            patterns: Vec::new(),
        }
    }
}

/// A config entry that cannot be used: the key and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternError {
    pub key: String,
    pub reason: String,
}

/// Which reader found a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Tqdm,
    Step,
    Epoch,
    Fraction,
    Percent,
    /// `[progress] patterns[i]`.
    Custom(usize),
}

impl Source {
    pub fn name(self) -> String {
        match self {
            Source::Tqdm => "tqdm bar".into(),
            Source::Step => "step".into(),
            Source::Epoch => "epoch".into(),
            Source::Fraction => "[N/M]".into(),
            Source::Percent => "N%".into(),
            Source::Custom(i) => format!("pattern {}", i + 1),
        }
    }
}

/// One reading of progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// 0.0..=1.0.
    pub fraction: f64,
    pub done: Option<u64>,
    pub total: Option<u64>,
    /// The program's own estimate of the time left (tqdm's `<01:40`), in seconds.
    pub remaining: Option<u64>,
    pub source: Source,
}

#[derive(Debug, Clone)]
struct Reader {
    source: Source,
    re: Regex,
}

/// The readers in use, built-ins first.
#[derive(Debug, Clone)]
pub struct Patterns {
    readers: Vec<Reader>,
}

const TQDM: &str = r"(\d{1,3})%\|[^|\r\n]{0,400}\|\s*([0-9.]+[kMGTPEZY]?)/([0-9.]+[kMGTPEZY]?)\s*\[([0-9:]+)<([0-9:]+|\?)[,\]]";
const STEP: &str = r"(?i)(?-u:\b)(?:global[_ ])?(?:step|iter|iteration|batch)s?\s*[:=#]?\s*\[?\s*(\d+)\s*(?:/|of)\s*(\d+)";
const EPOCH: &str = r"(?i)(?-u:\b)epochs?\s*[:=#]?\s*\[?\s*(\d+)\s*(?:/|of)\s*(\d+)";
const FRACTION: &str = r"\[\s*(\d+)\s*/\s*(\d+)\s*\]";
const PERCENT: &str = r"(?-u:\b)(\d{1,3}(?:\.\d+)?)\s?%";

fn builtin(name: &str) -> Option<(Source, &'static str)> {
    Some(match name {
        "tqdm" => (Source::Tqdm, TQDM),
        "step" => (Source::Step, STEP),
        "epoch" => (Source::Epoch, EPOCH),
        "fraction" => (Source::Fraction, FRACTION),
        "percent" => (Source::Percent, PERCENT),
        _ => return None,
    })
}

impl Default for Patterns {
    fn default() -> Self {
        // The built-ins are constants known to compile (tested).
        Patterns::new(&ProgressConfig::default()).unwrap_or(Patterns {
            readers: Vec::new(),
        })
    }
}

impl Patterns {
    /// The readers `config` turns on: a name not among [`BUILTINS`], a pattern that does not
    /// compile or lacks the named groups is an error naming its key.
    pub fn new(config: &ProgressConfig) -> Result<Patterns, PatternError> {
        let mut readers = Vec::new();
        // In the order of BUILTINS, whatever the order in the config.
        for name in &config.builtins {
            if builtin(name).is_none() {
                return Err(PatternError {
                    key: "progress.builtins".into(),
                    reason: format!("unknown reader `{name}` (known: {})", BUILTINS.join(", ")),
                });
            }
        }
        for name in BUILTINS {
            if config.builtins.iter().any(|b| b == name) {
                if let Some((source, re)) = builtin(name) {
                    // ASCII classes: the automaton stays fast over bars of █ and other
                    // non-ASCII text.
                    let re = Regex::new(&format!("(?-u){re}")).map_err(|e| PatternError {
                        key: "progress.builtins".into(),
                        reason: e.to_string(),
                    })?;
                    readers.push(Reader { source, re });
                }
            }
        }
        for (i, p) in config.patterns.iter().enumerate() {
            let key = format!("progress.patterns[{i}]");
            let re = Regex::new(p).map_err(|e| PatternError {
                key: key.clone(),
                reason: format!("not a regular expression: {e}"),
            })?;
            let names: Vec<&str> = re.capture_names().flatten().collect();
            let has = |n: &str| names.contains(&n);
            if !(has("percent") || (has("done") && has("total"))) {
                return Err(PatternError {
                    key,
                    reason: format!(
                        "`{p}` needs the named groups (?P<done>…) and (?P<total>…), or (?P<percent>…)"
                    ),
                });
            }
            readers.push(Reader {
                source: Source::Custom(i),
                re,
            });
        }
        Ok(Patterns { readers })
    }

    pub fn is_empty(&self) -> bool {
        self.readers.is_empty()
    }

    /// The latest reading in `text`: the one on the last line (or `\r`-separated update)
    /// that has any; on one line, the first reader in order. Only the last [`SCAN`] bytes
    /// are searched.
    pub fn latest(&self, text: &[u8]) -> Option<Reading> {
        let text = &text[text.len().saturating_sub(SCAN)..];
        // (line start, reader order, reading)
        let mut best: Option<(usize, usize, Reading)> = None;
        for (order, r) in self.readers.iter().enumerate() {
            // The last valid match of this reader: matches found without their groups
            // (fast), then read from the last back.
            let starts: Vec<usize> = r.re.find_iter(text).map(|m| m.start()).collect();
            let last = starts.iter().rev().find_map(|&at| {
                let caps = r.re.captures_at(text, at)?;
                Some((at, read(r.source, &caps)?))
            });
            let Some((at, reading)) = last else { continue };
            let line = text[..at]
                .iter()
                .rposition(|&b| b == b'\n' || b == b'\r')
                .map_or(0, |p| p + 1);
            let better = match &best {
                None => true,
                Some((l, o, _)) => line > *l || (line == *l && order < *o),
            };
            if better {
                best = Some((line, order, reading));
            }
        }
        best.map(|(_, _, r)| r)
    }
}

fn text<'a>(caps: &'a regex::bytes::Captures, i: usize) -> Option<&'a str> {
    caps.get(i)
        .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
}

fn named<'a>(caps: &'a regex::bytes::Captures, n: &str) -> Option<&'a str> {
    caps.name(n)
        .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
        .map(str::trim)
}

/// `N/M` as a reading: None when M is 0 or either does not read.
fn of(done: &str, total: &str, source: Source) -> Option<Reading> {
    let (d, t): (u64, u64) = (done.parse().ok()?, total.parse().ok()?);
    if t == 0 {
        return None;
    }
    Some(Reading {
        fraction: (d as f64 / t as f64).min(1.0),
        done: Some(d),
        total: Some(t),
        remaining: None,
        source,
    })
}

fn percent(p: &str, source: Source) -> Option<Reading> {
    let v: f64 = p.parse().ok()?;
    if !(0.0..=100.0).contains(&v) {
        return None;
    }
    Some(Reading {
        fraction: v / 100.0,
        done: None,
        total: None,
        remaining: None,
        source,
    })
}

/// `01:40`, `3:52:13`, `95` (seconds); None for `?`.
pub fn clock_secs(s: &str) -> Option<u64> {
    let mut secs: u64 = 0;
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty() || p.len() > 6) {
        return None;
    }
    for p in parts {
        secs = secs.checked_mul(60)?.checked_add(p.parse().ok()?)?;
    }
    Some(secs)
}

fn read(source: Source, caps: &regex::bytes::Captures) -> Option<Reading> {
    match source {
        Source::Tqdm => {
            let mut r = percent(text(caps, 1)?, source)?;
            // The counts are finer than tqdm's whole percent, when they are plain numbers
            // (`1.50M` with unit scaling is not).
            if let Some(exact) = of(text(caps, 2)?, text(caps, 3)?, source) {
                if exact.done <= exact.total {
                    r = exact;
                }
            }
            r.remaining = clock_secs(text(caps, 5)?);
            Some(r)
        }
        Source::Step | Source::Fraction => of(text(caps, 1)?, text(caps, 2)?, source),
        Source::Epoch => {
            // `Epoch 3/10` is printed as epoch 3 begins: two are done.
            let n: u64 = text(caps, 1)?.parse().ok()?;
            let mut r = of(&n.saturating_sub(1).to_string(), text(caps, 2)?, source)?;
            r.done = Some(n);
            Some(r)
        }
        Source::Percent => percent(text(caps, 1)?, source),
        Source::Custom(_) => {
            let mut r = match (named(caps, "done"), named(caps, "total")) {
                (Some(d), Some(t)) => of(d, t, source)?,
                _ => percent(named(caps, "percent")?, source)?,
            };
            r.remaining = named(caps, "remaining").and_then(clock_secs);
            Some(r)
        }
    }
}

/// One job's progress as its log streams in.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// The unfinished last line of each stream (stdout, stderr), read again with the next
    /// piece: a tqdm update arrives as `\r` and the bar, and a piece may end inside one.
    carry: [Vec<u8>; 2],
    latest: Option<Seen>,
    /// The first change seen in the current series: (when, fraction). The first reading
    /// is not one: a line read when the log is opened may have been written long before.
    base: Option<(NaiveDateTime, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    reading: Reading,
    /// When it was read (first: the same reading read again keeps its time).
    at: NaiveDateTime,
    /// When the fraction last changed (the first reading: when it was read).
    changed: NaiveDateTime,
}

impl Tracker {
    /// Forget the unfinished line of `stream` (the file is read afresh or skipped ahead).
    pub fn restart(&mut self, stream: super::Stream) {
        self.carry[ix(stream)].clear();
    }

    /// Takes in new bytes of `stream`, read at `at`; whether the reading changed.
    pub fn feed(
        &mut self,
        patterns: &Patterns,
        stream: super::Stream,
        bytes: &[u8],
        at: NaiveDateTime,
    ) -> bool {
        if bytes.is_empty() || patterns.is_empty() {
            return false;
        }
        let carry = &mut self.carry[ix(stream)];
        let mut text = std::mem::take(carry);
        text.extend_from_slice(bytes);
        let found = patterns.latest(&text);
        let tail = text
            .iter()
            .rposition(|&b| b == b'\n' || b == b'\r')
            .map_or(0, |p| p + 1);
        if text.len() - tail <= CARRY {
            text.drain(..tail);
            *carry = text;
        }
        match found {
            Some(r) => self.observe(r, at),
            None => false,
        }
    }

    /// A reading taken at `at`; whether it differs from the last.
    pub fn observe(&mut self, r: Reading, at: NaiveDateTime) -> bool {
        let Some(last) = self.latest else {
            self.latest = Some(Seen {
                reading: r,
                at,
                changed: at,
            });
            return true;
        };
        let same_series = last.reading.source == r.source
            && last.reading.total == r.total
            && r.fraction >= last.reading.fraction;
        if !same_series {
            // Another bar, or this one started over: its rate is not the last one's.
            self.base = None;
            self.latest = Some(Seen {
                reading: r,
                at,
                changed: at,
            });
            return true;
        }
        if r == last.reading {
            // The same reading again: an unfinished line read once more with the next piece
            // (a tqdm bar, then other output), not a new one. Its time and tqdm's estimate
            // stay those of when it was first read.
            return false;
        }
        let moved = r.fraction > last.reading.fraction;
        if moved && self.base.is_none() {
            self.base = Some((at, r.fraction));
        }
        self.latest = Some(Seen {
            reading: r,
            at,
            changed: if moved { at } else { last.changed },
        });
        true
    }

    pub fn reading(&self) -> Option<&Reading> {
        self.latest.as_ref().map(|s| &s.reading)
    }

    /// When the latest reading was read.
    pub fn seen_at(&self) -> Option<NaiveDateTime> {
        self.latest.map(|s| s.at)
    }

    /// Progress per second between the first change seen and the latest one: None until
    /// two changes at least a second apart.
    pub fn rate(&self) -> Option<f64> {
        let (t0, f0) = self.base?;
        let s = self.latest?;
        let secs = (s.changed - t0).num_milliseconds() as f64 / 1000.0;
        let rate = (s.reading.fraction - f0) / secs;
        (secs >= 1.0 && rate > 0.0 && rate.is_finite()).then_some(rate)
    }

    /// When it should be done: from the program's own estimate of the time left when it
    /// gives one (tqdm), else from the observed rate; None from one reading alone.
    pub fn finish(&self) -> Option<NaiveDateTime> {
        let s = self.latest?;
        if s.reading.fraction >= 1.0 {
            return Some(s.at);
        }
        let secs = match (s.reading.remaining, self.rate()) {
            (Some(r), _) => return Some(s.at + secs(r as f64)?),
            (None, Some(rate)) => (1.0 - s.reading.fraction) / rate,
            (None, None) => return None,
        };
        Some(s.changed + self::secs(secs)?)
    }

    /// What the queue and the detail pane show, against the job's time limit (from its
    /// queue row, read at `listed_at`).
    pub fn summary(&self, job: Option<&Job>, listed_at: Option<NaiveDateTime>) -> Option<Summary> {
        let s = self.latest?;
        Some(Summary {
            reading: s.reading,
            seen_at: s.at,
            finish: self.finish(),
            limit_end: job.and_then(|j| limit_end(j, listed_at)),
            status: job.map_or(Status::Running, |j| j.status()),
        })
    }
}

fn ix(s: super::Stream) -> usize {
    match s {
        super::Stream::Stdout => 0,
        super::Stream::Stderr => 1,
    }
}

fn secs(s: f64) -> Option<chrono::Duration> {
    // Beyond a year is no estimate.
    (s.is_finite() && (0.0..=366.0 * 86400.0).contains(&s))
        .then(|| chrono::Duration::milliseconds((s * 1000.0) as i64))
}

/// When a running job reaches its time limit: its time used as squeue said at `listed_at`,
/// the rest of its limit after that. None without a known limit or while it is not running.
pub fn limit_end(job: &Job, listed_at: Option<NaiveDateTime>) -> Option<NaiveDateTime> {
    if job.status() != Status::Running {
        return None;
    }
    let limit = job.time_limit.known()?.as_secs();
    let used = job.time_used.known()?.as_secs();
    let at = listed_at?;
    let left = i64::try_from(limit.saturating_sub(used)).ok()?;
    Some(at + chrono::Duration::seconds(left))
}

/// A job's progress as shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub reading: Reading,
    pub seen_at: NaiveDateTime,
    pub finish: Option<NaiveDateTime>,
    pub limit_end: Option<NaiveDateTime>,
    /// The job's status when this was worked out: once it ended there is nothing to
    /// estimate, only where it got to.
    pub status: Status,
}

impl Summary {
    /// The estimate lands after the time limit: the job reaches its limit first.
    pub fn late(&self) -> bool {
        matches!((self.finish, self.limit_end), (Some(f), Some(l)) if f > l && self.reading.fraction < 1.0)
    }

    pub fn percent(&self) -> u32 {
        (self.reading.fraction * 100.0).floor() as u32
    }

    /// `62`, or `<1` for a start that is not yet one percent.
    fn percent_text(&self) -> String {
        match self.percent() {
            0 if self.reading.fraction > 0.0 => "<1".into(),
            p => p.to_string(),
        }
    }

    /// Seconds from `now` to the estimated finish (0 once it has passed).
    pub fn eta_secs(&self, now: NaiveDateTime) -> Option<u64> {
        self.finish
            .map(|f| (f - now).num_seconds().max(0).unsigned_abs())
    }

    /// The job has ended: it finished (`Some(true)`), or it stopped on an error or a cancel
    /// (`Some(false)`). None while it may still go on.
    pub fn ended(&self) -> Option<bool> {
        match self.status {
            Status::Complete => Some(true),
            Status::Error | Status::Canceled => Some(false),
            Status::Pending | Status::Running | Status::Paused | Status::Unknown => None,
        }
    }

    /// The queue's cell: `62% 5h10m`, with `!` when the time limit comes first; `done` once
    /// the job completed, `62% ended` once it stopped short.
    pub fn cell(&self, now: NaiveDateTime) -> String {
        match self.ended() {
            Some(true) => return "done".into(),
            Some(false) => return format!("{}% ended", self.percent_text()),
            None => {}
        }
        let mut s = format!("{}%", self.percent_text());
        if let (Some(eta), true) = (self.eta_secs(now), self.reading.fraction < 1.0) {
            s.push(' ');
            s.push_str(&SlurmDuration::from_secs(eta).human());
        }
        if self.late() {
            s.push('!');
        }
        s
    }

    /// The detail pane's line: `62 % · ETA 5 h 10 m · limit in 3 h`.
    pub fn line(&self, now: NaiveDateTime) -> String {
        let mut parts = vec![format!("{} %", self.percent_text())];
        if let Some(finished) = self.ended() {
            parts.push(
                if finished {
                    "the job completed"
                } else {
                    "where it stopped"
                }
                .into(),
            );
            return parts.join(" · ");
        }
        if self.reading.fraction >= 1.0 {
            parts.push("done".into());
        } else {
            match self.eta_secs(now) {
                Some(eta) => parts.push(format!("ETA {}", spaced(eta))),
                None => parts.push("ETA after the next change".into()),
            }
        }
        if let Some(l) = self.limit_end {
            let left = (l - now).num_seconds().max(0).unsigned_abs();
            parts.push(format!("limit in {}", spaced(left)));
        }
        parts.join(" · ")
    }

    /// Where the reading came from: `450/1000 · tqdm bar · read 12 s ago`.
    pub fn source_line(&self, now: NaiveDateTime) -> String {
        let r = &self.reading;
        let mut parts = Vec::new();
        match (r.source, r.done, r.total) {
            (Source::Epoch, Some(d), Some(t)) => parts.push(format!("epoch {d} of {t}")),
            (_, Some(d), Some(t)) => parts.push(format!("{d}/{t}")),
            _ => {}
        }
        parts.push(r.source.name());
        let ago = (now - self.seen_at).num_seconds().max(0).unsigned_abs();
        parts.push(if ago < 2 {
            "read just now".into()
        } else {
            format!("read {} ago", spaced(ago))
        });
        parts.join(" · ")
    }
}

/// `5 h 10 m`, `3 h`, `45 s`, `2 d 4 h`: two units at most.
pub fn spaced(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let units = [(d, "d"), (h, "h"), (m, "m"), (s, "s")];
    let first = units.iter().position(|(v, _)| *v > 0).unwrap_or(3);
    units[first..]
        .iter()
        .take(2)
        .enumerate()
        .filter(|(i, (v, _))| *i == 0 || *v > 0)
        .map(|(_, (v, u))| format!("{v} {u}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "progress_tests.rs"]
mod tests;
