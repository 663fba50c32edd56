//! A log's bytes made safe for the user's terminal (`slurmdash logs` on a terminal): what
//! the log pane shows, as text. Colours and text attributes (plain SGR) pass; every other
//! escape sequence (titles, OSC 52 clipboard writes, cursor moves, DCS…) is dropped; other
//! control characters become `·` as in the pane; newline, tab and carriage return pass
//! (progress bars); bytes that are not UTF-8 become U+FFFD. Sequences and characters split
//! across reads are put back together.

use super::ansi::{EscState, Step};
use super::buffer::{incomplete_suffix, is_special, CONTROL_GLYPH};

#[derive(Debug, Default)]
pub struct TerminalText {
    esc: EscState,
    /// The start of a UTF-8 character that the next read completes.
    carry: Vec<u8>,
    /// An SGR was passed: `finish` resets the attributes.
    styled: bool,
}

impl TerminalText {
    /// The safe text of the next `bytes` of the log.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut data = std::mem::take(&mut self.carry);
        data.extend_from_slice(bytes);
        let keep = incomplete_suffix(&data);
        let (body, tail) = data.split_at(data.len() - keep);
        let mut out = String::with_capacity(body.len());
        for chunk in body.utf8_chunks() {
            for c in chunk.valid().chars() {
                self.char(c, &mut out);
            }
            if !chunk.invalid().is_empty() {
                self.char('\u{FFFD}', &mut out);
            }
        }
        self.carry = tail.to_vec();
        out.into_bytes()
    }

    /// At the end of the output: a character cut short, and the attributes reset when the
    /// log set any (the user's prompt is not left red).
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = String::new();
        if !std::mem::take(&mut self.carry).is_empty() {
            self.char('\u{FFFD}', &mut out);
        }
        if std::mem::take(&mut self.styled) {
            out.push_str("\x1b[0m");
        }
        out.into_bytes()
    }

    fn char(&mut self, c: char, out: &mut String) {
        match self.esc.step(c) {
            Step::Char('\n' | '\t' | '\r') => out.push(c),
            // The pane rings no bell either.
            Step::Char('\x07') => {}
            Step::Char(c) if is_special(c) => out.push_str(CONTROL_GLYPH),
            Step::Char(c) => out.push(c),
            // Only digits, `;` and `:`: colours and attributes, nothing else.
            Step::Sgr(params) => {
                out.push_str("\x1b[");
                out.push_str(&params);
                out.push('m');
                self.styled = true;
            }
            Step::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TerminalText;

    fn safe(parts: &[&[u8]]) -> String {
        let mut t = TerminalText::default();
        let mut out = Vec::new();
        for p in parts {
            out.extend(t.push(p));
        }
        out.extend(t.finish());
        String::from_utf8(out).expect("UTF-8 out")
    }

    #[test]
    fn escapes_that_act_on_the_terminal_never_reach_it() {
        let log: &[u8] = b"start\n\x1b]0;owned title\x07\x1b]52;c;cm0gLXJmIH4=\x07\
            \x1bP+q544e\x1b\\\x1b[2J\x1b[1;1H\x1b[?1049hmid\x1b[6n\x1bc\x08\x0bend\n";
        assert_eq!(safe(&[log]), "start\nmid··end\n");
        // Cut anywhere, the same text comes out.
        for cut in 0..log.len() {
            assert_eq!(
                safe(&[&log[..cut], &log[cut..]]),
                "start\nmid··end\n",
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn colours_tabs_progress_and_unicode_pass_and_the_colours_are_reset() {
        let log = "\x1b[1;31merror\x1b[0m:\tdone 10%\rdone 100%\nλ ✓\n".as_bytes();
        assert_eq!(
            safe(&[log]),
            "\x1b[1;31merror\x1b[0m:\tdone 10%\rdone 100%\nλ ✓\n\x1b[0m"
        );
        // A character split between reads, a stray byte, a C1 CSI.
        let (a, b) = "λ".as_bytes().split_at(1);
        assert_eq!(safe(&[b"x", a, b, b"\xff\xc2\x9b2J\n"]), "xλ\u{FFFD}·2J\n");
        assert_eq!(safe(&[b"cut ", a]), "cut \u{FFFD}");
        assert_eq!(safe(&[b"plain\n"]), "plain\n");
    }
}
