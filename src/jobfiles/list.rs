//! Listing a directory on the cluster: one fixed script, the directory passed as an
//! argument, and a pure parser of its NUL-separated records. File names may hold any byte
//! but NUL and `/` (newlines, quotes, leading dashes, bytes that are not UTF-8): each name
//! is one NUL-terminated field, kept as bytes.

use super::{encode_arg, ParseError};

/// Entries listed at most per directory; the rest are only counted.
pub const MAX_ENTRIES: usize = 5_000;
/// Files listed at most for a directory fetch.
pub const MAX_TREE: usize = 100_000;

/// `sh -c LIST_SCRIPT sh ENCODED_DIR MAX DEPTH`: the directory arrives `printf %b`-encoded
/// (see [`encode_arg`]); DEPTH is `1` for one level, empty for the whole tree. Prints, per
/// entry, four NUL-terminated fields: type (find's `%y` and `%Y`: `f`, `d`, `l` + the
/// target's type), size in bytes, mtime (seconds, with a fraction), the path below DIR; at
/// most MAX entries; then `TOTAL`, NUL, and the number of entries there are, with a newline.
/// Exit 3: no such directory, 4: not a directory, 5: not readable.
pub const LIST_SCRIPT: &str = r#"d=$(printf '%bx' "$1"); d=${d%x}
case $d in -*) d=./$d;; esac
case $2 in ''|*[!0-9]*) echo "bad limit: $2" >&2; exit 2;; esac
case $3 in '') depth=;; *[!0-9]*) echo "bad depth: $3" >&2; exit 2;; *) depth="-maxdepth $3";; esac
[ -e "$d" ] || [ -L "$d" ] || { echo "no such file or directory" >&2; exit 3; }
[ -d "$d" ] || { echo "not a directory" >&2; exit 4; }
{ [ -r "$d" ] && [ -x "$d" ]; } || { echo "permission denied" >&2; exit 5; }
find "$d" -mindepth 1 $depth -printf '%y%Y\0%s\0%T@\0%P\0' 2>/dev/null | head -z -n "$(($2 * 4))"
printf 'TOTAL\0'
find "$d" -mindepth 1 $depth -printf x 2>/dev/null | wc -c
"#;

/// The argv that lists `dir` (one level when `depth` is `Some(1)`, the whole tree with
/// `None`), at most `max` entries.
pub fn list_argv(dir: &[u8], max: usize, depth: Option<u32>) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        LIST_SCRIPT.into(),
        "sh".into(),
        encode_arg(dir),
        max.to_string(),
        depth.map(|d| d.to_string()).unwrap_or_default(),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
    /// A symbolic link (to a directory when `dir` of its target is known).
    Link {
        to_dir: bool,
    },
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path below the listed directory (one name for a one-level listing), as bytes.
    pub name: Vec<u8>,
    pub kind: Kind,
    pub size: u64,
    /// Seconds since the epoch.
    pub mtime: i64,
}

impl Entry {
    /// The name as shown: invalid UTF-8 as `\xNN`, control characters as `\n`, `\t`, `\xNN`.
    pub fn display(&self) -> String {
        super::display_name(&self.name)
    }

    /// A regular file, or a link that is not to a directory (previewed and fetched through
    /// the link; a broken one says so when read).
    pub fn is_file_like(&self) -> bool {
        matches!(self.kind, Kind::File | Kind::Link { to_dir: false })
    }

    /// Entered with enter: a directory or a link to one.
    pub fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Dir | Kind::Link { to_dir: true })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listing {
    pub entries: Vec<Entry>,
    /// Entries the directory holds; more than `entries.len()` when the listing was cut.
    pub total: u64,
}

impl Listing {
    /// Entries not listed (beyond the limit).
    pub fn more(&self) -> u64 {
        self.total.saturating_sub(self.entries.len() as u64)
    }

    /// Directories first, then by name.
    pub fn sort(&mut self) {
        self.entries.sort_by(|a, b| {
            b.is_dir()
                .cmp(&a.is_dir())
                .then_with(|| a.name.cmp(&b.name))
        });
    }
}

fn kind_of(t: &[u8]) -> Result<Kind, String> {
    match t {
        [b'd', _] => Ok(Kind::Dir),
        [b'f', _] => Ok(Kind::File),
        [b'l', y] => Ok(Kind::Link { to_dir: *y == b'd' }),
        // find's own letters for the rest: `p`, `s`, `b`, `c`, `D` (a door), `U` (unknown).
        [a, _] if a.is_ascii_alphabetic() => Ok(Kind::Other),
        _ => Err(format!(
            "`{}` is not an entry type",
            String::from_utf8_lossy(t)
        )),
    }
}

/// Parses what [`LIST_SCRIPT`] printed.
pub fn parse_listing(out: &[u8]) -> Result<Listing, ParseError> {
    let mut fields = out.split(|b| *b == 0);
    let mut entries = Vec::new();
    loop {
        let Some(t) = fields.next() else {
            return Err(ParseError::new("the listing ended without its TOTAL line"));
        };
        if t == b"TOTAL" {
            let rest = fields.next().unwrap_or_default();
            if fields.next().is_some() {
                return Err(ParseError::new("output after the TOTAL line"));
            }
            let n = std::str::from_utf8(rest)
                .ok()
                .map(str::trim)
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| {
                    ParseError::new(format!(
                        "`{}` is not an entry count",
                        String::from_utf8_lossy(rest)
                    ))
                })?;
            let mut l = Listing {
                total: n.max(entries.len() as u64),
                entries,
            };
            l.sort();
            return Ok(l);
        }
        let kind = kind_of(t).map_err(ParseError::new)?;
        let (Some(size), Some(mtime), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(ParseError::new(format!(
                "entry {} is cut short",
                entries.len() + 1
            )));
        };
        let size = std::str::from_utf8(size)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                ParseError::new(format!("`{}` is not a size", String::from_utf8_lossy(size)))
            })?;
        let mtime = std::str::from_utf8(mtime)
            .ok()
            .and_then(|s| s.split('.').next())
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| {
                ParseError::new(format!(
                    "`{}` is not a time",
                    String::from_utf8_lossy(mtime)
                ))
            })?;
        if name.is_empty() {
            return Err(ParseError::new(format!(
                "entry {} has no name",
                entries.len() + 1
            )));
        }
        entries.push(Entry {
            name: name.to_vec(),
            kind,
            size,
            mtime,
        });
    }
}

#[cfg(test)]
#[path = "list_props.rs"]
mod props;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What find prints for these entries (type, size, mtime, name), then the total.
    fn out(entries: &[(&str, u64, &[u8])], total: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for (t, size, name) in entries {
            v.extend_from_slice(format!("{t}\0{size}\0{}.5000000000\0", 1_700_000_000).as_bytes());
            v.extend_from_slice(name);
            v.push(0);
        }
        v.extend_from_slice(format!("TOTAL\0{total}\n").as_bytes());
        v
    }

    #[test]
    fn hostile_names_come_through_byte_for_byte() {
        let names: [&[u8]; 7] = [
            b"two\nlines",
            b"with space",
            b"it's \"quoted\"",
            b"\xff\xfe not utf-8",
            b"-rf",
            b"TOTAL",
            b"$(rm -rf ~)",
        ];
        let entries: Vec<(&str, u64, &[u8])> = names.iter().map(|n| ("ff", 3, *n)).collect();
        let l = parse_listing(&out(&entries, 7)).unwrap();
        assert_eq!(l.entries.len(), 7);
        for n in names {
            assert!(l.entries.iter().any(|e| e.name == n), "{n:?}");
        }
        assert_eq!(l.more(), 0);
        let bad = l
            .entries
            .iter()
            .find(|e| e.name.starts_with(b"\xff"))
            .unwrap();
        assert_eq!(bad.display(), "\\xff\\xfe not utf-8");
        let nl = l
            .entries
            .iter()
            .find(|e| e.name.starts_with(b"two"))
            .unwrap();
        assert_eq!(nl.display(), "two\\nlines");
    }

    #[test]
    fn kinds_sizes_times_order_and_the_count_beyond_the_limit() {
        let l = parse_listing(&out(
            &[
                ("ff", 10, b"b.txt"),
                ("dd", 4096, b"specs"),
                ("ld", 7, b"latest"),
                ("lN", 7, b"broken"),
                ("pp", 0, b"fifo"),
            ],
            5012,
        ))
        .unwrap();
        let names: Vec<String> = l.entries.iter().map(Entry::display).collect();
        assert_eq!(names, ["latest", "specs", "b.txt", "broken", "fifo"]);
        assert_eq!(l.entries[0].kind, Kind::Link { to_dir: true });
        assert_eq!(l.entries[3].kind, Kind::Link { to_dir: false });
        assert_eq!(l.entries[4].kind, Kind::Other);
        assert_eq!(l.entries[2].size, 10);
        assert_eq!(l.entries[2].mtime, 1_700_000_000);
        assert_eq!(l.total, 5012);
        assert_eq!(l.more(), 5007);
    }

    #[test]
    fn an_empty_directory_and_broken_output() {
        assert_eq!(parse_listing(b"TOTAL\x000\n").unwrap(), Listing::default());
        for bad in [
            &b""[..],
            b"ff\x003\x001.0\x00a\x00",
            b"ff\x003\x00",
            b"zz\x00x\x001\x00a\x00TOTAL\x001\n",
            b"ff\x00big\x001\x00a\x00TOTAL\x001\n",
            b"ff\x001\x00then\x00a\x00TOTAL\x001\n",
            b"TOTAL\x00many\n",
            b"ff\x001\x001\x00\x00TOTAL\x001\n",
        ] {
            assert!(parse_listing(bad).is_err(), "{bad:?}");
        }
    }

    /// Real output of the script on the dev cluster's login node (see the fixture's README).
    #[test]
    fn real_output_from_the_dev_cluster_parses() {
        let l = parse_listing(include_bytes!(
            "../../tests/fixtures/files/listing_odd_dir.out"
        ))
        .unwrap();
        let names: Vec<String> = l.entries.iter().map(Entry::display).collect();
        assert_eq!(
            names,
            [
                "empty",
                "sub",
                "-rf",
                "it's \"q\" $(x)",
                "link",
                "two\\nlines",
                "\\xff\\xfe not utf-8"
            ]
        );
        assert_eq!(l.total, 7);
        let link = l.entries.iter().find(|e| e.name == b"link").unwrap();
        assert_eq!(link.kind, Kind::Link { to_dir: false });
        let rf = l.entries.iter().find(|e| e.name == b"-rf").unwrap();
        assert_eq!((rf.kind, rf.size), (Kind::File, 70_000));
        let tree = parse_listing(include_bytes!(
            "../../tests/fixtures/files/listing_odd_tree.out"
        ))
        .unwrap();
        assert!(tree
            .entries
            .iter()
            .any(|e| e.name == b"sub/deep.txt" && e.size == 4));
        assert_eq!(tree.total, 8);
    }

    #[test]
    fn the_directory_is_an_argument_never_script_text() {
        let a = list_argv(b"/scratch/it's $(x) \n-dir", 5000, Some(1));
        assert_eq!(a[..4], ["sh", "-c", LIST_SCRIPT, "sh"]);
        assert!(!LIST_SCRIPT.contains("scratch"));
        assert_eq!(a[5], "5000");
        assert_eq!(a[6], "1");
        assert_eq!(list_argv(b"/x", 10, None)[6], "");
    }

    /// The real script on this machine's find, over a directory of hostile names.
    #[test]
    fn the_script_lists_hostile_names_locally() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("-job dir 'x'\n");
        std::fs::create_dir(&root).unwrap();
        let names: [&[u8]; 6] = [
            b"two\nlines",
            b"with space",
            b"it's \"quoted\"",
            b"\xff\xfe not utf-8",
            b"-rf",
            b"\\c and \\0101",
        ];
        for n in names {
            std::fs::write(root.join(std::ffi::OsStr::from_bytes(n)), b"abc").unwrap();
        }
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/deep"), b"12345").unwrap();
        let run = |max: usize, depth: Option<u32>| {
            let argv = list_argv(root.as_os_str().as_bytes(), max, depth);
            let out = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            parse_listing(&out.stdout).unwrap()
        };
        let l = run(MAX_ENTRIES, Some(1));
        assert_eq!(l.total, 7);
        for n in names {
            let e = l.entries.iter().find(|e| e.name == n).unwrap();
            assert_eq!((e.kind, e.size), (Kind::File, 3), "{n:?}");
        }
        assert_eq!(l.entries[0].name, b"sub");
        assert_eq!(l.entries[0].kind, Kind::Dir);
        // A cut listing says how many more there are.
        let cut = run(2, Some(1));
        assert_eq!((cut.entries.len(), cut.more()), (2, 5));
        // The whole tree, with paths below the root.
        let tree = run(MAX_TREE, None);
        assert!(tree
            .entries
            .iter()
            .any(|e| e.name == b"sub/deep" && e.size == 5));
        // A file, a missing path and a bad limit are refused with their exit codes.
        let code = |p: &[u8]| {
            let argv = list_argv(p, 10, Some(1));
            std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .output()
                .unwrap()
                .status
                .code()
        };
        let file = root.join("sub/deep");
        assert_eq!(code(file.as_os_str().as_bytes()), Some(4));
        assert_eq!(code(b"/no/such/dir"), Some(3));
    }
}
