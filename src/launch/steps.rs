//! Several steps in one allocation (`[[steps]]` of a template): each its own container,
//! mounts, environment and command, started in order on the job's first node, each after
//! the one before it is ready (an HTTP check or a command that must succeed, with a
//! timeout). A later step finds an earlier one at `SLURMDASH_STEP_<NAME>_HOST` (and
//! `_PORT`). The job ends when the last step ends, with its exit code; the others are
//! stopped then. The NeMo evaluator pattern: a model server in one container, the
//! evaluation harness in another, given the server's endpoint.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::launch::container::{self, Image};
use crate::launch::quote::quote;

/// One `[[steps]]` table as the user writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepSpec {
    /// Letters, digits, `_` or `-`; names the step's variables (`model` →
    /// `SLURMDASH_STEP_MODEL_HOST`).
    pub name: String,
    /// The step's container image (the forms `image` takes); empty: the launch's `image`,
    /// and none when that is empty too.
    pub image: String,
    /// `--container-mounts` of the step; empty: the launch's `container_mounts`.
    pub mounts: String,
    /// Variables set for this step only (over the launch's `env`).
    pub env: BTreeMap<String, String>,
    pub command: String,
    /// As the launch's `shell`; empty: the launch's, else `/bin/sh` in a container.
    pub shell: String,
    /// When the step counts as ready for the next one to start: `http://HOST:PORT/PATH`
    /// (a 2xx answer to a GET, from the job's first node) or a command run there by bash
    /// that must succeed. Empty: the next step starts at once. Not allowed on the last step.
    pub ready: String,
    /// How long to wait for `ready` (`10m`, `90s`); empty: 10 minutes.
    pub ready_timeout: String,
    /// The port it serves on, exported as `SLURMDASH_STEP_<NAME>_PORT` (to this step too,
    /// so its command can listen there). `0`: a free port of the node, picked when the job
    /// runs (two jobs on one node never collide); unset: the port of the `ready` URL, if any.
    /// A `ready` URL without a port is checked at this port.
    pub port: Option<u16>,
}

/// How readiness is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    Http {
        host: String,
        /// None: the step's `port` (80 when it has none).
        port: Option<u16>,
        path: String,
    },
    Command(String),
}

/// A step that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    pub name: String,
    /// `MODEL` for `model`: the middle of `SLURMDASH_STEP_MODEL_HOST`.
    pub var: String,
    /// None: the launch's image (as the script is given it), or no container.
    pub image: Option<Image>,
    pub mounts: String,
    pub env: BTreeMap<String, String>,
    pub command: String,
    pub shell: String,
    pub ready: Option<Ready>,
    pub ready_timeout_secs: u64,
    /// Some(0): picked when the job runs.
    pub port: Option<u16>,
}

const DEFAULT_READY_TIMEOUT_SECS: u64 = 600;

/// `http://host[:port][/path]`; https cannot be checked with bash alone.
pub fn parse_ready(s: &str) -> Result<Ready, String> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix("http://") {
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                Some(
                    p.parse::<u16>()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| format!("ready `{s}`: `{p}` is not a port"))?,
                ),
            ),
            None => (hostport, None),
        };
        let ok_host = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        if !ok_host {
            return Err(format!("ready `{s}`: `{host}` is not a host name"));
        }
        if path.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err(format!("ready `{s}`: the path has spaces or odd bytes"));
        }
        return Ok(Ready::Http {
            host: host.to_string(),
            port,
            path: path.to_string(),
        });
    }
    if s.contains("://") {
        return Err(format!(
            "ready `{s}`: only http:// URLs are checked (bash alone cannot speak TLS); give a command instead, e.g. curl -fsk https://..."
        ));
    }
    if s.contains(['\n', '\r', '\0']) {
        return Err("a ready command is one line".into());
    }
    Ok(Ready::Command(s.to_string()))
}

fn step_var(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then(|| name.to_ascii_uppercase().replace('-', "_"))
}

/// Checks the steps; the messages name the step. `shell` resolves a step's shell (the
/// launch's rules), `time` its timeout.
pub fn validate(
    steps: &[StepSpec],
    launch_shell: &str,
    launch_has_image: bool,
    resolve_shell: impl Fn(&str, bool) -> Result<String, String>,
    parse_time: impl Fn(&str) -> Result<std::time::Duration, String>,
) -> Result<Vec<PlanStep>, Vec<String>> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let label = if s.name.is_empty() {
            format!("step {}", i + 1)
        } else {
            format!("step `{}`", s.name)
        };
        let var = match step_var(&s.name) {
            Some(v) if seen.contains(&v) => {
                bad.push(format!("{label}: another step has the same name"));
                v
            }
            Some(v) => v,
            None => {
                bad.push(format!(
                    "{label}: a step needs a name of letters, digits, `_` or `-` (it names SLURMDASH_STEP_<NAME>_HOST)"
                ));
                String::new()
            }
        };
        seen.push(var.clone());
        let image = if s.image.trim().is_empty() {
            None
        } else {
            match container::parse_image(&s.image) {
                Ok(i) => Some(i),
                Err(e) => {
                    bad.push(format!("{label}: {e}"));
                    None
                }
            }
        };
        if s.command.trim().is_empty() {
            bad.push(format!("{label}: a command to run is required"));
        }
        if s.mounts.contains(char::is_whitespace) {
            bad.push(format!(
                "{label}: mounts are comma-separated, without spaces"
            ));
        }
        for k in s.env.keys() {
            let mut b = k.bytes();
            let ok = b
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !ok {
                bad.push(format!(
                    "{label}: `{k}` is not an environment variable name"
                ));
            }
        }
        let container = image.is_some() || launch_has_image;
        let shell_text = if s.shell.trim().is_empty() {
            launch_shell
        } else {
            s.shell.as_str()
        };
        let shell = resolve_shell(shell_text, container).unwrap_or_else(|e| {
            bad.push(format!("{label}: {e}"));
            String::new()
        });
        let ready = if s.ready.trim().is_empty() {
            None
        } else if last {
            bad.push(format!(
                "{label} is the last: nothing waits for it to be ready (the job ends when it ends); remove its ready"
            ));
            None
        } else {
            match parse_ready(&s.ready) {
                Ok(r) => Some(r),
                Err(e) => {
                    bad.push(format!("{label}: {e}"));
                    None
                }
            }
        };
        let ready_timeout_secs = if s.ready_timeout.trim().is_empty() {
            DEFAULT_READY_TIMEOUT_SECS
        } else {
            match parse_time(&s.ready_timeout) {
                Ok(d) if d.as_secs() > 0 => d.as_secs(),
                Ok(_) => {
                    bad.push(format!("{label}: ready_timeout must be more than zero"));
                    DEFAULT_READY_TIMEOUT_SECS
                }
                Err(e) => {
                    bad.push(format!("{label}: ready_timeout {e}"));
                    DEFAULT_READY_TIMEOUT_SECS
                }
            }
        };
        let port = s.port.or(match &ready {
            Some(Ready::Http { port, .. }) => *port,
            _ => None,
        });
        out.push(PlanStep {
            name: s.name.clone(),
            var,
            image,
            mounts: s.mounts.trim().to_string(),
            env: s.env.clone(),
            command: s.command.trim().to_string(),
            shell,
            ready,
            ready_timeout_secs,
            port,
        });
    }
    if bad.is_empty() {
        Ok(out)
    } else {
        Err(bad)
    }
}

/// The shell helpers every multi-step script starts with: the first node, stopping the
/// started steps on exit, the HTTP check (bash's /dev/tcp, no curl needed on the node) of
/// a listener that belongs to this job (`/proc`: the socket open in a process of yours with
/// this job's SLURM_JOB_ID) and the wait with its deadline, which gives up at once when the
/// step ended.
const HELPERS: &str = r#"
# Steps in one allocation, on the job's first node, started in order: each after the one
# before it is ready. The job ends when the last step ends, with its exit code; the steps
# still running then are stopped.
slurmdash_head="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
slurmdash_pids=""
slurmdash_stop() {
  for p in $slurmdash_pids; do kill "$p" 2>/dev/null || true; done
}
trap slurmdash_stop EXIT
# slurmdash_http HOST PORT PATH: a GET answered 2xx.
slurmdash_http() (
  exec 3<>"/dev/tcp/$1/$2" || exit 1
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$1" >&3
  IFS= read -r -t 10 line <&3 || exit 1
  case $line in "HTTP/"*" 2"[0-9][0-9]*) exit 0 ;; esac
  exit 1
) 2>/dev/null
# slurmdash_owned PORT: a TCP listener on PORT here has its socket open in a process of
# this job (yours, with this job's SLURM_JOB_ID in its environment). On a shared node
# another user (or another job of yours) may take the port first: that is not the step.
slurmdash_owned() {
  local hex f sl loc rem st x inode rest inodes="" p links i
  hex=$(printf '%04X' "$1") || return 1
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    while read -r sl loc rem st x x x x x inode rest; do
      if [ "$st" = 0A ] && [ "${loc##*:}" = "$hex" ]; then inodes="$inodes $inode"; fi
    done < "$f"
  done
  [ -n "$inodes" ] && [ -n "${SLURM_JOB_ID-}" ] || return 1
  for p in /proc/[0-9]*; do
    [ -O "$p" ] || continue
    links=$(ls -l "$p/fd" 2>/dev/null) || continue
    for i in $inodes; do
      case $links in *"socket:[$i]"*)
        if tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qxF -e "SLURM_JOB_ID=$SLURM_JOB_ID"; then
          return 0
        fi ;;
      esac
    done
  done
  return 1
}
# slurmdash_step_http HOST PORT PATH: a GET answered 2xx by a listener of this job.
slurmdash_step_http() {
  slurmdash_http "$1" "$2" "$3" || return 1
  slurmdash_owned "$2" && return 0
  if [ -z "${slurmdash_warned-}" ]; then
    echo "slurmdash: port $2 answers, but no process of this job listens on it (another user's or another job's): not taken as ready" >&2
    slurmdash_warned=1
  fi
  return 1
}
# slurmdash_free_port: a port nothing listens on here, from 20000-59999.
slurmdash_free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "slurmdash: no free port found on $(hostname)" >&2
  return 1
}
# slurmdash_wait NAME SECS PID CHECK...: until CHECK succeeds; fails (and so ends the job,
# under set -e) when the step ends or the time is up.
slurmdash_wait() {
  local name=$1 secs=$2 pid=$3 rc
  shift 3
  local end=$((SECONDS + secs))
  echo "slurmdash: waiting up to ${secs}s for step $name to be ready" >&2
  until "$@"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" && rc=0 || rc=$?
      echo "slurmdash: step $name ended (exit code $rc) before it was ready" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$end" ]; then
      echo "slurmdash: step $name was not ready after ${secs}s" >&2
      return 1
    fi
    sleep 2
  done
  echo "slurmdash: step $name is ready" >&2
}
"#;

/// Appends the steps to the script. `cpus` is the job's CPUs per task, `workdir` where each
/// command starts, `launch_image` what `--container-image` gets for a step without an
/// image of its own, `launch_mounts` the launch's mounts.
pub fn render(
    s: &mut String,
    steps: &[PlanStep],
    cpus: u32,
    workdir: &str,
    launch_image: Option<&str>,
    launch_mounts: &str,
) {
    s.push_str(HELPERS);
    let n = steps.len();
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == n;
        let image = step.image.as_ref().map(Image::pyxis).or(launch_image);
        let mounts = if step.mounts.is_empty() {
            launch_mounts
        } else {
            step.mounts.as_str()
        };
        let mut inner = String::new();
        if image.is_some() {
            let _ = writeln!(inner, "cd {}", quote(workdir));
        }
        for (k, v) in &step.env {
            let _ = writeln!(inner, "export {k}={}", quote(v));
        }
        inner.push_str(&step.command);
        let mut srun = vec![
            "srun".to_string(),
            "--nodes=1".into(),
            "--ntasks=1".into(),
            "--overlap".into(),
            "--nodelist=\"$slurmdash_head\"".into(),
            format!("--cpus-per-task={cpus}"),
        ];
        if let Some(img) = image {
            srun.push(quote(&format!("--container-image={img}")));
            if !mounts.is_empty() {
                srun.push(quote(&format!("--container-mounts={mounts}")));
            }
        }
        srun.push(quote(&step.shell));
        srun.push("-c".into());
        srun.push(quote(&inner));
        let _ = writeln!(
            s,
            "\n# Step {} of {n}{}: {}",
            i + 1,
            if last { " (the last)" } else { "" },
            step.name
        );
        // Where later steps (and this one) find it.
        let _ = writeln!(
            s,
            "export SLURMDASH_STEP_{}_HOST=\"$slurmdash_head\"",
            step.var
        );
        match step.port {
            Some(0) => {
                // Assigned apart from the export, so that set -e sees a failure.
                let _ = writeln!(
                    s,
                    "SLURMDASH_STEP_{v}_PORT=\"$(slurmdash_free_port)\"\nexport SLURMDASH_STEP_{v}_PORT",
                    v = step.var
                );
            }
            Some(p) => {
                let _ = writeln!(s, "export SLURMDASH_STEP_{}_PORT={p}", step.var);
            }
            None => {}
        }
        if last {
            let _ = writeln!(
                s,
                "set +e\n{}\nslurmdash_rc=$?\nset -e\necho \"slurmdash: step {} (the last) ended with exit code $slurmdash_rc; stopping the others\" >&2\nslurmdash_stop\nexit \"$slurmdash_rc\"",
                srun.join(" "),
                step.name
            );
            return;
        }
        let _ = writeln!(
            s,
            "{} &\nslurmdash_pid=$!\nslurmdash_pids=\"$slurmdash_pids $slurmdash_pid\"",
            srun.join(" ")
        );
        match &step.ready {
            Some(Ready::Http { host, port, path }) => {
                let port = match (port, step.port) {
                    (Some(p), _) => p.to_string(),
                    (None, Some(_)) => format!("\"$SLURMDASH_STEP_{}_PORT\"", step.var),
                    (None, None) => "80".into(),
                };
                let _ = writeln!(
                    s,
                    "slurmdash_wait {} {} \"$slurmdash_pid\" slurmdash_step_http {} {port} {}",
                    quote(&step.name),
                    step.ready_timeout_secs,
                    quote(host),
                    quote(path)
                );
            }
            Some(Ready::Command(c)) => {
                let _ = writeln!(
                    s,
                    "slurmdash_wait {} {} \"$slurmdash_pid\" bash -c {}",
                    quote(&step.name),
                    step.ready_timeout_secs,
                    quote(c)
                );
            }
            None => {}
        }
    }
}

/// One line for the form: `model (img, ready http://…) → eval (img)`.
pub fn summary(steps: &[StepSpec]) -> String {
    steps
        .iter()
        .map(|s| {
            let mut parts = Vec::new();
            if !s.image.is_empty() {
                parts.push(s.image.clone());
            }
            if !s.ready.is_empty() {
                parts.push(format!("ready {}", s.ready));
            }
            if parts.is_empty() {
                s.name.clone()
            } else {
                format!("{} ({})", s.name, parts.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::launch::validate::{parse_time, resolve_shell};

    /// A web server on the step's port answering 200, started with `job` as its
    /// SLURM_JOB_ID (None: not in any job); whether the step's ready check (run as job
    /// 4242) takes it as ready.
    fn ready_with_server(job: Option<&str>) -> bool {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let mut server = std::process::Command::new("python3");
        server
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(dir.path())
            .env_remove("SLURM_JOB_ID")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(j) = job {
            server.env("SLURM_JOB_ID", j);
        }
        let mut server = server.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let check = format!("{HELPERS}\ntrap - EXIT\nslurmdash_step_http 127.0.0.1 {port} /");
        let out = std::process::Command::new("bash")
            .args(["-c", &check])
            .env("SLURM_JOB_ID", "4242")
            .env("SLURM_JOB_NODELIST", "")
            .output()
            .unwrap();
        let _ = server.kill();
        let _ = server.wait();
        let said = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            assert!(
                said.contains(&format!(
                    "port {port} answers, but no process of this job listens on it"
                )),
                "{said}"
            );
        }
        out.status.success()
    }

    #[test]
    fn another_process_on_the_steps_port_is_not_taken_as_ready() {
        assert!(!ready_with_server(None), "a listener outside the job");
        assert!(!ready_with_server(Some("999")), "another job's listener");
        assert!(ready_with_server(Some("4242")), "the job's own listener");
    }

    fn step(name: &str, image: &str, command: &str, ready: &str) -> StepSpec {
        StepSpec {
            name: name.into(),
            image: image.into(),
            command: command.into(),
            ready: ready.into(),
            ..StepSpec::default()
        }
    }

    fn check(steps: &[StepSpec]) -> Result<Vec<PlanStep>, Vec<String>> {
        validate(steps, "", false, resolve_shell, parse_time)
    }

    #[test]
    fn ready_checks_parse_http_urls_and_commands() {
        assert_eq!(
            parse_ready("http://localhost:8000/health").unwrap(),
            Ready::Http {
                host: "localhost".into(),
                port: Some(8000),
                path: "/health".into()
            }
        );
        assert_eq!(
            parse_ready("http://node01").unwrap(),
            Ready::Http {
                host: "node01".into(),
                port: None,
                path: "/".into()
            }
        );
        assert!(parse_ready("https://x/").unwrap_err().contains("http://"));
        assert!(parse_ready("http://x:port/").unwrap_err().contains("port"));
        assert!(parse_ready("http://a b:1/").is_err());
        assert_eq!(
            parse_ready("test -e /tmp/up").unwrap(),
            Ready::Command("test -e /tmp/up".into())
        );
    }

    #[test]
    fn steps_are_checked_and_each_problem_names_its_step() {
        let ok = check(&[
            step(
                "model",
                "reg#srv:1",
                "serve",
                "http://localhost:9000/health",
            ),
            step("eval", "", "evaluate", ""),
        ])
        .unwrap();
        assert_eq!(ok[0].var, "MODEL");
        assert_eq!(ok[0].port, Some(9000), "the ready URL's port");
        assert_eq!(ok[0].ready_timeout_secs, 600);
        assert_eq!(ok[1].shell, "bash", "no image anywhere: bash");
        assert_eq!(ok[0].shell, "/bin/sh", "in a container: /bin/sh");
        let e = check(&[
            step("a b", "", "x", ""),
            step("m", "", "", "http://h:1/"),
            step("m", "", "y", "true"),
        ])
        .unwrap_err();
        assert!(e[0].contains("step `a b`: a step needs a name"), "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.contains("step `m`: a command to run is required")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|m| m.contains("same name")),
            "duplicate names: {e:?}"
        );
        assert!(
            e.iter().any(|m| m.contains("is the last")),
            "ready on the last: {e:?}"
        );
        let mut t = step("m", "", "x", "true");
        t.ready_timeout = "soon".into();
        let e = check(&[t, step("n", "", "y", "")]).unwrap_err();
        assert!(e[0].contains("ready_timeout"), "{e:?}");
    }

    #[test]
    fn the_script_waits_for_each_step_and_ends_with_the_last() {
        let mut model = step(
            "model",
            "reg:5000#srv:1",
            "python3 -m http.server 9000",
            "http://localhost:9000/",
        );
        model.env.insert("MODE".into(), "it's".into());
        model.ready_timeout = "2m".into();
        let mut warm = step("warm-up", "", "sleep 1", "test -e /tmp/warm");
        warm.port = Some(7);
        // A free port picked when the job runs, checked by a URL without one.
        let mut auto = step(
            "auto",
            "",
            "httpd -p $SLURMDASH_STEP_AUTO_PORT",
            "http://localhost/",
        );
        auto.port = Some(0);
        let eval = step(
            "eval",
            "",
            "wget -O - http://$SLURMDASH_STEP_MODEL_HOST:$SLURMDASH_STEP_MODEL_PORT/",
            "",
        );
        let plan = validate(
            &[model, warm, auto, eval],
            "",
            true,
            resolve_shell,
            parse_time,
        )
        .unwrap();
        let mut s = String::new();
        render(&mut s, &plan, 2, "/w d", Some("/img/base.sqsh"), "/lustre");
        insta::assert_snapshot!(s);
        // Each earlier step in the background, waited for before the next starts; its
        // endpoint exported before it starts (its command may listen at its port); the last in the foreground, its code the job's.
        let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle}: {s}"));
        assert!(at("export SLURMDASH_STEP_MODEL_HOST") < at("srun"));
        assert!(at("slurmdash_step_http localhost 9000 /") < at("# Step 2 of 4"));
        assert!(at("export SLURMDASH_STEP_MODEL_PORT=9000") < at("# Step 2 of 4"));
        assert!(at("bash -c 'test -e /tmp/warm'") < at("# Step 3 of 4: auto"));
        assert!(
            at("SLURMDASH_STEP_AUTO_PORT=\"$(slurmdash_free_port)\"\nexport SLURMDASH_STEP_AUTO_PORT\n")
                < at("slurmdash_step_http localhost \"$SLURMDASH_STEP_AUTO_PORT\" /")
        );
        assert!(
            at("slurmdash_step_http localhost \"$SLURMDASH_STEP_AUTO_PORT\" /")
                < at("# Step 4 of 4 (the last): eval")
        );
        assert!(
            s.ends_with("slurmdash_stop\nexit \"$slurmdash_rc\"\n"),
            "{s}"
        );
        assert_eq!(s.matches(" &\n").count(), 3);
    }

    #[test]
    fn the_rendered_waits_run_in_bash() {
        // The helpers, with a stand-in step that is ready at once, and one that ends.
        let bash = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "SLURM_JOB_NODELIST=x; scontrol() {{ echo n1; }}\n{HELPERS}\nsleep 5 & p=$!\nslurmdash_pids=$p\nslurmdash_wait up 5 \"$p\" true && echo ready-ok\nfalse & q=$!\nslurmdash_wait gone 20 \"$q\" false || echo gone-refused\nslurmdash_wait slow 1 \"$p\" false || echo slow-refused\necho head=$slurmdash_head port=$(slurmdash_free_port)"
            ))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&bash.stdout);
        let err = String::from_utf8_lossy(&bash.stderr);
        assert!(out.contains("ready-ok"), "{out}{err}");
        assert!(out.contains("gone-refused"), "{out}{err}");
        assert!(
            err.contains("step gone ended (exit code 1) before it was ready"),
            "{err}"
        );
        assert!(out.contains("slow-refused"), "{out}{err}");
        assert!(err.contains("step slow was not ready after 1s"), "{err}");
        assert!(out.contains("head=n1 port="), "{out}");
        let port: u16 = out
            .split("port=")
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        assert!((20000..60000).contains(&port));
        // The HTTP check against a server here: 2xx is ready, 404 and nothing listening not.
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = server.local_addr().unwrap().port();
        let answer = std::thread::spawn(move || {
            for (i, stream) in server.incoming().take(2).enumerate() {
                use std::io::{Read, Write};
                let mut c = stream.unwrap();
                // The whole request first: closing with some unread would reset the
                // connection before the answer is read.
                let mut got = Vec::new();
                let mut buf = [0u8; 512];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let status = if i == 0 { "200 OK" } else { "404 Not Found" };
                let _ = write!(c, "HTTP/1.0 {status}\r\n\r\n");
            }
        });
        let checks = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "scontrol() {{ echo n1; }}\n{HELPERS}\nslurmdash_http 127.0.0.1 {at} /health && echo first-ready\nslurmdash_http 127.0.0.1 {at} /x || echo second-not\nslurmdash_http 127.0.0.1 {port} / || echo closed-not"
            ))
            .output()
            .unwrap();
        answer.join().unwrap();
        let out = String::from_utf8_lossy(&checks.stdout);
        assert_eq!(out, "first-ready\nsecond-not\nclosed-not\n");
    }
}
