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

/// The cached SQSH path for a remote image: one file per image name under `cache_dir`.
pub fn sqsh_path(cache_dir: &str, image: &str) -> String {
    let name: String = image
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '+'
            }
        })
        .collect();
    format!("{}/{name}.sqsh", cache_dir.trim_end_matches('/'))
}

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
    /// The step run on the login node before submitting: convert into a temporary file
    /// next to the cache entry and rename, so a job never sees a half-written image.
    /// Skipped when the cache already holds the image (unless forced). A fixed script; the
    /// values arrive as separate arguments.
    pub fn argv(&self) -> Vec<String> {
        let script = "sqsh=$1; image=$2; part=$3; force=$4
if [ \"$force\" != 1 ] && [ -s \"$sqsh\" ]; then echo cached; exit 0; fi
mkdir -p \"$(dirname \"$sqsh\")\" || exit 1
tmp=\"$sqsh.part.$$\"
srun -n1 -p \"$part\" enroot import -o \"$tmp\" \"docker://$image\" || { rm -f \"$tmp\"; exit 1; }
mv -f \"$tmp\" \"$sqsh\" && echo converted";
        vec![
            "sh".into(),
            "-c".into(),
            script.into(),
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
        assert_eq!(
            sqsh_path("/lustre/cache/", "nvcr.io#nvidia/pytorch:24.01"),
            "/lustre/cache/nvcr.io+nvidia+pytorch+24.01.sqsh"
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
                "/c/nvcr.io+nvidia+pytorch+24.01.sqsh",
                "nvcr.io#nvidia/pytorch:24.01",
                "cpu",
                "0"
            ]
        );
        assert!(argv[2].contains("enroot import -o"));
    }
}
