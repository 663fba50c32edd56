//! Container images for Pyxis/Enroot: the accepted forms, the Pyxis form srun takes, and the
//! optional conversion to a cached SQSH file on the shared filesystem.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Image {
    /// A squashfs file on the cluster: used as is, never converted.
    Sqsh(String),
    /// Pyxis' `registry#image:tag` (or a Docker Hub `image:tag`).
    Remote(String),
}

impl Image {
    /// What `srun --container-image=` gets when no SQSH cache is used.
    pub fn pyxis(&self) -> &str {
        match self {
            Image::Sqsh(p) | Image::Remote(p) => p,
        }
    }
    pub fn is_latest(&self) -> bool {
        match self {
            Image::Sqsh(_) => false,
            Image::Remote(r) => {
                let last = r.rsplit(['/', '#']).next().unwrap_or(r);
                !last.contains(':') || last.ends_with(":latest")
            }
        }
    }
}

/// Accepts `/path/image.sqsh`, `registry#image:tag`, `docker://registry#image:tag` and plain
/// `registry/image:tag` (converted to `registry#image:tag` when the first component is a
/// registry host, i.e. contains a `.` or `:` or is `localhost`).
pub fn parse_image(s: &str) -> Result<Image, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("no image given".into());
    }
    if s.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == '\\') {
        return Err(format!("image `{s}` contains spaces or quotes"));
    }
    if s.starts_with('/') {
        return if s.ends_with(".sqsh") || s.ends_with(".squashfs") {
            Ok(Image::Sqsh(s.to_string()))
        } else {
            Err(format!(
                "`{s}` is a path but not a .sqsh image; give /path/image.sqsh or a registry image"
            ))
        };
    }
    if let Some(rest) = s.strip_prefix("lustre://") {
        return parse_image(rest);
    }
    let s = s.strip_prefix("docker://").unwrap_or(s);
    if s.contains("://") {
        return Err(format!(
            "image `{s}`: only docker:// and plain registry images are understood"
        ));
    }
    if s.contains('#') {
        return Ok(Image::Remote(s.to_string()));
    }
    match s.split_once('/') {
        Some((host, rest)) if host.contains('.') || host.contains(':') || host == "localhost" => {
            Ok(Image::Remote(format!("{host}#{rest}")))
        }
        _ => Ok(Image::Remote(s.to_string())),
    }
}

/// How much of the image reference the file name keeps readable; the hash after it tells
/// apart references that differ further on.
const READABLE: usize = 120;

/// The cache file's name for a remote image: the reference made filename-safe (other
/// characters become `+`, cut at [`READABLE`]), then the first 16 hex digits of the sha256 of
/// the whole reference. Two references never share a file (a digest-pinned
/// `image@sha256:...` has one of its own), which the readable part alone did not ensure:
/// `ubuntu:22.04` and `ubuntu/22.04` both read `ubuntu+22.04`.
pub fn sqsh_name(image: &str) -> String {
    use sha2::{Digest, Sha256};
    let readable: String = image
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '+'
            }
        })
        .take(READABLE)
        .collect();
    let readable = readable.trim_start_matches('.');
    let sum = Sha256::digest(image.as_bytes());
    let short: String = sum.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{readable}-{short}.sqsh")
}

/// The cached SQSH path for a remote image: one file per image reference under `cache_dir`.
pub fn sqsh_path(cache_dir: &str, image: &str) -> String {
    format!("{}/{}", cache_dir.trim_end_matches('/'), sqsh_name(image))
}

/// Exit status of [`CONVERT_SCRIPT`] when the cache is not safe to use (its stderr says why
/// and what to do).
pub const UNSAFE_CACHE: i32 = 3;

/// `sh -c CONVERT_SCRIPT sh SQSH IMAGE PARTITION FORCE`, run on the login node before
/// submitting. The cache directory is created 0700 and must be a real directory of the
/// user that no one else can write, below directories no one else can write (or sticky
/// ones): otherwise another user could swap the image a job runs. A cached file is used
/// only when it is a regular file of the user that no one else can write; anything else is
/// refused with the path and the fix, never used. A conversion goes into a private
/// temporary directory beside the file (0700) and is renamed into place 0600 when whole, so
/// a job never sees a half-written image. Prints `cached` or `converted`.
pub const CONVERT_SCRIPT: &str = r#"sqsh=$1; image=$2; part=$3; force=$4
refuse() { echo "slurmdash: $1" >&2; exit 3; }
case $sqsh in /?*/*) ;; *) refuse "the SQSH cache of $sqsh is not an absolute path: set sqsh_cache_dir to one" ;; esac
dir=${sqsh%/*}
me=$(id -u)
# owner and octal mode of $1
info() { stat -c '%u %a' -- "$1" 2>/dev/null; }
if [ ! -e "$dir" ] && [ ! -L "$dir" ]; then
  parent=${dir%/*}
  mkdir -p -- "${parent:-/}" || exit 1
  mkdir -m 700 -- "$dir" 2>/dev/null || [ -d "$dir" ] || exit 1
fi
[ -L "$dir" ] && refuse "the SQSH cache $dir is a symbolic link (whoever can change it chooses the images your jobs run): remove the link (rm '$dir') so slurmdash creates a private directory there, or set sqsh_cache_dir to the real directory"
[ -d "$dir" ] || refuse "the SQSH cache $dir is not a directory: move it away, or set sqsh_cache_dir to another path"
set -- $(info "$dir")
[ "${1-}" = "$me" ] || refuse "the SQSH cache $dir belongs to uid ${1-?}, not to you (uid $me): its owner could put any image there; set sqsh_cache_dir to a directory of your own"
[ $((0${2:-0} & 022)) = 0 ] || refuse "the SQSH cache $dir is writable by group or others (mode ${2-}): another user could replace an image your jobs run; run chmod 700 '$dir' and remove any image you did not convert yourself"
d=$dir
while [ -n "$d" ]; do
  d=${d%/*}
  a=${d:-/}
  set -- $(info "$a")
  if [ "${1-}" != 0 ] && [ "${1-}" != "$me" ]; then
    refuse "$a, above the SQSH cache $dir, belongs to uid ${1-?}: its owner could replace the cache; set sqsh_cache_dir to a directory below ones only you and root own"
  fi
  if [ $((0${2:-0} & 022)) != 0 ] && [ $((0${2:-0} & 01000)) = 0 ]; then
    refuse "$a, above the SQSH cache $dir, is writable by other users without the sticky bit (mode ${2-}): one of them could replace the cache; run chmod go-w '$a' or set sqsh_cache_dir elsewhere"
  fi
done
if [ -e "$sqsh" ] || [ -L "$sqsh" ]; then
  [ -L "$sqsh" ] && refuse "the cached image $sqsh is a symbolic link, not an image slurmdash converted: remove it (rm '$sqsh') and launch again to convert it"
  [ -f "$sqsh" ] || refuse "the cached image $sqsh is not a regular file: move it away and launch again"
  set -- $(info "$sqsh")
  [ "${1-}" = "$me" ] || refuse "the cached image $sqsh belongs to uid ${1-?}, not to you (uid $me), so you did not convert it: remove it (rm '$sqsh') and launch again to convert it yourself"
  [ $((0${2:-0} & 022)) = 0 ] || refuse "the cached image $sqsh is writable by group or others (mode ${2-}): it may have been changed; remove it (rm '$sqsh') and launch again to convert it anew"
  if [ "$force" != 1 ] && [ -s "$sqsh" ]; then echo cached; exit 0; fi
fi
umask 077
tmp=$(mktemp -d "$dir/.convert.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
srun -n1 -p "$part" enroot import -o "$tmp/image.sqsh" "docker://$image" || exit 1
chmod 600 "$tmp/image.sqsh" && mv -f "$tmp/image.sqsh" "$sqsh" && echo converted
"#;

/// How a remote image reaches the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    pub image: String,
    pub sqsh: String,
    pub partition: String,
    /// Reconvert even when the cache holds the file (`:latest` with force reconvert).
    pub force: bool,
}

impl Conversion {
    /// The step run on the login node before submitting ([`CONVERT_SCRIPT`]); the values
    /// arrive as separate arguments.
    pub fn argv(&self) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            CONVERT_SCRIPT.into(),
            "sh".into(),
            self.sqsh.clone(),
            self.image.clone(),
            self.partition.clone(),
            if self.force { "1" } else { "0" }.into(),
        ]
    }
}

/// The conversion for `image`, or None when it is already a SQSH file or caching is off.
pub fn conversion(
    image: &Image,
    sqsh_cache: bool,
    force_reconvert: bool,
    cache_dir: &str,
    partition: &str,
) -> Option<Conversion> {
    match image {
        Image::Sqsh(_) => None,
        Image::Remote(_) if !sqsh_cache => None,
        Image::Remote(r) => Some(Conversion {
            image: r.clone(),
            sqsh: sqsh_path(cache_dir, r),
            partition: partition.to_string(),
            force: force_reconvert && image.is_latest(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_image_form_becomes_pyxis_form() {
        let p = |s: &str| parse_image(s).unwrap();
        assert_eq!(
            p("/lustre/img/pt.sqsh"),
            Image::Sqsh("/lustre/img/pt.sqsh".into())
        );
        assert_eq!(
            p("nvcr.io#nvidia/pytorch:24.01-py3").pyxis(),
            "nvcr.io#nvidia/pytorch:24.01-py3"
        );
        assert_eq!(
            p("docker://nvcr.io#nvidia/pytorch:24.01-py3").pyxis(),
            "nvcr.io#nvidia/pytorch:24.01-py3"
        );
        assert_eq!(
            p("nvcr.io/nvidia/pytorch:24.01-py3").pyxis(),
            "nvcr.io#nvidia/pytorch:24.01-py3"
        );
        assert_eq!(
            p("registry:5000/team/img:1").pyxis(),
            "registry:5000#team/img:1"
        );
        assert_eq!(p("ubuntu:22.04").pyxis(), "ubuntu:22.04");
        assert_eq!(p("library/ubuntu:22.04").pyxis(), "library/ubuntu:22.04");
        assert!(parse_image("/lustre/img/pt.tar").is_err());
        assert!(parse_image("nvcr.io/x:1; rm -rf /").is_err());
        assert!(parse_image("s3://bucket/img").is_err());
    }

    #[test]
    fn latest_and_cache_paths() {
        assert!(parse_image("nvcr.io/nvidia/pytorch").unwrap().is_latest());
        assert!(parse_image("nvcr.io/nvidia/pytorch:latest")
            .unwrap()
            .is_latest());
        assert!(!parse_image("nvcr.io/nvidia/pytorch:24.01")
            .unwrap()
            .is_latest());
        let p = sqsh_path("/lustre/cache/", "nvcr.io#nvidia/pytorch:24.01");
        assert!(
            p.starts_with("/lustre/cache/nvcr.io+nvidia+pytorch+24.01-") && p.ends_with(".sqsh"),
            "{p}"
        );
        let img = parse_image("nvcr.io/nvidia/pytorch:24.01").unwrap();
        let c = conversion(&img, true, true, "/c", "cpu").unwrap();
        assert!(!c.force, "a pinned tag is never reconverted");
        let latest = parse_image("nvcr.io/nvidia/pytorch:latest").unwrap();
        assert!(conversion(&latest, true, true, "/c", "cpu").unwrap().force);
        assert!(conversion(&latest, false, true, "/c", "cpu").is_none());
        let argv = c.argv();
        assert_eq!(
            &argv[4..],
            [
                sqsh_path("/c", "nvcr.io#nvidia/pytorch:24.01").as_str(),
                "nvcr.io#nvidia/pytorch:24.01",
                "cpu",
                "0"
            ]
        );
        assert!(argv[2].contains("enroot import -o"));
    }

    #[test]
    fn every_image_reference_gets_a_file_of_its_own() {
        // Pairs that read the same once made filename-safe, and so shared one file.
        let pairs = [
            ("ubuntu:22.04", "ubuntu/22.04"),
            ("host:5000#team/img:1", "host:5000#team/img/1"),
            (
                "nvcr.io#nvidia/pytorch:24.01",
                "nvcr.io#nvidia+pytorch:24.01",
            ),
            ("reg#a/b-c:1", "reg#a/b:c-1"),
        ];
        for (a, b) in pairs {
            let (x, y) = (sqsh_name(a), sqsh_name(b));
            assert_ne!(x, y, "{a} and {b}");
            // Still readable, and stable.
            assert!(x.starts_with(&a.replace([':', '/', '#'], "+")), "{x}");
            assert_eq!(x, sqsh_name(a));
        }
        // A digest-pinned reference is a file apart from its tag, named after the digest.
        let digest = format!("reg#team/tiny@sha256:{}", "ab".repeat(32));
        let pinned = sqsh_name(&digest);
        assert_ne!(pinned, sqsh_name("reg#team/tiny:1.0"));
        assert!(pinned.contains("+sha256+abab"), "{pinned}");
        // References past the readable length differ by their hash; names stay short and
        // never hidden.
        let long = "r#".to_string() + &"x".repeat(300);
        let (l1, l2) = (sqsh_name(&(long.clone() + ":1")), sqsh_name(&(long + ":2")));
        assert_ne!(l1, l2);
        assert!(l1.len() < 160, "{l1}");
        assert!(!sqsh_name("..hidden:1").starts_with('.'));
    }

    /// The conversion script run here, with a stand-in `srun` that writes the image file
    /// `enroot import -o FILE` would: (exit code, stdout, stderr).
    async fn convert(
        bin: &std::path::Path,
        sqsh: &str,
        force: bool,
    ) -> (Option<i32>, String, String) {
        use crate::remote::Remote;
        let c = Conversion {
            image: "reg#team/tiny:1.0".into(),
            sqsh: sqsh.into(),
            partition: "cpu".into(),
            force,
        };
        let mut argv = vec![
            "env".to_string(),
            format!("PATH={}:/usr/bin:/bin", bin.display()),
        ];
        argv.extend(c.argv());
        let out = crate::remote::LocalRemote::new()
            .run(&argv, None, std::time::Duration::from_secs(20))
            .await
            .unwrap();
        (out.code, out.stdout_lossy(), out.stderr_lossy())
    }

    fn mode(p: &std::path::Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(p: &std::path::Path, m: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[tokio::test]
    async fn the_cache_is_private_and_anything_another_user_could_change_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let srun = bin.join("srun");
        // srun -n1 -p PART enroot import -o FILE docker://IMAGE
        std::fs::write(&srun, "#!/bin/sh\nprintf 'hsqs %s' \"$8\" > \"$7\"\n").unwrap();
        chmod(&srun, 0o755);
        let cache = t.path().join("scratch/sqsh-cache");
        let sqsh = sqsh_path(cache.to_str().unwrap(), "reg#team/tiny:1.0");
        let file = std::path::Path::new(&sqsh);

        // Converted into a new 0700 directory, the file 0600, nothing else left there.
        let (code, out, err) = convert(&bin, &sqsh, false).await;
        assert_eq!((code, out.as_str()), (Some(0), "converted\n"), "{err}");
        assert_eq!(mode(&cache), 0o700);
        assert_eq!(mode(file), 0o600);
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
        assert_eq!((convert(&bin, &sqsh, false).await.1), "cached\n");

        let refused = |r: (Option<i32>, String, String), what: &str, fix: &str| {
            assert_eq!(r.0, Some(UNSAFE_CACHE), "{what}: {r:?}");
            assert!(r.2.contains(what) && r.2.contains(fix), "{what}: {}", r.2);
        };
        // A cache directory others can write.
        chmod(&cache, 0o777);
        let r = convert(&bin, &sqsh, false).await;
        refused(
            r,
            &format!("{} is writable by group or others", cache.display()),
            "chmod 700",
        );
        chmod(&cache, 0o700);
        // A cached file others can write; a link in its place; a directory in its place.
        chmod(file, 0o666);
        refused(
            convert(&bin, &sqsh, true).await,
            &format!("{sqsh} is writable by group or others"),
            "rm",
        );
        std::fs::remove_file(file).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", file).unwrap();
        refused(
            convert(&bin, &sqsh, false).await,
            &format!("{sqsh} is a symbolic link"),
            "rm",
        );
        std::fs::remove_file(file).unwrap();
        // The cache directory itself a link; a directory above it others can write.
        let real = t.path().join("real");
        std::fs::rename(&cache, &real).unwrap();
        std::os::unix::fs::symlink(&real, &cache).unwrap();
        refused(
            convert(&bin, &sqsh, false).await,
            &format!("{} is a symbolic link", cache.display()),
            "rm",
        );
        std::fs::remove_file(&cache).unwrap();
        std::fs::rename(&real, &cache).unwrap();
        let above = t.path().join("scratch");
        chmod(&above, 0o777);
        refused(
            convert(&bin, &sqsh, false).await,
            &format!("{}, above the SQSH cache", above.display()),
            "chmod go-w",
        );
        // ... unless it has the sticky bit (like /tmp).
        chmod(&above, 0o1777);
        let (code, out, err) = convert(&bin, &sqsh, false).await;
        assert_eq!((code, out.as_str()), (Some(0), "converted\n"), "{err}");
        assert_eq!(
            std::fs::read(file).unwrap(),
            b"hsqs docker://reg#team/tiny:1.0"
        );
    }
}
