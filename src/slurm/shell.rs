//! A shell inside a running job's allocation: `srun --overlap --pty` on one of its nodes.

use super::model::JobId;

/// The remote command for an interactive login shell in job `id` (on `node`, else the job's
/// first node), run by the login node's `sh` so that the user's `$SHELL` is used. The id and
/// the node are quoted: nothing typed or printed is ever run as shell text.
pub fn shell_argv(id: &JobId, node: Option<&str>) -> Vec<String> {
    shell_argv_running(id, node, None)
}

/// As [`shell_argv`], with `command` (a line for the user's shell, `hostname`) run by that
/// shell (`-c`, not a login shell: tcsh refuses `-l` beside another flag) instead of an
/// interactive session.
pub fn shell_argv_running(id: &JobId, node: Option<&str>, command: Option<&str>) -> Vec<String> {
    let q = |s: &str| {
        shlex::try_quote(s)
            .map(|c| c.into_owned())
            .unwrap_or_default()
    };
    // A heterogeneous job's steps start under its leader's id.
    let job = match id.het_offset() {
        Some(_) => id.base().to_string(),
        None => id.without_step().as_str().to_string(),
    };
    let mut script = format!("exec srun --jobid={} --overlap --pty", q(&job));
    if let Some(n) = node {
        script.push_str(&format!(" --nodelist={} --nodes=1 --ntasks=1", q(n)));
    } else {
        script.push_str(" --nodes=1 --ntasks=1");
    }
    // tcsh takes `-l` only as its one flag: a command runs in a plain (non-login) shell.
    match command {
        Some(c) => script.push_str(&format!(" \"${{SHELL:-/bin/sh}}\" -c {}", q(c))),
        None => script.push_str(" \"${SHELL:-/bin/sh}\" -l"),
    }
    vec!["sh".into(), "-c".into(), script]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_ids_and_nodes_and_uses_the_users_shell() {
        let id: JobId = "1234".parse().expect("id");
        assert_eq!(
            shell_argv(&id, Some("gpu01")),
            [
                "sh",
                "-c",
                "exec srun --jobid=1234 --overlap --pty --nodelist=gpu01 --nodes=1 --ntasks=1 \"${SHELL:-/bin/sh}\" -l"
            ]
        );
        let het: JobId = "249+1".parse().expect("id");
        assert!(shell_argv(&het, None)[2].contains("--jobid=249 "));
        let odd = shell_argv(&id, Some("n1; rm -rf ~"));
        assert!(odd[2].contains("--nodelist='n1; rm -rf ~'"), "{}", odd[2]);
        let cmd = shell_argv_running(&id, None, Some("echo $HOSTNAME; rm -rf ~"));
        assert!(
            cmd[2].ends_with("\"${SHELL:-/bin/sh}\" -c 'echo $HOSTNAME; rm -rf ~'"),
            "{}",
            cmd[2]
        );
    }
}
