//! The one remote command behind `read_file`: a fixed POSIX sh script that prints a header
//! line (status, file size, start, byte count) and then the requested bytes.
//!
//! The path and numbers reach the script as positional parameters (`sh -c SCRIPT sh PATH
//! MODE N MAX`); the script text never contains caller data. `tail -c +K` seeks on regular
//! files, so reading the end of a 1 GB log does not read the file.

use super::{FileChunk, ReadPos};

/// Marks the header line; anything a login shell prints before it is skipped.
const MARK: &str = "SLURMDASH-READ1";

/// $1 path, $2 "off"|"tail", $3 offset or tail length, $4 max bytes.
pub const READ_SCRIPT: &str = r#"m=SLURMDASH-READ1
p=$1 mode=$2 n=$3 max=$4
if [ ! -e "$p" ]; then
  if [ ! -L "$p" ]; then
    d=$p
    while :; do
      d=$(dirname -- "$d")
      if [ -e "$d" ]; then
        if [ -d "$d" ] && [ ! -x "$d" ]; then printf '%s denied\n' "$m"; exit 0; fi
        break
      fi
      case $d in /|.) break;; esac
    done
  fi
  printf '%s notfound\n' "$m"; exit 0
fi
if [ ! -f "$p" ]; then printf '%s notregular\n' "$m"; exit 0; fi
if [ ! -r "$p" ]; then printf '%s denied\n' "$m"; exit 0; fi
size=$(wc -c < "$p" | tr -d ' \t') || { printf '%s denied\n' "$m"; exit 0; }
case $size in ''|*[!0-9]*) printf '%s denied\n' "$m"; exit 0;; esac
if [ "$mode" = tail ]; then
  if [ "$n" -gt "$max" ]; then n=$max; fi
  if [ "$size" -gt "$n" ]; then start=$((size - n)); else start=0; fi
else
  start=$n
fi
if [ "$start" -ge "$size" ]; then count=0; else count=$((size - start)); fi
if [ "$count" -gt "$max" ]; then count=$max; fi
printf '%s ok %s %s %s\n' "$m" "$size" "$start" "$count"
if [ "$count" -gt 0 ]; then tail -c +"$((start + 1))" -- "$p" | head -c "$count"; fi
exit 0
"#;

/// The argv that runs [`READ_SCRIPT`] on `path`.
pub fn read_file_argv(path: &str, pos: ReadPos, max_bytes: u64) -> Vec<String> {
    let (mode, n) = match pos {
        ReadPos::Offset(o) => ("off", o),
        ReadPos::Tail(t) => ("tail", t),
    };
    vec![
        "sh".into(),
        "-c".into(),
        READ_SCRIPT.into(),
        "sh".into(),
        path.into(),
        mode.into(),
        n.to_string(),
        max_bytes.to_string(),
    ]
}

/// What the script reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOutcome {
    Chunk(FileChunk),
    NotFound,
    Denied,
    NotRegular,
    /// The output did not follow the protocol; the string says how.
    Garbage(String),
}

/// Interprets the script's stdout. Bytes after the header are returned untouched (binary and
/// invalid UTF-8 included), cut to the announced count and to `max_bytes`.
pub fn parse_read_output(stdout: &[u8], max_bytes: u64) -> ReadOutcome {
    let Some(start) = find_header(stdout) else {
        let shown = String::from_utf8_lossy(&stdout[..stdout.len().min(80)]).into_owned();
        return ReadOutcome::Garbage(format!("no read header in output {shown:?}"));
    };
    let rest = &stdout[start..];
    let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
        return ReadOutcome::Garbage("read header is not terminated".into());
    };
    let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
    let body = &rest[nl + 1..];
    let fields: Vec<&str> = header.split(' ').collect();
    match fields.as_slice() {
        [_, "notfound"] => ReadOutcome::NotFound,
        [_, "denied"] => ReadOutcome::Denied,
        [_, "notregular"] => ReadOutcome::NotRegular,
        [_, "ok", size, offset, count] => {
            let nums = (
                size.parse::<u64>(),
                offset.parse::<u64>(),
                count.parse::<u64>(),
            );
            let (Ok(size), Ok(offset), Ok(count)) = nums else {
                return ReadOutcome::Garbage(format!("bad numbers in read header {header:?}"));
            };
            let keep = usize::try_from(count.min(max_bytes))
                .unwrap_or(usize::MAX)
                .min(body.len());
            ReadOutcome::Chunk(FileChunk {
                offset,
                data: body[..keep].to_vec(),
                size,
            })
        }
        _ => ReadOutcome::Garbage(format!("unexpected read header {header:?}")),
    }
}

/// Position of the header: at the start of output or of a line.
fn find_header(out: &[u8]) -> Option<usize> {
    let mark = format!("{MARK} ");
    let mark = mark.as_bytes();
    if out.starts_with(mark) {
        return Some(0);
    }
    out.windows(mark.len() + 1)
        .position(|w| w[0] == b'\n' && &w[1..] == mark)
        .map(|i| i + 1)
}

/// The same slice the script computes, for the fake remote's in-memory files.
pub(crate) fn slice_file(content: &[u8], pos: ReadPos, max_bytes: u64) -> FileChunk {
    let size = content.len() as u64;
    let start = match pos {
        ReadPos::Offset(o) => o,
        ReadPos::Tail(t) => size.saturating_sub(t.min(max_bytes)),
    };
    let count = size.saturating_sub(start).min(max_bytes);
    let (s, e) = (start as usize, (start + count) as usize);
    FileChunk {
        offset: start,
        data: if count > 0 {
            content[s..e].to_vec()
        } else {
            Vec::new()
        },
        size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(out: &[u8]) -> FileChunk {
        match parse_read_output(out, 1 << 20) {
            ReadOutcome::Chunk(c) => c,
            other => panic!("expected chunk, got {other:?}"),
        }
    }

    #[test]
    fn parses_ok_with_binary_body() {
        let mut out = b"SLURMDASH-READ1 ok 10 4 3\n".to_vec();
        out.extend_from_slice(&[0xff, 0x00, b'\n']);
        let c = chunk(&out);
        assert_eq!(c.offset, 4);
        assert_eq!(c.size, 10);
        assert_eq!(c.data, vec![0xff, 0x00, b'\n']);
    }

    #[test]
    fn skips_login_banner_and_trailing_noise() {
        let out = b"Welcome to the cluster\nSLURMDASH-READ1 ok 5 0 2\nabEXTRA";
        let c = chunk(out);
        assert_eq!(c.data, b"ab");
    }

    #[test]
    fn marker_inside_a_line_is_not_a_header() {
        let out = b"xx SLURMDASH-READ1 ok 5 0 2\nab";
        assert!(matches!(
            parse_read_output(out, 10),
            ReadOutcome::Garbage(_)
        ));
    }

    #[test]
    fn statuses() {
        assert_eq!(
            parse_read_output(b"SLURMDASH-READ1 notfound\n", 1),
            ReadOutcome::NotFound
        );
        assert_eq!(
            parse_read_output(b"SLURMDASH-READ1 denied\n", 1),
            ReadOutcome::Denied
        );
        assert_eq!(
            parse_read_output(b"SLURMDASH-READ1 notregular\n", 1),
            ReadOutcome::NotRegular
        );
    }

    #[test]
    fn truncated_file_reports_small_size() {
        let c = chunk(b"SLURMDASH-READ1 ok 3 100 0\n");
        assert!(c.truncated());
        assert!(c.data.is_empty());
    }

    #[test]
    fn garbage_is_an_error() {
        for out in [
            &b""[..],
            b"hello",
            b"SLURMDASH-READ1 ok x 0 0\n",
            b"SLURMDASH-READ1 ok 1 2\n",
            b"SLURMDASH-READ1 ok 1 0 1",
        ] {
            assert!(
                matches!(parse_read_output(out, 10), ReadOutcome::Garbage(_)),
                "{out:?}"
            );
        }
    }

    #[test]
    fn argv_keeps_path_out_of_script() {
        let argv = read_file_argv("/tmp/$(touch x)'; rm", ReadPos::Tail(7), 9);
        assert_eq!(argv[2], READ_SCRIPT);
        assert_eq!(argv[4], "/tmp/$(touch x)'; rm");
        assert_eq!(&argv[5..], ["tail", "7", "9"]);
    }

    #[test]
    fn slice_matches_script_semantics() {
        let f = b"0123456789";
        assert_eq!(slice_file(f, ReadPos::Offset(3), 4).data, b"3456");
        assert_eq!(slice_file(f, ReadPos::Tail(3), 100).data, b"789");
        let t = slice_file(f, ReadPos::Tail(8), 2);
        assert_eq!((t.offset, t.data.as_slice()), (8, &b"89"[..]));
        let past = slice_file(f, ReadPos::Offset(50), 4);
        assert!(past.truncated() && past.data.is_empty());
    }

    /// The script itself, run by the local sh: offsets, tail, truncation, errors.
    #[test]
    fn script_runs_under_local_sh() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").expect("write");
        let run = |path: &str, pos, max| {
            let argv = read_file_argv(path, pos, max);
            let out = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .output()
                .expect("sh");
            parse_read_output(&out.stdout, max)
        };
        let ps = p.to_str().expect("utf8 path");
        let ReadOutcome::Chunk(c) = run(ps, ReadPos::Offset(2), 3) else {
            panic!("offset read failed")
        };
        assert_eq!((c.offset, c.data.as_slice(), c.size), (2, &b"234"[..], 10));
        let ReadOutcome::Chunk(c) = run(ps, ReadPos::Tail(4), 100) else {
            panic!("tail read failed")
        };
        assert_eq!((c.offset, c.data.as_slice()), (6, &b"6789"[..]));
        let ReadOutcome::Chunk(c) = run(ps, ReadPos::Offset(20), 100) else {
            panic!("past-end read failed")
        };
        assert!(c.truncated());
        let missing = dir.path().join("nope");
        assert_eq!(
            run(missing.to_str().expect("utf8"), ReadPos::Offset(0), 1),
            ReadOutcome::NotFound
        );
        let d = dir.path().to_str().expect("utf8");
        assert_eq!(run(d, ReadPos::Offset(0), 1), ReadOutcome::NotRegular);
    }
}
