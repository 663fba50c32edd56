//! Figures a view knows about its rows beyond squeue's record: a finished job's exit code,
//! efficiency and triage class (`:history`). Kept beside the rows, by job id.

use std::cmp::Ordering;

use super::Column;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowFacts {
    pub exit: Option<(i32, i32)>,
    /// 0.0..=1.0 (or more); None until the use figures are read, or not recorded.
    pub cpu: Option<f64>,
    pub mem: Option<f64>,
    pub triage: Option<String>,
    /// The use figures have been read (an empty cell then means "not recorded").
    pub filled: bool,
}

fn pct(v: Option<f64>, filled: bool) -> String {
    match (v, filled) {
        (Some(v), _) => format!("{:.0}%", v * 100.0),
        (None, true) => "-".into(),
        (None, false) => "…".into(),
    }
}

impl RowFacts {
    /// The cell of a facts column; None for any other column.
    pub fn text(&self, col: Column) -> Option<String> {
        Some(match col {
            Column::Exit => match self.exit {
                Some((c, 0)) => c.to_string(),
                Some((c, s)) => format!("{c}:{s}"),
                None => String::new(),
            },
            Column::CpuEff => pct(self.cpu, self.filled),
            Column::MemEff => pct(self.mem, self.filled),
            Column::Triage => self.triage.clone().unwrap_or_default(),
            _ => return None,
        })
    }

    /// Orders two rows by a facts column (None: a value is missing).
    pub fn compare(col: Column, a: Option<&RowFacts>, b: Option<&RowFacts>) -> Option<Ordering> {
        let (a, b) = (a?, b?);
        match col {
            Column::Exit => Some(a.exit?.cmp(&b.exit?)),
            Column::CpuEff => a.cpu?.partial_cmp(&b.cpu?),
            Column::MemEff => a.mem?.partial_cmp(&b.mem?),
            Column::Triage => Some(a.triage.as_ref()?.cmp(b.triage.as_ref()?)),
            _ => None,
        }
    }
}
