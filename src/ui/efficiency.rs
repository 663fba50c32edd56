//! The efficiency section of the detail pane for a finished job: CPU, memory, time and
//! GPU use against the request, and the verdict.

use ratatui::style::Style;

use super::theme::Theme;
use crate::efficiency::Efficiency;

/// Calls `field` with each (label, value, style) row.
pub fn rows(e: &Efficiency, field: &mut dyn FnMut(&str, String, Style), t: &Theme) {
    for (label, value) in e.lines() {
        let style = match label {
            "Verdict" if !e.suggestion.is_empty() => t.warn(),
            "Note" => t.dim(),
            _ => Style::new(),
        };
        let label = match label {
            "CPU" => "Efficiency",
            "Memory" => "  memory",
            "Time" => "  time",
            "GPUs" => "  GPUs",
            other => other,
        };
        let value = if label == "Efficiency" {
            format!("CPU {value}")
        } else {
            value
        };
        field(label, value, style);
    }
}
