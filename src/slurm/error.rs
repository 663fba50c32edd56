use std::fmt;

const MAX_TEXT: usize = 160;

/// A parser failure: which command's output, which line (1-based; 0 when the
/// output as a whole is wrong), what was wrong, and the offending text
/// (truncated).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub command: &'static str,
    pub line: usize,
    pub what: String,
    pub text: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{} output: {}", self.command, self.what)?;
        } else {
            write!(
                f,
                "{} output line {}: {}",
                self.command, self.line, self.what
            )?;
        }
        if !self.text.is_empty() {
            write!(f, ": {:?}", self.text)?;
        }
        Ok(())
    }
}

impl ParseError {
    pub fn new(command: &'static str, line: usize, what: impl Into<String>, text: &str) -> Self {
        ParseError {
            command,
            line,
            what: what.into(),
            text: truncate(text, MAX_TEXT),
        }
    }
}

/// A single value that did not parse; the line parsers attach command and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    pub kind: &'static str,
    pub value: String,
}

impl ValueError {
    pub fn new(kind: &'static str, value: &str) -> Self {
        ValueError {
            kind,
            value: truncate(value, MAX_TEXT),
        }
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad {}: {:?}", self.kind, self.value)
    }
}

impl std::error::Error for ValueError {}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundary() {
        let s = "é".repeat(200);
        let t = truncate(&s, 5);
        assert_eq!(t, "éé…");
    }

    #[test]
    fn display_names_line_and_text() {
        let e = ParseError::new("squeue", 3, "expected 21 fields, found 2", "a\u{1f}b");
        assert_eq!(
            e.to_string(),
            "squeue output line 3: expected 21 fields, found 2: \"a\\u{1f}b\""
        );
    }
}
