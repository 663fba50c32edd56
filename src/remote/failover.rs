//! Pure pieces of connection management: host lists, failover order, reconnect backoff.

use std::future::Future;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

/// The longest wait between two reconnect attempts while the login node is away (refused,
/// timed out, reset), once it has been away about two minutes: from then on the node sees
/// one attempt a minute, which no fail2ban counts as an attack, and a node that comes back
/// is noticed within a minute. Failures that waiting does not fix are not retried at all
/// (see [`permanent_hint`]).
pub const BACKOFF_CAP: Duration = Duration::from_secs(60);

/// The longest wait in the first two minutes of an outage: a login node back after a
/// restart or a short network cut is noticed within 5 s (an attempt against a node that is
/// down costs it nothing: a refused or unanswered connection).
pub const QUICK_CAP: Duration = Duration::from_secs(5);

/// Attempts at most [`QUICK_CAP`] apart: 0.5 + 1 + 2 + 4 s, then 22 times 5 s (about two
/// minutes in all).
const QUICK_ATTEMPTS: u32 = 26;

/// Delay before reconnect attempt `attempt` (1-based) without jitter: 0.5 s, 1 s, 2 s, 4 s,
/// then 5 s for about two minutes, then 10 s, 20 s, 40 s, up to [`BACKOFF_CAP`].
pub fn backoff_delay(attempt: u32) -> Duration {
    const FIRST_MS: u64 = 500;
    const QUICK_MS: u64 = QUICK_CAP.as_millis() as u64;
    const CAP_MS: u64 = BACKOFF_CAP.as_millis() as u64;
    match attempt {
        0 => Duration::ZERO,
        a if a <= QUICK_ATTEMPTS => {
            Duration::from_millis((FIRST_MS << (a - 1).min(16)).min(QUICK_MS))
        }
        a => {
            let shift = (a - QUICK_ATTEMPTS - 1).min(16);
            Duration::from_millis(((2 * QUICK_MS) << shift).min(CAP_MS))
        }
    }
}

/// `delay` shortened by up to a fifth, by `unit` (in `[0, 1)`): laptops that lost the same
/// login node at the same moment do not all come back at the same instant. Never longer
/// than `delay`, so never past [`BACKOFF_CAP`].
pub fn with_jitter(delay: Duration, unit: f64) -> Duration {
    delay.saturating_sub(delay.mul_f64(unit.clamp(0.0, 1.0) / 5.0))
}

/// A number in `[0, 1)` that differs from call to call (std's per-process random hash keys;
/// jitter needs no better).
pub fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What to do about a failed login that waiting will not fix (a changed or unknown host key,
/// a refused or missing key, an expired certificate, a broken ssh config), from what ssh
/// printed; `None` for failures worth retrying (refused, timed out, reset, no route). Such a
/// failure is not retried until the user asks: trying again every few seconds gets the
/// laptop's address banned (fail2ban) and changes nothing.
pub fn permanent_hint(ssh_said: &str) -> Option<&'static str> {
    let s = ssh_said.to_ascii_lowercase();
    let has = |needle: &str| s.contains(needle);
    Some(
        if has("remote host identification has changed")
            || has("has changed and you have requested strict checking")
        {
            "the host key is not the one in known_hosts: confirm the new key with your admins, then `ssh-keygen -R HOST` and a plain `ssh HOST`"
        } else if has("host key is known") || has("host key verification failed") {
            "the host key is not in known_hosts: check it with a plain `ssh HOST` once"
        } else if has("certificate") && (has("expired") || has("invalid")) {
            "your SSH certificate is expired or not valid: renew it"
        } else if has("no such identity") || has("identity file") && has("not accessible") {
            "the key file is missing: fix key_path in the config or IdentityFile in ~/.ssh/config"
        } else if has("too many authentication failures") {
            "too many keys were offered: set key_path in the config (only that key is offered)"
        } else if has("permission denied") {
            "your key was refused (revoked, expired, not in the agent): fix it, check with a plain `ssh HOST`"
        } else if has("bad owner or permissions")
            || has("bad configuration option")
            || has("unable to negotiate")
        {
            "ssh cannot use its configuration: fix what it names"
        } else {
            return None;
        },
    )
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

/// Tries `connect` on each host in order, one after the other, and returns the first success
/// with its index, or every failure. Each round starts again from the first host: a failed
/// one is retried on the next round.
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

/// How long a host that has not answered yet keeps the next one waiting: past this, the next
/// host is started beside it and the first to connect wins.
pub const HEAD_START: Duration = Duration::from_secs(1);

/// Tries `connect` on the hosts in order, without letting one that does not answer hold up
/// the others: each attempt gets `head_start` before the next host starts beside it (at once
/// if it fails sooner, as a refused host does). The first success wins and the attempts still
/// running are dropped, which cancels them (their `ssh` children are killed on drop). Returns
/// the winner's index with its value and the failures so far, or every failure in host order.
pub async fn try_staggered<T, F, Fut>(
    hosts: &[String],
    head_start: Duration,
    mut connect: F,
) -> Result<(usize, T, Vec<Attempt>), Vec<Attempt>>
where
    F: FnMut(usize, String) -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    use tokio::time::Instant;
    let mut running = FuturesUnordered::new();
    let mut failed: Vec<(usize, Attempt)> = Vec::new();
    let mut next = 0;
    // When the most recently started host's head start ends.
    let mut due = Instant::now();
    loop {
        if next < hosts.len() && (running.is_empty() || Instant::now() >= due) {
            let (i, host) = (next, hosts[next].clone());
            let t0 = Instant::now();
            let fut = connect(i, host);
            running.push(async move { (i, t0, fut.await) });
            next += 1;
            due = t0 + head_start;
            continue;
        }
        let Some(more) = (if next < hosts.len() {
            tokio::select! {
                r = running.next() => r,
                _ = tokio::time::sleep_until(due) => continue,
            }
        } else {
            running.next().await
        }) else {
            break;
        };
        let (i, t0, result) = more;
        match result {
            Ok(v) => {
                failed.sort_by_key(|(i, _)| *i);
                return Ok((i, v, failed.into_iter().map(|(_, a)| a).collect()));
            }
            Err(error) => {
                failed.push((
                    i,
                    Attempt {
                        host: hosts[i].clone(),
                        error,
                        took: t0.elapsed(),
                    },
                ));
                // The newest attempt failed before its head start ended: the next goes now.
                if i + 1 == next {
                    due = Instant::now();
                }
            }
        }
    }
    failed.sort_by_key(|(i, _)| *i);
    Err(failed.into_iter().map(|(_, a)| a).collect())
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
    fn backoff_tries_every_5s_for_two_minutes_then_doubles_to_a_minute_never_past_it() {
        let secs: Vec<f64> = (0..8).map(|a| backoff_delay(a).as_secs_f64()).collect();
        assert_eq!(secs, [0.0, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]);
        // The quick phase: a node back after a short outage is tried within 5 s.
        let quick: Duration = (1..=QUICK_ATTEMPTS).map(backoff_delay).sum();
        assert!((110..=125).contains(&quick.as_secs()), "{quick:?}");
        assert!((1..=QUICK_ATTEMPTS).all(|a| backoff_delay(a) <= QUICK_CAP));
        let later: Vec<f64> = (QUICK_ATTEMPTS + 1..QUICK_ATTEMPTS + 6)
            .map(|a| backoff_delay(a).as_secs_f64())
            .collect();
        assert_eq!(later, [10.0, 20.0, 40.0, 60.0, 60.0]);
        assert_eq!(backoff_delay(u32::MAX), BACKOFF_CAP);
        assert!((1..10_000).all(|a| backoff_delay(a) <= BACKOFF_CAP));
        // Jitter takes off up to a fifth, never adds.
        let d = Duration::from_secs(60);
        assert_eq!(with_jitter(d, 0.0), d);
        assert_eq!(with_jitter(d, 0.5), Duration::from_secs(54));
        assert!(with_jitter(d, 0.999_999) > Duration::from_secs(48));
        assert_eq!(with_jitter(d, 7.0), Duration::from_secs(48));
        // Draws differ and stay in [0, 1).
        let draws: Vec<f64> = (0..64).map(|_| jitter_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)), "{draws:?}");
        let mut distinct = draws.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        assert!(distinct.len() > 32, "{draws:?}");
    }

    /// Lines as ssh prints them (OpenSSH 8.x/9.x), the last lines of a master's `-E` log.
    #[test]
    fn failures_waiting_will_not_fix_are_told_apart_from_a_node_that_is_away() {
        let permanent = [
            ("Offending ED25519 key in /home/u/.ssh/known_hosts:3 / Host key for login1 has changed and you have requested strict checking. / Host key verification failed.", "ssh-keygen -R"),
            ("@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @", "ssh-keygen -R"),
            ("No ED25519 host key is known for [127.0.0.1]:22022 and you have requested strict checking. / Host key verification failed.", "not in known_hosts"),
            ("sduser@127.0.0.1: Permission denied (publickey).", "key was refused"),
            ("sduser@login1: Permission denied (publickey,gssapi-keyex,gssapi-with-mic).", "key was refused"),
            ("Certificate invalid: expired / sduser@login1: Permission denied (publickey).", "certificate"),
            ("no such identity: /home/u/.ssh/id_gone: No such file or directory / u@h: Permission denied (publickey).", "key file is missing"),
            ("Warning: Identity file /k/id not accessible: No such file or directory. / u@h: Permission denied (publickey).", "key file is missing"),
            ("Received disconnect from 10.0.0.1 port 22:2: Too many authentication failures", "key_path"),
            ("Unable to negotiate with 10.0.0.1 port 22: no matching host key type found. Their offer: ssh-dss", "configuration"),
            ("/home/u/.ssh/config: line 4: Bad configuration option: foo", "configuration"),
        ];
        for (said, hint) in permanent {
            let h = permanent_hint(said).unwrap_or_else(|| panic!("not permanent: {said}"));
            assert!(h.contains(hint), "{said}: {h}");
        }
        for transient in [
            "ssh: connect to host login1 port 22: Connection refused",
            "ssh: connect to host login1 port 22: Connection timed out",
            "Connection reset by 10.0.0.1 port 22",
            "kex_exchange_identification: read: Connection reset by peer",
            "ssh: connect to host login1 port 22: No route to host",
            "ssh: Could not resolve hostname login1: Temporary failure in name resolution",
            "Connection closed by 10.0.0.1 port 22",
            "no login within 12s",
        ] {
            assert_eq!(permanent_hint(transient), None, "{transient}");
        }
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

    /// A fake login host for the staggered failover, by name: `refused` fails at once,
    /// `silent` never answers, `ok:MS` connects after MS milliseconds, `fail:MS` fails then.
    async fn fake_host(name: String, log: Arc<Mutex<Log>>) -> Result<String, String> {
        let t0 = tokio::time::Instant::now();
        log.lock().expect("log").started.push((name.clone(), t0));
        let guard = Unfinished(name.clone(), log);
        let (kind, ms) = name.split_once(':').unwrap_or((name.as_str(), "0"));
        let wait = Duration::from_millis(ms.parse().expect("ms"));
        let r = match kind {
            "refused" => Err(format!("{name}: Connection refused")),
            "silent" => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Err("timed out".into())
            }
            "ok" => {
                tokio::time::sleep(wait).await;
                Ok(name.clone())
            }
            _ => {
                tokio::time::sleep(wait).await;
                Err(format!("{name} failed"))
            }
        };
        std::mem::forget(guard);
        r
    }

    #[derive(Default)]
    struct Log {
        started: Vec<(String, tokio::time::Instant)>,
        /// Attempts dropped before they finished (cancelled).
        cancelled: Vec<String>,
    }

    struct Unfinished(String, Arc<Mutex<Log>>);
    impl Drop for Unfinished {
        fn drop(&mut self) {
            self.1.lock().expect("log").cancelled.push(self.0.clone());
        }
    }

    use std::sync::{Arc, Mutex};

    /// Runs the staggered failover over fake hosts; returns the result, when each host
    /// started (ms after the start), which were cancelled, and how long it all took (ms).
    async fn race(
        names: &[&str],
    ) -> (
        Result<(usize, String, Vec<Attempt>), Vec<Attempt>>,
        Vec<(String, u128)>,
        Vec<String>,
        u128,
    ) {
        let hosts: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let log = Arc::new(Mutex::new(Log::default()));
        let t0 = tokio::time::Instant::now();
        let r = try_staggered(&hosts, HEAD_START, |_, h| fake_host(h, log.clone())).await;
        let took = t0.elapsed().as_millis();
        let log = log.lock().expect("log");
        let started = log
            .started
            .iter()
            .map(|(n, t)| (n.clone(), (*t - t0).as_millis()))
            .collect();
        (r, started, log.cancelled.clone(), took)
    }

    fn at(v: &[(&str, u128)]) -> Vec<(String, u128)> {
        v.iter().map(|(n, t)| (n.to_string(), *t)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_host_costs_its_head_start_not_the_connect_timeout() {
        let (r, started, cancelled, took) = race(&["silent", "ok:300"]).await;
        let (idx, v, failed) = r.expect("the second host connects");
        assert_eq!((idx, v.as_str()), (1, "ok:300"));
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(started, at(&[("silent", 0), ("ok:300", 1000)]));
        assert_eq!(took, 1300);
        // The silent attempt did not linger: it was dropped when the other won.
        assert_eq!(cancelled, ["silent"]);
    }

    #[tokio::test(start_paused = true)]
    async fn refused_hosts_are_skipped_at_once() {
        let (r, started, cancelled, took) = race(&["refused", "refused", "ok:200"]).await;
        let (idx, _, failed) = r.expect("third connects");
        assert_eq!(idx, 2);
        assert_eq!(
            started,
            at(&[("refused", 0), ("refused", 0), ("ok:200", 0)])
        );
        assert_eq!(took, 200);
        assert_eq!(failed.len(), 2);
        assert!(cancelled.is_empty(), "{cancelled:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_first_host_wins_alone() {
        let (r, started, _, took) = race(&["ok:400", "ok:10", "silent"]).await;
        assert_eq!(r.expect("first").0, 0);
        assert_eq!(started, at(&[("ok:400", 0)]), "the others never started");
        assert_eq!(took, 400);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_to_connect_wins_and_the_slower_is_cancelled() {
        // The first host answers after 2.5 s, the second (started at 1 s) after 0.5 s more.
        let (r, started, cancelled, took) = race(&["ok:2500", "ok:500"]).await;
        assert_eq!(r.expect("one connects").0, 1);
        assert_eq!(started, at(&[("ok:2500", 0), ("ok:500", 1000)]));
        assert_eq!(took, 1500);
        assert_eq!(cancelled, ["ok:2500"]);
        // Still slower than the first: the first wins once it answers.
        let (r, _, cancelled, took) = race(&["ok:1200", "ok:800"]).await;
        assert_eq!(r.expect("one connects").0, 0);
        assert_eq!(took, 1200);
        assert_eq!(cancelled, ["ok:800"]);
    }

    #[tokio::test(start_paused = true)]
    async fn silent_hosts_start_one_head_start_apart_and_a_late_failure_does_not_hurry_them() {
        // Host 1 fails at 1.2 s, during its own head start: host 2 starts then, not at 2 s.
        let (r, started, _, _) = race(&["silent", "fail:200", "silent", "ok:100"]).await;
        assert_eq!(r.expect("last connects").0, 3);
        assert_eq!(
            started,
            at(&[
                ("silent", 0),
                ("fail:200", 1000),
                ("silent", 1200),
                ("ok:100", 2200)
            ])
        );
        // The first host failing late (at 1.5 s) does not start host 2 before host 1 had its
        // head start (until 2 s).
        let (r, started, _, _) = race(&["fail:1500", "silent", "ok:100"]).await;
        assert_eq!(r.expect("last connects").0, 2);
        assert_eq!(
            started,
            at(&[("fail:1500", 0), ("silent", 1000), ("ok:100", 2000)])
        );
    }

    #[tokio::test(start_paused = true)]
    async fn every_failure_is_reported_in_host_order() {
        let (r, _, cancelled, took) = race(&["fail:3000", "refused", "fail:100"]).await;
        let failed = r.expect_err("all fail");
        let hosts: Vec<&str> = failed.iter().map(|a| a.host.as_str()).collect();
        assert_eq!(hosts, ["fail:3000", "refused", "fail:100"]);
        assert_eq!(failed[0].took, Duration::from_millis(3000));
        assert_eq!(took, 3000);
        assert!(cancelled.is_empty());
        let none: Result<(usize, (), _), _> =
            try_staggered(&[], HEAD_START, |_, _| async { Ok(()) }).await;
        assert!(none.expect_err("no hosts").is_empty());
    }
}
