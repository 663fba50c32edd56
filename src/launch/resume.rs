//! Auto-resume: the end states after which a launch's guard on the cluster submits the
//! same staged script again (the program picks up its checkpoint), and the signal Slurm
//! may send before the time limit so that the program can write one. Pure.

/// What `resume` accepts, with the Slurm end state each stands for, in this order.
pub const ON: &[(&str, &str)] = &[
    ("timeout", "TIMEOUT"),
    ("preempt", "PREEMPTED"),
    ("node_fail", "NODE_FAIL"),
];

/// The variable the job reads to know which resume it is (0: the first run).
pub const ATTEMPT_VAR: &str = "SLURMDASH_RESUME_ATTEMPT";

/// `timeout,preempt` (commas or spaces; `none` or empty: off) into the names of [`ON`], in
/// that order, each once.
pub fn parse(list: &str) -> Result<Vec<String>, String> {
    let mut on = Vec::new();
    for word in list
        .split([',', ' '])
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        let w = word.to_ascii_lowercase().replace('-', "_");
        if w == "none" {
            continue;
        }
        let known = ON
            .iter()
            .find(|(k, st)| {
                *k == w || st.eq_ignore_ascii_case(&w) || (*k == "preempt" && w == "preemption")
            })
            .map(|(k, _)| *k);
        match known {
            Some(k) => on.push(k),
            None => {
                return Err(format!(
                "resume `{word}`: use timeout, preempt and/or node_fail (comma-separated), or none"
            ))
            }
        }
    }
    Ok(ON
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| on.contains(k))
        .map(str::to_string)
        .collect())
}

/// `after TIMEOUT or PREEMPTED, up to 10 times`.
pub fn describe(on: &[String], max_resumes: u32) -> String {
    let states: Vec<&str> = ON
        .iter()
        .filter(|(k, _)| on.iter().any(|o| o == k))
        .map(|(_, st)| *st)
        .collect();
    format!(
        "after {}, up to {max_resumes} time{}",
        states.join(" or "),
        if max_resumes == 1 { "" } else { "s" }
    )
}

/// sbatch's `--signal=[{R|B}:]SIG[@SECONDS]` from what the user typed (`USR1@120`: to the
/// job's steps, where the program runs; `B:USR1@120`: to the batch shell only); empty: none.
pub fn signal_option(sig: &str) -> Result<Option<String>, String> {
    let s = sig.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let bad = || {
        format!(
            "signal `{s}`: write [B:|R:]SIGNAL[@SECONDS], e.g. USR1@120 (USR1 to your program 120 s before the limit)"
        )
    };
    let rest = match s.split_once(':') {
        Some((who, rest))
            if ["B", "R", "RB", "BR"].contains(&who.to_ascii_uppercase().as_str()) =>
        {
            rest
        }
        Some(_) => return Err(bad()),
        None => s,
    };
    let (name, secs) = match rest.split_once('@') {
        Some((n, t)) => (n, Some(t)),
        None => (rest, None),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 12
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+')
        && (name.bytes().all(|b| b.is_ascii_digit())
            || name.bytes().any(|b| b.is_ascii_alphabetic()));
    let secs_ok = secs.is_none_or(|t| t.parse::<u16>().is_ok());
    if !name_ok || !secs_ok {
        return Err(bad());
    }
    Ok(Some(format!("--signal={s}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn resume_lists_are_normalised_in_one_order() {
        assert_eq!(parse("").unwrap(), Vec::<String>::new());
        assert_eq!(parse("none").unwrap(), Vec::<String>::new());
        assert_eq!(
            parse("node_fail, TIMEOUT preempted").unwrap(),
            ["timeout", "preempt", "node_fail"]
        );
        assert_eq!(
            parse("timeout,timeout,node-fail").unwrap(),
            ["timeout", "node_fail"]
        );
        let e = parse("timeout,oom").unwrap_err();
        assert!(
            e.contains("resume `oom`") && e.contains("timeout, preempt"),
            "{e}"
        );
    }

    #[test]
    fn describe_names_the_states_and_the_cap() {
        assert_eq!(
            describe(&parse("preempt,timeout").unwrap(), 10),
            "after TIMEOUT or PREEMPTED, up to 10 times"
        );
        assert_eq!(
            describe(&parse("node_fail").unwrap(), 1),
            "after NODE_FAIL, up to 1 time"
        );
    }

    #[test]
    fn signals_as_sbatch_takes_them() {
        assert_eq!(signal_option(" ").unwrap(), None);
        assert_eq!(
            signal_option("B:USR1@120").unwrap().as_deref(),
            Some("--signal=B:USR1@120")
        );
        assert_eq!(
            signal_option("10@60").unwrap().as_deref(),
            Some("--signal=10@60")
        );
        assert_eq!(
            signal_option("SIGTERM").unwrap().as_deref(),
            Some("--signal=SIGTERM")
        );
        for bad in [
            "X:USR1",
            "USR1@soon",
            "USR1@99999",
            "@120",
            "US R1",
            "B:",
            "$(id)",
        ] {
            assert!(signal_option(bad).is_err(), "{bad}");
        }
    }
}
