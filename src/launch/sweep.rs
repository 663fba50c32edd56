//! Sweeps: one job array whose tasks each run one set of values, handed to the task as
//! environment variables. A sweep is a grid (every combination of lists of values) or a
//! list of runs (one line per run, e.g. read from a file); `throttle` caps how many run at
//! once (`--array=0-11%3`). The values are written into the submitted script itself (a
//! `case` on `SLURM_ARRAY_TASK_ID`), so they are covered by the script's checksum, and a
//! rerun of some of the tasks (`rerun ID --failed`) runs those tasks with their own values.
//!
//! The text form, as the form and `--set sweep=...` take it:
//! - a grid: `LR=1e-3,3e-4 BATCH=32,64 %3` (4 runs, at most 3 at once);
//! - runs: `LR=1e-3 BATCH=32; LR=3e-4 BATCH=64` (2 runs, separated by `;`).
//!
//! Values with spaces, commas or `;` are quoted (`NOTE="a, b"`); in a TOML template the
//! grid is a table of lists (`[templates.x.sweep]` with `LR = [1e-3, 3e-4]`, `throttle = 3`,
//! and `runs = ["LR=1e-3 BATCH=32", ...]` or `file = "points.txt"` for runs).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::slurm::jobid::ArraySpec;

/// More runs than this in one sweep is refused before anything is expanded (Slurm's own
/// MaxArraySize, 1001 unless the site raised it, is checked by sbatch).
pub const MAX_RUNS: usize = 10_000;

/// Table keys of a template's `[sweep]` that are not variables.
const RESERVED: &[&str] = &["throttle", "runs", "file"];

/// The variable each task gets with its whole run (`LR=1e-3 BATCH=32`), for the job's logs.
pub const RUN_VAR: &str = "SLURMDASH_SWEEP_RUN";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// A grid: every combination of these values is one run, the first name varying
    /// slowest (as nested loops written in this order). A TOML table keeps no order: a
    /// template's names come in alphabetical order.
    pub axes: Vec<(String, Vec<String>)>,
    /// Runs given one by one, instead of a grid.
    pub runs: Vec<Vec<(String, String)>>,
    /// At most this many runs at once (`%N`); 0: as many as the scheduler starts.
    pub throttle: u32,
}

/// One run's values, in order.
pub type Run = Vec<(String, String)>;

impl Sweep {
    pub fn is_empty(&self) -> bool {
        self.axes.is_empty() && self.runs.is_empty()
    }

    /// Every run, in array-index order, checked: names that can be environment variables,
    /// values without control characters, the same names in every run, at most
    /// [`MAX_RUNS`].
    pub fn points(&self) -> Result<Vec<Run>, String> {
        if !self.axes.is_empty() && !self.runs.is_empty() {
            return Err("a sweep is a grid of values or a list of runs, not both".into());
        }
        let mut count: usize = 1;
        for (name, values) in &self.axes {
            check_name(name)?;
            if values.is_empty() {
                return Err(format!("sweep variable {name} has no values"));
            }
            count = count
                .checked_mul(values.len())
                .filter(|&n| n <= MAX_RUNS)
                .ok_or_else(|| format!("the sweep's grid has more than {MAX_RUNS} runs"))?;
        }
        let points: Vec<Run> = if self.axes.is_empty() {
            if self.runs.len() > MAX_RUNS {
                return Err(format!(
                    "the sweep has {} runs; at most {MAX_RUNS}",
                    self.runs.len()
                ));
            }
            self.runs.clone()
        } else {
            (0..count).map(|i| self.grid_point(i)).collect()
        };
        let first: Vec<&str> = points
            .first()
            .map(|r| r.iter().map(|(k, _)| k.as_str()).collect())
            .unwrap_or_default();
        for (i, run) in points.iter().enumerate() {
            if run.is_empty() {
                return Err(format!("sweep run {} sets no variable", i + 1));
            }
            let mut seen: Vec<&str> = Vec::new();
            for (k, v) in run {
                check_name(k)?;
                check_value(k, v)?;
                if seen.contains(&k.as_str()) {
                    return Err(format!("sweep run {} sets {k} twice", i + 1));
                }
                seen.push(k);
            }
            let mut names = seen.clone();
            let mut want = first.clone();
            names.sort_unstable();
            want.sort_unstable();
            if names != want {
                return Err(format!(
                    "sweep run {} sets {}, the first run sets {}: every run sets the same names",
                    i + 1,
                    seen.join(" "),
                    first.join(" ")
                ));
            }
        }
        Ok(points)
    }

    /// The `i`th combination of the grid (the last axis varies fastest).
    fn grid_point(&self, mut i: usize) -> Run {
        let mut run: Run = Vec::with_capacity(self.axes.len());
        for (name, values) in self.axes.iter().rev() {
            let n = values.len().max(1);
            run.push((name.clone(), values[i % n].clone()));
            i /= n;
        }
        run.reverse();
        run
    }

    /// Parses the text form (see the module doc).
    pub fn parse(text: &str) -> Result<Sweep, String> {
        let mut sweep = Sweep::default();
        let tokens = tokenize(text)?;
        let is_runs = tokens.iter().any(|t| matches!(t, Tok::Semi));
        let mut run: Run = Vec::new();
        for t in tokens {
            match t {
                Tok::Throttle(n) => sweep.throttle = n,
                Tok::Semi => {
                    if !run.is_empty() {
                        sweep.runs.push(std::mem::take(&mut run));
                    }
                }
                Tok::Pair(name, values) => {
                    if is_runs {
                        let v = if values.len() == 1 {
                            values.into_iter().next().unwrap_or_default()
                        } else {
                            return Err(format!(
                                "{name}: one value per name in a list of runs (runs are separated by `;`; quote a value with a comma)"
                            ));
                        };
                        run.push((name, v));
                    } else {
                        if sweep.axes.iter().any(|(n, _)| *n == name) {
                            return Err(format!("sweep variable {name} is given twice"));
                        }
                        sweep.axes.push((name, values));
                    }
                }
            }
        }
        if !run.is_empty() {
            sweep.runs.push(run);
        }
        sweep.points()?;
        Ok(sweep)
    }

    /// Runs read from a file of one run per line (`LR=1e-3 BATCH=32`); empty lines and
    /// lines starting with `#` are skipped. Errors name the line.
    pub fn runs_from_lines(text: &str) -> Result<Vec<Run>, String> {
        let mut runs = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let run = parse_run(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            runs.push(run);
        }
        if runs.is_empty() {
            return Err("no runs in it (one run per line, like `LR=1e-3 BATCH=32`)".into());
        }
        Ok(runs)
    }

    /// How many runs, when the sweep is valid.
    pub fn len(&self) -> usize {
        self.points().map(|p| p.len()).unwrap_or(0)
    }
}

/// The `--array` of a sweep of `n` runs: every index, or the indices given (a rerun's
/// failed tasks, or a subset typed in the array field), which must be runs of the sweep;
/// the throttle applies unless the indices carry their own `%N`.
pub fn array_for(n: usize, given: Option<&ArraySpec>, throttle: u32) -> Result<String, String> {
    let last = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
    let mut spec = match given {
        None => ArraySpec {
            ranges: vec![(0, last, 1)],
            max_running: None,
            truncated: false,
        },
        Some(a) => {
            if let Some(&(_, b, _)) = a.ranges.iter().find(|r| r.1 > last) {
                return Err(format!(
                    "array index {b} is not a run of the sweep: it has {n} run{} (indices 0-{last})",
                    if n == 1 { "" } else { "s" }
                ));
            }
            a.clone()
        }
    };
    if spec.max_running.is_none() && throttle > 0 {
        spec.max_running = Some(throttle);
    }
    Ok(spec.to_string())
}

/// The part of the script that gives this task its run: a `case` on the array index,
/// every value quoted, and [`RUN_VAR`] with the whole run; an index that is not a run of
/// the sweep ends the task with an error before anything runs.
pub fn script_case(runs: &[Run]) -> String {
    use crate::launch::quote::quote;
    use std::fmt::Write as _;
    let mut s = format!(
        "\n# Sweep of {} runs: this task's values, by its array index.\ncase \"${{SLURM_ARRAY_TASK_ID:-}}\" in\n",
        runs.len()
    );
    for (i, run) in runs.iter().enumerate() {
        let exports: Vec<String> = run
            .iter()
            .map(|(k, v)| format!("export {k}={}", quote(v)))
            .collect();
        let _ = writeln!(
            s,
            "  {i}) {}; export {RUN_VAR}={} ;;",
            exports.join("; "),
            quote(&run_text(run))
        );
    }
    let _ = writeln!(
        s,
        "  *) echo \"slurmdash: array task ${{SLURM_ARRAY_TASK_ID:-?}} is not one of this sweep's {} runs: not run\" >&2; exit 12 ;;\nesac\necho \"slurmdash: sweep run $SLURM_ARRAY_TASK_ID: ${RUN_VAR}\" >&2",
        runs.len()
    );
    s
}

/// A template's `sweep.file` (one run per line, relative to `base`, the directory of the
/// file the template is in), read into `sweep.runs` where the template is loaded. Errors
/// name the file and its line.
pub fn read_file_runs(template: &mut toml::Table, base: &std::path::Path) -> Result<(), String> {
    let Some(toml::Value::Table(sweep)) = template.get_mut("sweep") else {
        return Ok(());
    };
    let Some(file) = sweep.remove("file") else {
        return Ok(());
    };
    let toml::Value::String(file) = file else {
        return Err("must be the path of a file of runs, one per line".into());
    };
    if sweep.contains_key("runs") {
        return Err("give `file` or `runs`, not both".into());
    }
    let path = base.join(&file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let runs = Sweep::runs_from_lines(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<toml::Value> = runs
        .iter()
        .map(|r| toml::Value::String(run_text(r)))
        .collect();
    sweep.insert("runs".into(), toml::Value::Array(lines));
    Ok(())
}

/// What the registry keeps of a submission's sweep: each run's text by array index, empty
/// for the runs this submission does not run (a rerun of some of the tasks).
pub fn registry_runs(runs: &[Run], array: Option<&str>) -> Vec<String> {
    let chosen: Option<std::collections::HashSet<u32>> =
        array.and_then(|a| ArraySpec::parse(a).ok()).map(|spec| {
            spec.ranges
                .iter()
                .flat_map(|&(a, b, step)| {
                    (a..=b.min(MAX_RUNS as u32)).step_by(step.max(1) as usize)
                })
                .collect()
        });
    runs.iter()
        .enumerate()
        .map(|(i, r)| match &chosen {
            Some(c) if !u32::try_from(i).is_ok_and(|i| c.contains(&i)) => String::new(),
            _ => run_text(r),
        })
        .collect()
}

/// One run in the text form: `NAME=value ...` (no `;`, no value lists).
pub fn parse_run(text: &str) -> Result<Run, String> {
    let mut run = Vec::new();
    for t in tokenize(text)? {
        match t {
            Tok::Pair(name, values) if values.len() == 1 => {
                run.push((name, values.into_iter().next().unwrap_or_default()))
            }
            Tok::Pair(name, _) => {
                return Err(format!(
                    "{name}: one value per name in a run (quote a value with a comma)"
                ))
            }
            Tok::Semi => return Err("one run per line: `;` separates runs only in the form".into()),
            Tok::Throttle(_) => {
                return Err("`%N` (the throttle) belongs to the sweep, not a run".into())
            }
        }
    }
    if run.is_empty() {
        return Err("a run sets no variable".into());
    }
    Ok(run)
}

/// A run as one line, in the form [`parse_run`] reads back.
pub fn run_text(run: &[(String, String)]) -> String {
    run.iter()
        .map(|(k, v)| format!("{k}={}", quote_value(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "sweep variable `{name}` is not an environment variable name (letters, digits, _; not starting with a digit)"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!(
            "`{name}` is a sweep setting, not a variable name: use another name (e.g. in capitals)"
        ));
    }
    let upper = name.to_ascii_uppercase();
    if ["SLURM_", "SLURMDASH_", "SBATCH_", "TAO_"]
        .iter()
        .any(|p| upper.starts_with(p))
        || [
            "PATH",
            "HOME",
            "USER",
            "SHELL",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
        ]
        .contains(&upper.as_str())
    {
        return Err(format!(
            "sweep variable {name} would replace one that Slurm, slurmdash or the shell sets: use another name"
        ));
    }
    Ok(())
}

fn check_value(name: &str, v: &str) -> Result<(), String> {
    if v.chars().any(char::is_control) {
        return Err(format!(
            "sweep value of {name} has a control character (a newline, tab or NUL)"
        ));
    }
    Ok(())
}

/// Quotes a value when the text form needs it.
fn quote_value(v: &str) -> String {
    let plain = !v.is_empty()
        && !v
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '\\' | '%'));
    if plain {
        return v.to_string();
    }
    let mut s = String::from('"');
    for c in v.chars() {
        if matches!(c, '"' | '\\') {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

impl fmt::Display for Sweep {
    /// The text form (see the module doc).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.axes.is_empty() {
            let runs: Vec<String> = self.runs.iter().map(|r| run_text(r)).collect();
            if !runs.is_empty() {
                parts.push(runs.join("; "));
            }
        } else {
            for (k, vs) in &self.axes {
                let vs: Vec<String> = vs.iter().map(|v| quote_value(v)).collect();
                parts.push(format!("{k}={}", vs.join(",")));
            }
        }
        if self.throttle > 0 {
            parts.push(format!("%{}", self.throttle));
        }
        f.write_str(&parts.join(" "))
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    /// `NAME=v1,v2` (values split at unquoted commas).
    Pair(String, Vec<String>),
    Semi,
    Throttle(u32),
}

/// Splits the text form into tokens: words separated by white space, `;` between runs,
/// `"..."` (with `\"` and `\\`) and `'...'` quoting.
fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        if c == ';' {
            chars.next();
            toks.push(Tok::Semi);
            continue;
        }
        if c == '%' {
            chars.next();
            let mut n = String::new();
            while chars
                .peek()
                .is_some_and(|c| !c.is_whitespace() && *c != ';')
            {
                n.extend(chars.next());
            }
            let t: u32 = n.parse().ok().filter(|&t| t > 0).ok_or_else(|| {
                format!("`%{n}`: the throttle is % and a number of runs at once, like %3")
            })?;
            toks.push(Tok::Throttle(t));
            continue;
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() || c == ';' {
                break;
            }
            name.push(c);
            chars.next();
        }
        if chars.peek() != Some(&'=') {
            return Err(format!(
                "`{name}` is not NAME=value (a sweep is like `LR=1e-3,3e-4 BATCH=32 %2`)"
            ));
        }
        chars.next();
        let mut values = vec![String::new()];
        let mut quoted_any = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == ';' {
                break;
            }
            chars.next();
            match c {
                ',' => values.push(String::new()),
                '"' => {
                    quoted_any = true;
                    loop {
                        match chars.next() {
                            None => return Err(format!("{name}: a \" is not closed")),
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(e) => values.last_mut().map(|v| v.push(e)).unwrap_or(()),
                                None => return Err(format!("{name}: a \" is not closed")),
                            },
                            Some(x) => values.last_mut().map(|v| v.push(x)).unwrap_or(()),
                        }
                    }
                }
                '\'' => {
                    quoted_any = true;
                    loop {
                        match chars.next() {
                            None => return Err(format!("{name}: a ' is not closed")),
                            Some('\'') => break,
                            Some(x) => values.last_mut().map(|v| v.push(x)).unwrap_or(()),
                        }
                    }
                }
                x => values.last_mut().map(|v| v.push(x)).unwrap_or(()),
            }
        }
        if !quoted_any && values.iter().any(String::is_empty) {
            return Err(format!("{name}: an empty value (quote it: {name}=\"\")"));
        }
        toks.push(Tok::Pair(name, values));
    }
    Ok(toks)
}

impl Serialize for Sweep {
    /// A table: a grid's lists by name, or `runs` (one line each); `throttle` when set.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if self.axes.is_empty() {
            if !self.runs.is_empty() {
                let runs: Vec<String> = self.runs.iter().map(|r| run_text(r)).collect();
                m.serialize_entry("runs", &runs)?;
            }
        } else {
            for (k, vs) in &self.axes {
                m.serialize_entry(k, vs)?;
            }
        }
        if self.throttle > 0 {
            m.serialize_entry("throttle", &self.throttle)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Sweep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SweepVisitor)
    }
}

struct SweepVisitor;

/// A scalar of a grid's list: TOML numbers and booleans become their text.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    S(String),
    I(i64),
    F(f64),
    B(bool),
}

impl Scalar {
    fn text(self) -> String {
        match self {
            Scalar::S(s) => s,
            Scalar::I(i) => i.to_string(),
            Scalar::F(f) => f.to_string(),
            Scalar::B(b) => b.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Values {
    One(Scalar),
    Many(Vec<Scalar>),
}

impl<'de> Visitor<'de> for SweepVisitor {
    type Value = Sweep;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sweep: a table of lists of values (LR = [1e-3, 3e-4]), or text like \"LR=1e-3,3e-4 BATCH=32 %2\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Sweep, E> {
        if v.trim().is_empty() {
            return Ok(Sweep::default());
        }
        Sweep::parse(v).map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sweep, A::Error> {
        let mut sweep = Sweep::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "throttle" => sweep.throttle = map.next_value()?,
                "runs" => {
                    let lines: Vec<String> = map.next_value()?;
                    for (i, l) in lines.iter().enumerate() {
                        sweep.runs.push(
                            parse_run(l).map_err(|e| de::Error::custom(format!("runs[{i}]: {e}")))?,
                        );
                    }
                }
                "file" => {
                    return Err(de::Error::custom(
                        "`file` is read where the template is loaded; here it was not (give `runs` instead)",
                    ))
                }
                _ => {
                    let vs = match map.next_value::<Values>()? {
                        Values::One(s) => vec![s.text()],
                        Values::Many(v) => v.into_iter().map(Scalar::text).collect(),
                    };
                    sweep.axes.push((key, vs));
                }
            }
        }
        sweep.points().map_err(de::Error::custom)?;
        Ok(sweep)
    }
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
