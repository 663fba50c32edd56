//! Memory sizes as Slurm writes them (`317732K`, `1G`, `100M`, `4000Mc`) and as a person
//! would ask for them (`400M`, `12G`).

const K: u64 = 1024;
const M: u64 = K * K;
const G: u64 = M * K;
const T: u64 = G * K;

/// `317732K` → bytes; a bare number counts in `unit` bytes (MaxRSS: KiB in old output,
/// bytes in TRES lists; Slurm's `--mem`: MiB). A trailing `n`/`c` (per node / per CPU, as
/// ReqMem printed it before 21.08) is ignored here (see [`per_cpu_suffix`]).
pub fn parse_bytes(s: &str, unit: u64) -> Option<u64> {
    let s = s.trim().trim_end_matches(['n', 'c']);
    if s.is_empty() {
        return None;
    }
    let (num, mult) = match s.as_bytes()[s.len() - 1].to_ascii_uppercase() {
        b'K' => (&s[..s.len() - 1], K),
        b'M' => (&s[..s.len() - 1], M),
        b'G' => (&s[..s.len() - 1], G),
        b'T' => (&s[..s.len() - 1], T),
        b'0'..=b'9' => (s, unit),
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mult as f64).round() as u64)
}

/// Whether an old-style ReqMem (`4000Mc`) was per CPU.
pub fn per_cpu_suffix(s: &str) -> Option<bool> {
    match s.trim().as_bytes().last() {
        Some(b'c') => Some(true),
        Some(b'n') => Some(false),
        _ => None,
    }
}

/// Short human form: `319M`, `1G`, `9.1G`, `512K`.
pub fn show(b: u64) -> String {
    let one = |v: f64, u: &str| {
        if (v - v.round()).abs() < 0.05 || v >= 10.0 {
            format!("{:.0}{u}", v.round())
        } else {
            format!("{v:.1}{u}")
        }
    };
    if b >= T {
        one(b as f64 / T as f64, "T")
    } else if b >= G {
        one(b as f64 / G as f64, "G")
    } else if b >= M {
        format!("{}M", (b as f64 / M as f64).round() as u64)
    } else if b >= K {
        format!("{}K", (b as f64 / K as f64).round() as u64)
    } else {
        format!("{b}B")
    }
}

/// A request that leaves room over `bytes`: a quarter more, rounded up to a
/// multiple of 50M below a gigabyte (`400M`) and up to whole G above (`12G`). Returns the bytes
/// and Slurm's `--mem` form.
pub fn suggest(bytes: u64) -> (u64, String) {
    let want = bytes as f64 * 1.25;
    if want < G as f64 {
        let m = ((want / M as f64 / 50.0).ceil() as u64).max(1) * 50;
        if m >= 1024 {
            return (G, "1G".into());
        }
        (m * M, format!("{m}M"))
    } else {
        let g = (want / G as f64).ceil() as u64;
        (g * G, format!("{g}G"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_slurm_sizes() {
        assert_eq!(parse_bytes("317732K", 1024), Some(317_732 * K));
        assert_eq!(parse_bytes("1G", M), Some(G));
        assert_eq!(parse_bytes("100M", M), Some(100 * M));
        assert_eq!(parse_bytes("4000Mc", M), Some(4000 * M));
        assert_eq!(parse_bytes("1.50G", M), Some(G + G / 2));
        assert_eq!(parse_bytes("2732", 1024), Some(2732 * K));
        assert_eq!(parse_bytes("", M), None);
        assert_eq!(parse_bytes("x", M), None);
        assert_eq!(per_cpu_suffix("4000Mc"), Some(true));
        assert_eq!(per_cpu_suffix("4000Mn"), Some(false));
        assert_eq!(per_cpu_suffix("1G"), None);
    }

    #[test]
    fn shows_and_suggests_like_a_person() {
        assert_eq!(show(317_732 * K), "310M");
        assert_eq!(show(G), "1G");
        assert_eq!(show(9 * G + G / 10), "9.1G");
        assert_eq!(show(64 * G), "64G");
        assert_eq!(suggest(319 * M).1, "400M");
        assert_eq!(suggest((9.1 * G as f64) as u64).1, "12G");
        assert_eq!(suggest(2 * M).1, "50M");
        assert_eq!(suggest(700 * M).1, "900M");
        assert_eq!(suggest(900 * M).1, "2G");
    }
}
