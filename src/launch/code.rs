//! The code a launch carries (`[launch] code = "snapshot"`): the files of the git repository
//! slurmdash was started in as they are on disk (tracked files with their uncommitted
//! changes, untracked files git does not ignore), minus `.slurmdashignore`, hashed by content
//! and packed as a tar for the cluster. Pure: `io::code` reads the repository and stages.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// The ignore file at the repository's root: a gitignore subset.
pub const IGNORE_FILE: &str = ".slurmdashignore";

/// `[launch] code_max_mb` when unset.
pub const DEFAULT_MAX_MB: u32 = 100;

/// One file of a snapshot, as read from the working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Relative to the repository's root, `/`-separated.
    pub path: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Regular {
        executable: bool,
        bytes: Vec<u8>,
    },
    /// A symbolic link and its target, kept as a link.
    Link(String),
}

impl File {
    pub fn size(&self) -> u64 {
        match &self.kind {
            Kind::Regular { bytes, .. } => bytes.len() as u64,
            Kind::Link(t) => t.len() as u64,
        }
    }
}

/// A gitignore subset: `*.ckpt` (any name, at any depth), `data/` (a directory anywhere),
/// `/build` (at the root only), `a/b` (from the root), `**/cache`, `?`, `#` comments and
/// `!` re-including what an earlier line left out. The last matching line decides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignore {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    negate: bool,
    dir_only: bool,
    /// Matched against any one component of the path (no `/` in the pattern).
    anywhere: bool,
    parts: Vec<String>,
}

impl Ignore {
    pub fn parse(text: &str) -> Self {
        let mut rules = Vec::new();
        for line in text.lines() {
            let mut l = line.trim_end();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let negate = l.starts_with('!');
            if negate {
                l = &l[1..];
            }
            let dir_only = l.ends_with('/');
            let l = l.trim_end_matches('/');
            if l.is_empty() {
                continue;
            }
            let anywhere = !l.contains('/');
            let l = l.trim_start_matches('/');
            rules.push(Rule {
                negate,
                dir_only,
                anywhere,
                parts: l.split('/').map(str::to_string).collect(),
            });
        }
        Self { rules }
    }

    /// Whether the file at `path` (relative, `/`-separated) is left out.
    pub fn ignores(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let mut out = false;
        for r in &self.rules {
            if r.matches(&comps) {
                out = !r.negate;
            }
        }
        out
    }
}

impl Rule {
    fn matches(&self, comps: &[&str]) -> bool {
        // A directory rule matches a proper prefix (the file lies below it); any other
        // matches the file itself or a directory above it.
        let limit = if self.dir_only {
            comps.len().saturating_sub(1)
        } else {
            comps.len()
        };
        if self.anywhere {
            let pat = &self.parts[0];
            return comps[..limit].iter().any(|c| glob(pat, c));
        }
        (1..=limit).any(|n| parts_match(&self.parts, &comps[..n]))
    }
}

/// Whether pattern components (with `**`: any number of components) match exactly `comps`.
fn parts_match(parts: &[String], comps: &[&str]) -> bool {
    match parts.split_first() {
        None => comps.is_empty(),
        Some((p, rest)) if p == "**" => {
            (0..=comps.len()).any(|skip| parts_match(rest, &comps[skip..]))
        }
        Some((p, rest)) => match comps.split_first() {
            Some((c, crest)) => glob(p, c) && parts_match(rest, crest),
            None => false,
        },
    }
}

/// `*` and `?` within one path component.
fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The snapshot's content hash: sha256 over the files sorted by path, each as its path, its
/// kind (executable, plain or link) and its bytes, each length-prefixed. The same content
/// gives the same hash whatever the order the files were read in or their times.
pub fn content_hash(files: &[File]) -> String {
    let mut sorted: Vec<&File> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut h = Sha256::new();
    for f in sorted {
        let (tag, bytes): (&[u8], &[u8]) = match &f.kind {
            Kind::Regular { executable, bytes } => (if *executable { b"x" } else { b"f" }, bytes),
            Kind::Link(t) => (b"l", t.as_bytes()),
        };
        h.update((f.path.len() as u64).to_le_bytes());
        h.update(f.path.as_bytes());
        h.update(tag);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let mut s = String::with_capacity(64);
    for b in h.finalize() {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Refuses a snapshot over `max_mb` MiB, naming its largest files.
pub fn check_size(files: &[File], max_mb: u32) -> Result<u64, String> {
    let total: u64 = files.iter().map(File::size).sum();
    let limit = u64::from(max_mb) * 1024 * 1024;
    if total <= limit {
        return Ok(total);
    }
    let mut big: Vec<&File> = files.iter().collect();
    big.sort_by(|a, b| b.size().cmp(&a.size()).then(a.path.cmp(&b.path)));
    let named: Vec<String> = big
        .iter()
        .take(5)
        .map(|f| format!("{} ({})", f.path, mb(f.size())))
        .collect();
    Err(format!(
        "the code snapshot is {}, over [launch] code_max_mb = {max_mb}; the largest files: {}; leave them out in {IGNORE_FILE} at the repository's root (a line such as `*.ckpt` or `data/`), or raise code_max_mb",
        mb(total),
        named.join(", ")
    ))
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
}

/// What the detail and the CLI say: `code abc1234 + 3 changed files`, `code abc1234`.
pub fn summary(commit: &str, dirty: u32) -> String {
    crate::registry::code_summary(commit, dirty)
}

/// How many paths `git status --porcelain -z` lists (a rename's second path is not one).
pub fn dirty_count(porcelain_z: &[u8]) -> u32 {
    let mut n = 0;
    let mut fields = porcelain_z.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let Some(f) = fields.next() {
        n += 1;
        if f.len() > 2 && (f[0] == b'R' || f[0] == b'C' || f[1] == b'R' || f[1] == b'C') {
            fields.next();
        }
    }
    n
}

/// A tar (ustar, with GNU long-name records for paths over 100 bytes) of `files`, every
/// entry owned by uid 0 and dated `mtime`: the cluster's `tar -x` reads it, and the
/// directories above each file are made on the way.
pub fn tar(files: &[File], mtime: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        let (mode, flag, size, link, body): (u32, u8, u64, &str, &[u8]) = match &f.kind {
            Kind::Regular { executable, bytes } => (
                if *executable { 0o755 } else { 0o644 },
                b'0',
                bytes.len() as u64,
                "",
                bytes,
            ),
            Kind::Link(t) => (0o777, b'2', 0, t.as_str(), &[]),
        };
        // GNU long-name records: `L` for the path, `K` for the link's target.
        for (flag, long) in [(b'L', f.path.as_str()), (b'K', link)] {
            if long.len() > 100 {
                let mut name = long.as_bytes().to_vec();
                name.push(0);
                let len = name.len() as u64;
                out.extend(header("././@LongLink", 0o644, flag, len, "", 0));
                push_padded(&mut out, &name);
            }
        }
        out.extend(header(&f.path, mode, flag, size, link, mtime));
        push_padded(&mut out, body);
    }
    out.extend([0u8; 1024]);
    out
}

fn push_padded(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(body);
    let pad = (512 - body.len() % 512) % 512;
    out.extend(std::iter::repeat_n(0u8, pad));
}

fn header(name: &str, mode: u32, flag: u8, size: u64, link: &str, mtime: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    let put = |h: &mut [u8; 512], at: usize, len: usize, b: &[u8]| {
        let n = b.len().min(len);
        h[at..at + n].copy_from_slice(&b[..n]);
    };
    let oct = |v: u64, len: usize| format!("{v:0w$o}\0", w = len - 1);
    put(&mut h, 0, 100, name.as_bytes());
    put(&mut h, 100, 8, oct(u64::from(mode), 8).as_bytes());
    put(&mut h, 108, 8, oct(0, 8).as_bytes());
    put(&mut h, 116, 8, oct(0, 8).as_bytes());
    put(&mut h, 124, 12, oct(size, 12).as_bytes());
    put(&mut h, 136, 12, oct(mtime, 12).as_bytes());
    h[148..156].copy_from_slice(b"        ");
    h[156] = flag;
    put(&mut h, 157, 100, link.as_bytes());
    put(&mut h, 257, 8, b"ustar  \0");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    put(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A snapshot ready to stage: what the registry records and the tar that goes over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    pub dirty: u32,
    pub hash: String,
    /// The repository's sub-directory slurmdash was started in (`""`: its root; else
    /// `a/b`), where the job runs unless the launch names a workdir.
    pub subdir: String,
    pub files: usize,
    pub bytes: u64,
    pub tar: Vec<u8>,
    /// An earlier launch's snapshot, already in `<results_root>/.code/<hash>`: nothing to
    /// upload (`tar` is empty), and its absence there is an error.
    pub reused: bool,
}

impl Snapshot {
    pub fn record(&self) -> crate::registry::CodeRecord {
        crate::registry::CodeRecord {
            commit: self.commit.clone(),
            dirty: self.dirty,
            hash: self.hash.clone(),
            subdir: self.subdir.clone(),
        }
    }

    /// The snapshot `r` an earlier launch ran, to run again from the cluster's copy.
    pub fn reused(r: &crate::registry::CodeRecord) -> Self {
        Snapshot {
            commit: r.commit.clone(),
            dirty: r.dirty,
            hash: r.hash.clone(),
            subdir: r.subdir.clone(),
            files: 0,
            bytes: 0,
            tar: Vec::new(),
            reused: true,
        }
    }
}

/// `<results_root>/.code/<hash>`: one staged copy per content.
pub fn cache_dir(results_root: &str, hash: &str) -> String {
    format!("{}/.code/{hash}", results_root.trim_end_matches('/'))
}

/// Where the job runs: `<job_dir>/code/<subdir>`.
pub fn workdir(job_dir: &str, subdir: &str) -> String {
    let base = format!("{job_dir}/code");
    if subdir.is_empty() {
        base
    } else {
        format!("{base}/{subdir}")
    }
}

/// Exit status of [`stage_argv`]'s script when `<results_root>/.code/<hash>` is not there
/// yet: the caller runs it again with the tar on stdin.
pub const ABSENT_EXIT: i32 = 3;

/// Snapshots in `<results_root>/.code` that no launch used for this many days are removed
/// when a launch stages one (each job runs its own copy in `<job_dir>/code`; only `same` in
/// a relaunch reads the cache).
pub const KEEP_DAYS: u32 = 30;

/// One remote command: makes `<root>/.code` (0700, a directory of yours, not a link), then,
/// when `<root>/.code/<hash>` is there (a directory of yours), copies it to `<job_dir>/code`
/// (`cp -a`) and prints `slurmdash-code reused`; when it is not and `upload` is 0, exits
/// [`ABSENT_EXIT`]; with `upload` 1 it unpacks the tar on stdin into a private temporary
/// directory beside it, renames that into place when whole (one that another launch put
/// there meanwhile wins), copies it and prints `slurmdash-code uploaded`. The snapshot's
/// mtime marks its last use; other snapshots unused for [`KEEP_DAYS`] and uploads left
/// half-done for a day are removed, and `slurmdash-code-pruned N` says how many.
pub fn stage_argv(results_root: &str, hash: &str, job_dir: &str, upload: bool) -> Vec<String> {
    let script = r#"umask 077; root=$1; hash=$2; job=$3; upload=$4
c=$root/.code; d=$c/$hash
mine() { [ ! -L "$1" ] && [ -d "$1" ] && [ -O "$1" ]; }
case $hash in ''|*[!0-9a-f]*) echo "bad snapshot hash $hash" >&2; exit 1 ;; esac
[ -e "$c" ] || [ -L "$c" ] || mkdir -m 700 -- "$c" || exit 1
mine "$c" || { echo "$c is not a directory of yours (or is a link): not used" >&2; exit 1; }
chmod 700 -- "$c" || exit 1
if [ -e "$d" ] || [ -L "$d" ]; then
  mine "$d" || { echo "$d is not a directory of yours (or is a link): not used" >&2; exit 1; }
  how=reused
elif [ "$upload" = 1 ]; then
  t=$(mktemp -d -- "$c/.tmp.XXXXXX") || exit 1
  if ! tar -x -f - -C "$t" --no-same-owner; then rm -rf -- "$t"; echo "unpacking the snapshot into $t failed" >&2; exit 1; fi
  mv -T -- "$t" "$d" 2>/dev/null || { rm -rf -- "$t"; mine "$d" || exit 1; }
  how=uploaded
else
  exit 3
fi
[ -e "$job/code" ] && { echo "$job/code exists already: not replaced" >&2; exit 1; }
cp -a -- "$d" "$job/code" || { echo "copying $d to $job/code failed" >&2; exit 1; }
touch -- "$d" 2>/dev/null
n=$(find "$c" -mindepth 1 -maxdepth 1 -type d -name '[0-9a-f]*' ! -name '*[!0-9a-f]*' ! -name "$hash" -mtime +KEEP -print -exec rm -rf -- {} + 2>/dev/null | wc -l)
find "$c" -mindepth 1 -maxdepth 1 -type d -name '.tmp.*' -mtime +1 -exec rm -rf -- {} + 2>/dev/null
echo "slurmdash-code-pruned $n"
echo "slurmdash-code $how $d""#;
    vec![
        "sh".into(),
        "-c".into(),
        script.replace("KEEP", &KEEP_DAYS.to_string()),
        "sh".into(),
        results_root.into(),
        hash.into(),
        job_dir.into(),
        if upload { "1" } else { "0" }.into(),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: &[u8]) -> File {
        File {
            path: path.into(),
            kind: Kind::Regular {
                executable: false,
                bytes: bytes.to_vec(),
            },
        }
    }

    #[test]
    fn ignore_file_subset() {
        let ig = Ignore::parse(
            "# big things\n*.ckpt\ndata/\n/build\n**/cache\nlogs/*.txt\n!keep.ckpt\n\n",
        );
        for yes in [
            "model.ckpt",
            "runs/a/model.ckpt",
            "data/x.bin",
            "src/data/x.bin",
            "build/out.o",
            "cache/a",
            "x/y/cache/a",
            "logs/a.txt",
        ] {
            assert!(ig.ignores(yes), "{yes}");
        }
        for no in [
            "keep.ckpt",
            "runs/keep.ckpt",
            "data",
            "src/build/out.o",
            "train.py",
            "logs/sub/a.txt",
            "mydata/x",
            "# big things",
        ] {
            assert!(!ig.ignores(no), "{no}");
        }
        assert!(!Ignore::default().ignores("a.ckpt"));
    }

    #[test]
    fn hash_is_of_content_not_order() {
        let a = [file("a.py", b"print(1)"), file("b/c.py", b"x")];
        let b = [file("b/c.py", b"x"), file("a.py", b"print(1)")];
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_eq!(content_hash(&a).len(), 64);
        let c = [file("a.py", b"print(2)"), file("b/c.py", b"x")];
        assert_ne!(content_hash(&a), content_hash(&c));
        let mut d = a.clone();
        d[0].kind = Kind::Regular {
            executable: true,
            bytes: b"print(1)".to_vec(),
        };
        assert_ne!(content_hash(&a), content_hash(&d));
        // Moving bytes between path and content does not collide.
        assert_ne!(
            content_hash(&[file("ab", b"c")]),
            content_hash(&[file("a", b"bc")])
        );
    }

    #[test]
    fn size_check_names_the_largest_files() {
        let files = [
            file("small.py", b"x"),
            file("big.ckpt", &vec![0; 2 * 1024 * 1024]),
        ];
        assert_eq!(check_size(&files, 3).unwrap(), 2 * 1024 * 1024 + 1);
        let e = check_size(&files, 1).unwrap_err();
        assert!(e.contains("over [launch] code_max_mb = 1"), "{e}");
        assert!(e.contains("big.ckpt (2.0 MB), small.py"), "{e}");
        assert!(e.contains(".slurmdashignore"), "{e}");
    }

    #[test]
    fn summary_text() {
        let c = "abc1234def5678";
        assert_eq!(summary(c, 0), "code abc1234");
        assert_eq!(summary(c, 1), "code abc1234 + 1 changed file");
        assert_eq!(summary(c, 3), "code abc1234 + 3 changed files");
    }

    #[test]
    fn dirty_count_reads_porcelain_z() {
        assert_eq!(dirty_count(b""), 0);
        assert_eq!(dirty_count(b" M a.py\0?? new file.txt\0"), 2);
        // A rename carries its old path as a second field.
        assert_eq!(dirty_count(b"R  new.py\0old.py\0 D gone\0"), 2);
    }

    /// The system's tar reads what [`tar`] writes, long names, links and modes included.
    #[test]
    fn tar_is_read_by_tar() {
        let long = format!("{}/{}.py", "d".repeat(80), "n".repeat(60));
        let files = [
            file("a.py", b"hello\n"),
            File {
                path: "bin/run.sh".into(),
                kind: Kind::Regular {
                    executable: true,
                    bytes: b"#!/bin/sh\n".to_vec(),
                },
            },
            file(&long, b"long\n"),
            File {
                path: "link".into(),
                kind: Kind::Link("a.py".into()),
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("tar")
            .args(["-x", "-f", "-", "-C"])
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&tar(&files, 1_700_000_000))
            .unwrap();
        assert!(child.wait().unwrap().success());
        let p = dir.path();
        assert_eq!(std::fs::read(p.join("a.py")).unwrap(), b"hello\n");
        assert_eq!(std::fs::read(p.join(&long)).unwrap(), b"long\n");
        assert_eq!(
            std::fs::read_link(p.join("link")).unwrap().to_str(),
            Some("a.py")
        );
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(p.join("bin/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert!(m & 0o100 != 0, "{m:o}");
    }

    /// The staging script run by `sh` here: the snapshot used is kept and marked used, one
    /// unused for longer than [`KEEP_DAYS`] goes and so does an upload left half-done for
    /// days; a recent one and a name not a hash stay.
    #[test]
    fn staging_removes_snapshots_unused_for_keep_days() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("results");
        let c = root.join(".code");
        let old_day = format!("{}", KEEP_DAYS + 5);
        for (name, days) in [
            ("aa11", old_day.as_str()),
            ("bb22", "2"),
            ("notes", old_day.as_str()),
            (".tmp.x1", "3"),
            ("cc33", old_day.as_str()),
        ] {
            let d = c.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("f"), b"x").unwrap();
            let ok = std::process::Command::new("touch")
                .args(["-d", &format!("{days} days ago")])
                .arg(&d)
                .status()
                .unwrap();
            assert!(ok.success());
        }
        std::fs::set_permissions(&c, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let job = tmp.path().join("job");
        std::fs::create_dir(&job).unwrap();
        let argv = stage_argv(root.to_str().unwrap(), "cc33", job.to_str().unwrap(), false);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("slurmdash-code-pruned 1\n"), "{stdout}");
        assert!(stdout.contains("slurmdash-code reused "), "{stdout}");
        let mut left: Vec<String> = std::fs::read_dir(&c)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["bb22", "cc33", "notes"]);
        assert_eq!(std::fs::read(job.join("code/f")).unwrap(), b"x");
        // The one used is marked used now: it is not the next to go.
        let used = std::fs::metadata(c.join("cc33"))
            .unwrap()
            .modified()
            .unwrap();
        assert!(used.elapsed().unwrap() < std::time::Duration::from_secs(600));
    }

    #[test]
    fn paths() {
        assert_eq!(cache_dir("/r/", "ab"), "/r/.code/ab");
        assert_eq!(workdir("/r/j", ""), "/r/j/code");
        assert_eq!(workdir("/r/j", "a/b"), "/r/j/code/a/b");
        let argv = stage_argv("/r", "ab", "/r/j", true);
        assert_eq!(&argv[4..], ["/r", "ab", "/r/j", "1"]);
    }
}
