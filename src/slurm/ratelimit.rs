//! A site's own RPC rate limit (`SlurmctldParameters=rl_enable`, Slurm 23.02+), read from
//! `scontrol show config`. slurmctld keeps a token bucket per user: `rl_bucket_size`
//! tokens at most, `rl_refill_rate` added every `rl_refill_period` seconds; a client over
//! it is told to back off (and Slurm's own commands sleep and retry silently). Pure.

/// `scontrol show config` (1 slurmctld RPC), read once per dashboard and cluster.
pub fn show_config_argv() -> Vec<String> {
    vec!["scontrol".into(), "show".into(), "config".into()]
}

/// The defaults slurm.conf(5) gives when `rl_enable` names no value.
const DEFAULT_BUCKET: u32 = 30;
const DEFAULT_REFILL_RATE: u32 = 2;
const DEFAULT_REFILL_PERIOD_SECS: u32 = 1;

/// The per-user token bucket slurmctld enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub bucket: u32,
    pub refill_rate: u32,
    pub refill_period_secs: u32,
}

impl RateLimit {
    /// RPCs a minute the bucket sustains (its refill), at least 1.
    pub fn per_minute(&self) -> u32 {
        let period = self.refill_period_secs.max(1);
        (self.refill_rate.saturating_mul(60) / period).max(1)
    }

    /// `rl_enable: bucket 30, 2 per 1 s (120 RPCs/min)`.
    pub fn describe(&self) -> String {
        format!(
            "rl_enable: bucket {}, {} per {} s ({} RPCs/min)",
            self.bucket,
            self.refill_rate,
            self.refill_period_secs,
            self.per_minute()
        )
    }
}

/// The site's limit, from `scontrol show config`: `Ok(None)` when the cluster does not
/// rate-limit (no `rl_enable` in `SlurmctldParameters`, or a Slurm without it); an error
/// when the output has no `SlurmctldParameters` line at all (not `scontrol show config`) or
/// a value that is not a number.
pub fn parse(show_config: &str) -> Result<Option<RateLimit>, String> {
    let params = show_config
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "SlurmctldParameters").then(|| v.trim())
        })
        .ok_or("no SlurmctldParameters line in `scontrol show config`")?;
    let words: Vec<&str> = params.split(',').map(str::trim).collect();
    if !words.contains(&"rl_enable") {
        return Ok(None);
    }
    let value = |key: &str, default: u32| -> Result<u32, String> {
        match words
            .iter()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        {
            None => Ok(default),
            Some(v) => v
                .parse::<u32>()
                .map_err(|_| format!("SlurmctldParameters {key}={v} is not a number")),
        }
    };
    Ok(Some(RateLimit {
        bucket: value("rl_bucket_size", DEFAULT_BUCKET)?,
        refill_rate: value("rl_refill_rate", DEFAULT_REFILL_RATE)?,
        refill_period_secs: value("rl_refill_period", DEFAULT_REFILL_PERIOD_SECS)?,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RL_24_11: &str =
        include_str!("../../tests/fixtures/slurm/24.11/scontrol_show_config_rl_enable.out");
    const PLAIN_26_05: &str =
        include_str!("../../tests/fixtures/slurm/26.05/scontrol_show_config.out");
    const PLAIN_22_05: &str =
        include_str!("../../tests/fixtures/slurm/22.05/scontrol_show_config.out");

    #[test]
    fn a_site_with_rl_enable_has_its_bucket_and_refill_read() {
        let l = parse(RL_24_11).unwrap().unwrap();
        assert_eq!(
            l,
            RateLimit {
                bucket: 600,
                refill_rate: 10,
                refill_period_secs: 1
            }
        );
        assert_eq!(l.per_minute(), 600);
        assert_eq!(
            l.describe(),
            "rl_enable: bucket 600, 10 per 1 s (600 RPCs/min)"
        );
    }

    #[test]
    fn clusters_without_rl_enable_have_no_site_limit() {
        // `SlurmctldParameters = (null)` on both.
        assert_eq!(parse(PLAIN_26_05).unwrap(), None);
        assert_eq!(parse(PLAIN_22_05).unwrap(), None);
    }

    #[test]
    fn rl_enable_alone_takes_slurms_defaults() {
        let l = parse("SlurmctldParameters     = enable_configless,rl_enable\n")
            .unwrap()
            .unwrap();
        assert_eq!((l.bucket, l.refill_rate, l.refill_period_secs), (30, 2, 1));
        assert_eq!(l.per_minute(), 120);
        // A strict site: 1 token every 30 s is 2 a minute.
        let strict = parse("SlurmctldParameters = rl_enable,rl_refill_rate=1,rl_refill_period=30")
            .unwrap()
            .unwrap();
        assert_eq!(strict.per_minute(), 2);
        // Slower than one a minute still allows one.
        let slow = parse("SlurmctldParameters = rl_enable,rl_refill_rate=1,rl_refill_period=600")
            .unwrap()
            .unwrap();
        assert_eq!(slow.per_minute(), 1);
    }

    #[test]
    fn odd_output_is_an_error_not_a_guess() {
        assert!(parse("").is_err());
        assert!(parse("slurm_load_ctl_conf error: Unable to contact slurm controller").is_err());
        let e = parse("SlurmctldParameters = rl_enable,rl_refill_rate=lots").unwrap_err();
        assert!(e.contains("rl_refill_rate=lots"), "{e}");
        // rl_enable_xyz is not rl_enable.
        assert_eq!(
            parse("SlurmctldParameters = rl_enable_later").unwrap(),
            None
        );
    }
}
