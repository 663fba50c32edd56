//! Escape sequences in log output: a streaming recogniser (sequences may be split across
//! reads) and SGR to ratatui [`Style`]. Everything that is not SGR is consumed and dropped.

use ratatui::style::{Color, Modifier, Style};

/// Longest parameter string kept for one CSI sequence; longer ones are dropped unread.
const MAX_PARAMS: usize = 64;
/// Longest OSC/DCS body consumed before giving up and printing again (a missing terminator
/// must not swallow the rest of the log).
const MAX_STRING: usize = 4096;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EscState {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// `ESC` followed by intermediates (0x20..=0x2f), waiting for the final byte.
    EscIntermediate,
    /// `ESC [`: parameters so far, and whether the sequence is still a candidate SGR.
    Csi { params: String, plain: bool },
    /// OSC, DCS, SOS, PM, APC: consumed up to BEL or ST (`ESC \`).
    Str { len: usize, esc: bool },
}

/// What the recogniser made of one char.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Not part of a sequence: the caller prints or interprets it.
    Char(char),
    /// Consumed.
    Nothing,
    /// A complete SGR sequence; the parameter string between `[` and `m`.
    Sgr(String),
}

impl EscState {
    /// Feeds one char. Ground-state chars come back as [`Step::Char`], except ESC.
    pub fn step(&mut self, c: char) -> Step {
        match self {
            EscState::Ground => {
                if c == '\x1b' {
                    *self = EscState::Escape;
                    Step::Nothing
                } else {
                    Step::Char(c)
                }
            }
            EscState::Escape => {
                *self = match c {
                    '[' => EscState::Csi {
                        params: String::new(),
                        plain: true,
                    },
                    ']' | 'P' | 'X' | '^' | '_' => EscState::Str { len: 0, esc: false },
                    '\x20'..='\x2f' => EscState::EscIntermediate,
                    '\x1b' => EscState::Escape,
                    c if is_c0(c) => return self.abort(c),
                    _ => EscState::Ground,
                };
                Step::Nothing
            }
            EscState::EscIntermediate => match c {
                '\x20'..='\x2f' => Step::Nothing,
                c if is_c0(c) => self.abort(c),
                _ => {
                    *self = EscState::Ground;
                    Step::Nothing
                }
            },
            EscState::Csi { params, plain } => match c {
                '\x30'..='\x3f' => {
                    if !matches!(c, '0'..='9' | ';' | ':') {
                        *plain = false;
                    }
                    if params.len() < MAX_PARAMS {
                        params.push(c);
                    } else {
                        *plain = false;
                    }
                    Step::Nothing
                }
                '\x20'..='\x2f' => {
                    *plain = false;
                    Step::Nothing
                }
                '\x40'..='\x7e' => {
                    let step = if c == 'm' && *plain {
                        Step::Sgr(std::mem::take(params))
                    } else {
                        Step::Nothing
                    };
                    *self = EscState::Ground;
                    step
                }
                c if is_c0(c) => self.abort(c),
                _ => {
                    *self = EscState::Ground;
                    Step::Nothing
                }
            },
            EscState::Str { len, esc } => {
                if (*esc && c == '\\') || c == '\x07' {
                    *self = EscState::Ground;
                    return Step::Nothing;
                }
                if c == '\n' || *len >= MAX_STRING {
                    return self.abort(c);
                }
                *esc = c == '\x1b';
                *len += c.len_utf8();
                Step::Nothing
            }
        }
    }

    /// A control char inside a sequence ends it; the char itself still counts (a newline in
    /// a broken sequence must still end the line). A new ESC starts a new sequence.
    fn abort(&mut self, c: char) -> Step {
        *self = EscState::Ground;
        self.step(c)
    }
}

fn is_c0(c: char) -> bool {
    c < ' ' || c == '\x7f'
}

/// Applies SGR parameters (`1;38;5;208`, `38:2::255:0:0`, empty = reset) to `style`.
pub fn apply_sgr(style: Style, params: &str) -> Style {
    let mut style = style;
    if params.is_empty() {
        return Style::default();
    }
    let mut groups = params.split(';');
    while let Some(group) = groups.next() {
        if group.contains(':') {
            // ISO 8613-6 form: one group carries the whole colour.
            let sub: Vec<&str> = group.split(':').collect();
            let code = num(sub[0]);
            let rest: Vec<u32> = sub[1..].iter().map(|s| num(s)).collect();
            style = match code {
                38 | 48 | 58 => apply_ext_colon(style, code, &rest),
                4 => match rest.first() {
                    Some(0) => style.remove_modifier(Modifier::UNDERLINED),
                    _ => style.add_modifier(Modifier::UNDERLINED),
                },
                _ => apply_code(style, code),
            };
            continue;
        }
        let code = num(group);
        if matches!(code, 38 | 48 | 58) {
            let color = match groups.next().map(num) {
                Some(5) => groups.next().map(|n| Color::Indexed(clamp8(num(n)))),
                Some(2) => {
                    let r = groups.next().map(num);
                    let g = groups.next().map(num);
                    let b = groups.next().map(num);
                    match (r, g, b) {
                        (Some(r), Some(g), Some(b)) => {
                            Some(Color::Rgb(clamp8(r), clamp8(g), clamp8(b)))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            style = set_ext(style, code, color);
        } else {
            style = apply_code(style, code);
        }
    }
    style
}

fn apply_ext_colon(style: Style, code: u32, rest: &[u32]) -> Style {
    let color = match rest {
        [5, n, ..] => Some(Color::Indexed(clamp8(*n))),
        // 38:2:<colourspace>:r:g:b or the common 38:2:r:g:b
        [2, _, r, g, b, ..] => Some(Color::Rgb(clamp8(*r), clamp8(*g), clamp8(*b))),
        [2, r, g, b] => Some(Color::Rgb(clamp8(*r), clamp8(*g), clamp8(*b))),
        _ => None,
    };
    set_ext(style, code, color)
}

fn set_ext(style: Style, code: u32, color: Option<Color>) -> Style {
    match (code, color) {
        (38, Some(c)) => style.fg(c),
        (48, Some(c)) => style.bg(c),
        (58, Some(c)) => style.underline_color(c),
        _ => style,
    }
}

fn apply_code(style: Style, code: u32) -> Style {
    const BASIC: [Color; 8] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
    ];
    const BRIGHT: [Color; 8] = [
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    let m = |s: Style, add: bool, m: Modifier| {
        if add {
            s.add_modifier(m)
        } else {
            s.remove_modifier(m)
        }
    };
    match code {
        0 => Style::default(),
        1 => m(style, true, Modifier::BOLD),
        2 => m(style, true, Modifier::DIM),
        3 => m(style, true, Modifier::ITALIC),
        4 => m(style, true, Modifier::UNDERLINED),
        5 | 6 => m(style, true, Modifier::SLOW_BLINK),
        7 => m(style, true, Modifier::REVERSED),
        8 => m(style, true, Modifier::HIDDEN),
        9 => m(style, true, Modifier::CROSSED_OUT),
        21 | 24 => m(style, false, Modifier::UNDERLINED),
        22 => m(style, false, Modifier::BOLD | Modifier::DIM),
        23 => m(style, false, Modifier::ITALIC),
        25 => m(style, false, Modifier::SLOW_BLINK),
        27 => m(style, false, Modifier::REVERSED),
        28 => m(style, false, Modifier::HIDDEN),
        29 => m(style, false, Modifier::CROSSED_OUT),
        30..=37 => style.fg(BASIC[(code - 30) as usize]),
        39 => Style { fg: None, ..style },
        40..=47 => style.bg(BASIC[(code - 40) as usize]),
        49 => Style { bg: None, ..style },
        59 => Style {
            underline_color: None,
            ..style
        },
        90..=97 => style.fg(BRIGHT[(code - 90) as usize]),
        100..=107 => style.bg(BRIGHT[(code - 100) as usize]),
        _ => style,
    }
}

fn num(s: &str) -> u32 {
    s.parse().unwrap_or(0)
}

fn clamp8(n: u32) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &str) -> (String, Vec<String>) {
        let mut st = EscState::default();
        let (mut out, mut sgr) = (String::new(), Vec::new());
        for c in input.chars() {
            match st.step(c) {
                Step::Char(c) => out.push(c),
                Step::Sgr(p) => sgr.push(p),
                Step::Nothing => {}
            }
        }
        (out, sgr)
    }

    #[test]
    fn non_sgr_sequences_are_dropped() {
        let (out, sgr) =
            run("a\x1b[2Kb\x1b[10;5Hc\x1b]0;title\x07d\x1b]8;;http://x\x1b\\e\x1b7f\x1b(Bg");
        assert_eq!(out, "abcdefg");
        assert!(sgr.is_empty());
        let (out, sgr) = run("\x1b[?25lx\x1b[1;31my\x1b[m");
        assert_eq!(out, "xy");
        assert_eq!(sgr, vec!["1;31".to_string(), String::new()]);
    }

    #[test]
    fn broken_sequence_does_not_swallow_newline() {
        let (out, _) = run("a\x1b[12\nb\x1b]unterminated\nc");
        assert_eq!(out, "a\nb\nc");
    }

    #[test]
    fn sgr_colours_and_attributes() {
        let s = apply_sgr(Style::default(), "1;4;31;42");
        assert_eq!(s.fg, Some(Color::Red));
        assert_eq!(s.bg, Some(Color::Green));
        assert!(s
            .add_modifier
            .contains(Modifier::BOLD | Modifier::UNDERLINED));
        assert_eq!(apply_sgr(s, "0"), Style::default());
        assert_eq!(apply_sgr(s, ""), Style::default());
        assert_eq!(apply_sgr(s, "39").fg, None);
        assert!(!apply_sgr(s, "22").add_modifier.contains(Modifier::BOLD));
        assert_eq!(
            apply_sgr(Style::default(), "38;5;208").fg,
            Some(Color::Indexed(208))
        );
        assert_eq!(
            apply_sgr(Style::default(), "48;2;1;2;3").bg,
            Some(Color::Rgb(1, 2, 3))
        );
        assert_eq!(
            apply_sgr(Style::default(), "38:2::10:20:30").fg,
            Some(Color::Rgb(10, 20, 30))
        );
        assert_eq!(
            apply_sgr(Style::default(), "38:5:9;1").fg,
            Some(Color::Indexed(9))
        );
        assert_eq!(
            apply_sgr(Style::default(), "93").fg,
            Some(Color::LightYellow)
        );
        // Truncated extended colour: ignored, no panic.
        assert_eq!(apply_sgr(Style::default(), "38;2;1").fg, None);
        assert_eq!(
            apply_sgr(Style::default(), "38;5;99999").fg,
            Some(Color::Indexed(255))
        );
    }
}
