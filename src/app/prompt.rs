//! The line being typed on the status bar (`/` filter, `:` command, log search, a name to
//! give): its kind and text. A leaf, so that components can hand one back in an `Out`; its
//! keys are `input.rs`'s.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Filter,
    Command,
    Search,
    /// The name the launch form is saved under as a template (`w`).
    TemplateName,
    /// A batch script on this machine the launch form starts from (`o`).
    ScriptPath,
    /// A value one of the user's own commands asks for (`[[commands]] prompts`).
    CommandValue,
}

impl InputKind {
    pub fn prompt(self) -> &'static str {
        match self {
            InputKind::Filter => "/",
            InputKind::Command => ":",
            InputKind::Search => "search /",
            InputKind::TemplateName => "save template as: ",
            InputKind::ScriptPath => "launch from script: ",
            InputKind::CommandValue => "value: ",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub kind: InputKind,
    pub text: String,
    /// Shown after the text instead of "enter: apply · esc: cancel".
    pub hint: Option<String>,
    /// Shown before the text instead of the kind's prompt.
    pub label: Option<String>,
}

impl Input {
    pub fn new(kind: InputKind, text: &str) -> Input {
        Input {
            kind,
            text: text.to_string(),
            hint: None,
            label: None,
        }
    }
}

/// The line that asks for a batch script on this machine for the launch form (`o`).
pub fn script_path() -> Input {
    let mut input = Input::new(InputKind::ScriptPath, "");
    input.hint = Some(
        "enter: read this file (on this machine, ~/ allowed) into the form · esc: cancel".into(),
    );
    input
}

/// The line that asks the name to save the launch form as a template, starting with `start`.
pub fn template_name(start: &str) -> Input {
    let mut input = Input::new(InputKind::TemplateName, start);
    input.hint = Some("enter: save the form as this template · esc: cancel".into());
    input
}
