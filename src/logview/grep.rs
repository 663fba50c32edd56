//! Search across many logs (`:grep`, `:errors`): the one remote program that greps a set of
//! files, its argv, and the pure parser of what it prints.
//!
//! The program takes everything as positional parameters (`sh -c SCRIPT sh FLAGS PATTERN
//! MAX LIMIT SECS PATH…`): the pattern is its own argument after `-e`, the paths come after
//! `--`, and the script text never holds caller data. Before grep runs, each path is checked
//! the way the log tailer's read is (it exists, is a regular file, is readable) and must be
//! owned by the user: a file someone else wrote is never read. A path that fails a check is
//! reported by its number, not searched. grep then runs once over the rest with `-H -n -I -Z`
//! (file name, line number, binary files skipped, the name ended by a NUL byte so a `:` in
//! a path cannot mislead) and `-m MAX` per file, under `timeout SECS` where the login node
//! has it, and its output plus a trailer (grep's exit status) is cut at `LIMIT` bytes: no
//! trailer means the output was cut.

use std::collections::HashMap;

/// Marks the program's lines; anything a login shell prints before the first is skipped.
const MARK: &str = "SDGREP1";

/// $1 flags (`F`, `E` or `Ei`), $2 the pattern, $3 matches per file, $4 bytes of output at
/// most, $5 seconds at most; then the paths.
pub const GREP_SCRIPT: &str = r#"m=SDGREP1
flags=$1 pat=$2 max=$3 limit=$4 secs=$5
shift 5
case $flags in F|E|Ei) ;; *) flags=F;; esac
case $max in ''|*[!0-9]*) max=20;; esac
case $limit in ''|*[!0-9]*) limit=262144;; esac
case $secs in ''|*[!0-9]*) secs=30;; esac
printf '%s begin\n' "$m"
n=$# i=0
for p do
  i=$((i + 1))
  if [ ! -e "$p" ]; then printf '%s missing %s\n' "$m" "$i"
  elif [ ! -f "$p" ]; then printf '%s notregular %s\n' "$m" "$i"
  elif [ ! -O "$p" ]; then printf '%s notyours %s\n' "$m" "$i"
  elif [ ! -r "$p" ]; then printf '%s denied %s\n' "$m" "$i"
  else set -- "$@" "$p"
  fi
done
shift "$n"
printf '%s grep\n' "$m"
[ "$#" -gt 0 ] || { printf '\000%s end 1\n' "$m"; exit 0; }
if command -v timeout >/dev/null 2>&1; then t="timeout $secs"; else t=; fi
{
  LC_ALL=C $t grep -H -n -I -Z -s -m "$max" "-$flags" -e "$pat" -- "$@"
  printf '\000%s end %s\n' "$m" "$?"
} | head -c "$limit"
exit 0
"#;

/// How a pattern is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// A fixed string (`grep -F`).
    Fixed,
    /// A POSIX extended regular expression (`grep -E`).
    Regex,
    /// An ERE matched ignoring case (`grep -E -i`): the first-error preset.
    RegexNoCase,
}

impl Syntax {
    fn flags(self) -> &'static str {
        match self {
            Syntax::Fixed => "F",
            Syntax::Regex => "E",
            Syntax::RegexNoCase => "Ei",
        }
    }
}

/// The limits of one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Matching lines kept per file (`grep -m`).
    pub per_file: u32,
    /// Bytes of grep's output at most.
    pub bytes: u64,
    /// Seconds grep may take.
    pub secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_file: 20,
            bytes: 256 * 1024,
            secs: 30,
        }
    }
}

/// The argv that runs [`GREP_SCRIPT`] over `paths`.
pub fn grep_argv(syntax: Syntax, pattern: &str, paths: &[String], limits: Limits) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        GREP_SCRIPT.into(),
        "sh".into(),
        syntax.flags().into(),
        pattern.into(),
        limits.per_file.max(1).to_string(),
        limits.bytes.to_string(),
        limits.secs.max(1).to_string(),
    ];
    argv.extend(paths.iter().cloned());
    argv
}

/// Why a file was not searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// Not there (yet): a job that has not written it.
    Missing,
    NotRegular,
    /// Owned by another user: not read.
    NotYours,
    Denied,
}

impl Skipped {
    pub fn word(self) -> &'static str {
        match self {
            Skipped::Missing => "no log yet",
            Skipped::NotRegular => "not a regular file",
            Skipped::NotYours => "not yours (not read)",
            Skipped::Denied => "permission denied",
        }
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Index into the paths searched.
    pub file: usize,
    /// 1-based line number.
    pub line: u64,
    /// The line, decoded lossily, control bytes shown escaped (`\x1b`), at most
    /// [`MAX_TEXT`] characters.
    pub text: String,
}

/// Characters of a matching line kept.
pub const MAX_TEXT: usize = 400;

/// What the program printed, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepOutput {
    pub hits: Vec<Hit>,
    /// Files not searched, by index, and why.
    pub skipped: Vec<(usize, Skipped)>,
    /// grep's exit status (0: lines matched, 1: none, 2: an error, 124: timed out); `None`
    /// when the output was cut.
    pub status: Option<i32>,
    /// The output reached the byte limit: later matches are missing.
    pub cut: bool,
    /// Records that did not read as a match (e.g. grep's "Binary file … matches").
    pub odd: usize,
}

impl GrepOutput {
    pub fn timed_out(&self) -> bool {
        self.status == Some(124)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrepError {
    #[error("the search program did not start (no `{MARK} begin` line): {0}")]
    NoStart(String),
}

/// Reads the program's stdout; `paths`: the paths given, in order.
pub fn parse_grep(stdout: &[u8], paths: &[String]) -> Result<GrepOutput, GrepError> {
    let begin = format!("{MARK} begin\n");
    let Some(start) = find(stdout, begin.as_bytes()) else {
        let head = String::from_utf8_lossy(&stdout[..stdout.len().min(80)]).into_owned();
        return Err(GrepError::NoStart(escape(&head)));
    };
    let mut rest = &stdout[start + begin.len()..];
    let mut out = GrepOutput::default();
    // The checks' lines, then `SDGREP1 grep`.
    loop {
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            out.cut = true;
            return Ok(out);
        };
        let line = String::from_utf8_lossy(&rest[..nl]).into_owned();
        rest = &rest[nl + 1..];
        let Some(words) = line.strip_prefix(MARK).map(str::split_whitespace) else {
            out.odd += 1;
            continue;
        };
        let words: Vec<&str> = words.collect();
        match words.as_slice() {
            ["grep"] => break,
            [kind, n] => {
                let why = match *kind {
                    "missing" => Skipped::Missing,
                    "notregular" => Skipped::NotRegular,
                    "notyours" => Skipped::NotYours,
                    "denied" => Skipped::Denied,
                    _ => {
                        out.odd += 1;
                        continue;
                    }
                };
                match n.parse::<usize>() {
                    Ok(i) if (1..=paths.len()).contains(&i) => out.skipped.push((i - 1, why)),
                    _ => out.odd += 1,
                }
            }
            _ => out.odd += 1,
        }
    }
    // The trailer: the last record, `\0SDGREP1 end N\n`.
    let trailer = format!("\0{MARK} end ");
    let body = match rfind(rest, trailer.as_bytes()) {
        Some(at) if rest.ends_with(b"\n") => {
            let code = String::from_utf8_lossy(&rest[at + trailer.len()..rest.len() - 1]);
            match code.trim().parse::<i32>() {
                Ok(c) => {
                    out.status = Some(c);
                    &rest[..at]
                }
                Err(_) => {
                    out.cut = true;
                    rest
                }
            }
        }
        _ => {
            out.cut = true;
            rest
        }
    };
    let index: HashMap<&[u8], usize> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_bytes(), i))
        .collect();
    // Records one after the other: a name may hold a newline, so each is read from its
    // start: the name up to its NUL (one of the paths given), the number up to `:`, the
    // text up to the newline. A record that does not read is skipped to its newline.
    let mut rest = body;
    while !rest.is_empty() {
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            // A cut output's last record is partial; a whole one ends with a newline.
            out.odd += usize::from(!out.cut);
            break;
        };
        match read_record(rest, &index) {
            Some((hit, used)) => {
                out.hits.push(hit);
                rest = &rest[used..];
            }
            None => {
                out.odd += 1;
                rest = &rest[nl + 1..];
            }
        }
    }
    Ok(out)
}

/// `PATH\0LINE:TEXT\n` at the start of `rest`: the hit and the bytes it took.
fn read_record(rest: &[u8], index: &HashMap<&[u8], usize>) -> Option<(Hit, usize)> {
    let nul = rest.iter().position(|&b| b == 0)?;
    let file = *index.get(&rest[..nul])?;
    let after = &rest[nul + 1..];
    let colon = after.iter().position(|&b| b == b':')?;
    let line = std::str::from_utf8(&after[..colon]).ok()?.parse().ok()?;
    let text = &after[colon + 1..];
    let end = text.iter().position(|&b| b == b'\n')?;
    let text = String::from_utf8_lossy(&text[..end]);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let used = nul + 1 + colon + 1 + end + 1;
    Some((
        Hit {
            file,
            line,
            text: escape(text),
        },
        used,
    ))
}

/// Control characters shown as `\xNN` (tabs as a space), cut at [`MAX_TEXT`] characters.
pub fn escape(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= MAX_TEXT {
            out.push('…');
            break;
        }
        match c {
            '\t' => out.push(' '),
            c if c.is_control() => {
                let v = u32::from(c);
                if v < 0x100 {
                    out.push_str(&format!("\\x{v:02x}"));
                } else {
                    out.push_str(&format!("\\u{{{v:x}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "grep_tests.rs"]
mod tests;
