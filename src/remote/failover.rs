//! Pure pieces of connection management: host lists, failover order, reconnect backoff.

use std::future::Future;
use std::time::Duration;

/// The longest wait between two reconnect attempts. A login node that comes back is noticed
/// within this plus one connection attempt (under 5 s with a refused or quick host), however
/// long it was gone; a refused attempt costs the node almost nothing.
pub const BACKOFF_CAP: Duration = Duration::from_secs(3);

/// Delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, then 3 s
/// ([`BACKOFF_CAP`]) for as long as the host stays away.
pub fn backoff_delay(attempt: u32) -> Duration {
    const FIRST_MS: u64 = 500;
    const CAP_MS: u64 = BACKOFF_CAP.as_millis() as u64;
    if attempt == 0 {
        return Duration::ZERO;
    }
    let shift = (attempt - 1).min(16);
    Duration::from_millis((FIRST_MS << shift).min(CAP_MS))
}

/// Splits `login1,login2` (commas and/or whitespace) into hosts, keeping order, dropping
/// empties and repeats.
pub fn parse_host_list(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for h in s.split(|c: char| c == ',' || c.is_whitespace()) {
        if !h.is_empty() && !out.iter().any(|o| o == h) {
            out.push(h.to_string());
        }
    }
    out
}

/// One failed host in a failover round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub host: String,
    pub error: String,
    pub took: Duration,
}

/// Tries `connect` on each host in order and returns the first success with its index, or
/// every failure. Hosts are always tried in the configured order: the first one is the
/// preferred login node, and a failed one is retried on the next round.
pub async fn try_in_order<T, F, Fut>(
    hosts: &[String],
    mut connect: F,
) -> Result<(usize, T, Vec<Attempt>), Vec<Attempt>>
where
    F: FnMut(usize, String) -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut failed = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let t0 = std::time::Instant::now();
        match connect(i, host.clone()).await {
            Ok(v) => return Ok((i, v, failed)),
            Err(error) => failed.push(Attempt {
                host: host.clone(),
                error,
                took: t0.elapsed(),
            }),
        }
    }
    Err(failed)
}

/// One line per failed host, for error messages.
pub(crate) fn summarize(failed: &[Attempt]) -> String {
    failed
        .iter()
        .map(|a| format!("{}: {} ({:.1}s)", a.host, a.error, a.took.as_secs_f64()))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let ms: Vec<u128> = (0..9).map(|a| backoff_delay(a).as_millis()).collect();
        assert_eq!(ms, [0, 500, 1000, 2000, 3000, 3000, 3000, 3000, 3000]);
        assert_eq!(backoff_delay(u32::MAX), BACKOFF_CAP);
        // However long the host stays away, a returning one is tried again within the cap.
        assert!((1..10_000).all(|a| backoff_delay(a) <= BACKOFF_CAP));
    }

    #[test]
    fn host_list_parsing() {
        assert_eq!(parse_host_list("login1,login2"), ["login1", "login2"]);
        assert_eq!(
            parse_host_list(" a , b  c,,a "),
            ["a".to_string(), "b".into(), "c".into()]
        );
        assert!(parse_host_list(" , ").is_empty());
    }

    #[tokio::test]
    async fn failover_tries_in_order_and_stops_at_first_success() {
        let hosts: Vec<String> = ["bad1", "bad2", "good", "never"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut tried = Vec::new();
        let r = try_in_order(&hosts, |_, h| {
            tried.push(h.clone());
            async move {
                if h.starts_with("bad") {
                    Err(format!("{h} refused"))
                } else {
                    Ok(h)
                }
            }
        })
        .await;
        let (idx, v, failed) = r.expect("good host connects");
        assert_eq!((idx, v.as_str()), (2, "good"));
        assert_eq!(tried, ["bad1", "bad2", "good"]);
        assert_eq!(failed.len(), 2);
        assert!(summarize(&failed).contains("bad2: bad2 refused"));
    }

    #[tokio::test]
    async fn failover_reports_every_failure() {
        let hosts = vec!["a".to_string(), "b".to_string()];
        let r: Result<(usize, (), _), _> =
            try_in_order(&hosts, |_, h| async move { Err(format!("{h} down")) }).await;
        let failed = r.expect_err("all fail");
        assert_eq!(
            failed.iter().map(|a| a.host.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }
}
