//! `Y`: what is selected, to the laptop's clipboard (through the terminal: OSC 52).

use super::component::{Out, View};
use crate::action::Cmd;
use crate::keymap::Pane;

/// The selected job's id; from the detail pane its directory, from the log pane the shown
/// log's path (each falls back to the id when unknown). `focus`: the focused pane.
pub fn copy(v: &View, focus: Pane) -> Out {
    let Some(job) = v.queue.selected_job() else {
        return Out::note("nothing to copy: no job selected");
    };
    let id = job.id.as_str().to_string();
    let path = match focus {
        Pane::Queue => None,
        Pane::Detail => Some(job.work_dir.to_string()).filter(|d| !d.is_empty()),
        Pane::Log => v
            .logs
            .paths
            .as_ref()
            .map(|(out, err)| match v.logs.shown_stream() {
                crate::logview::Stream::Stdout => out.clone(),
                crate::logview::Stream::Stderr => err.clone(),
            }),
    };
    let text = path.unwrap_or(id);
    // (a name or path may hold control bytes: never sent to the screen as they are)
    let shown: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if shown != text {
        // Pasted into a shell, a newline or an escape in it would run or do something else
        // than the path says; an escaped copy would name another path.
        return Out::note(format!(
            "not copied: {shown} holds control characters (shown as ?); copy it from a shell on the cluster"
        ));
    }
    Out::note(format!(
        "copied {shown} to the clipboard (through the terminal: OSC 52)"
    ))
    .with_cmd(Cmd::Clipboard(text))
}
