//! Shell completions and the man page, generated from the same clap definitions as the
//! parser. They need no config and no cluster.

use std::collections::HashSet;
use std::process::{Command, Output};

/// Every subcommand the CLI has: `every_subcommand_is_listed_here` fails when the clap
/// definitions gain or lose one, so each test below covers them all.
const SUBCOMMANDS: [&str; 19] = [
    "doctor",
    "jobs",
    "cancel",
    "eff",
    "history",
    "usage",
    "deps",
    "why",
    "logs",
    "shell",
    "forward",
    "fetch",
    "login",
    "submit",
    "adopt",
    "session",
    "rerun",
    "completions",
    "man",
];

/// Runs slurmdash with no config anywhere (an empty HOME and XDG dirs).
fn bare(args: &[&str]) -> (Output, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env_remove("SLURM_HOSTNAME")
        .output()
        .expect("run slurmdash");
    (out, home)
}

fn words(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map(|w| w.trim_start_matches('-'))
        .collect()
}

#[test]
fn every_subcommand_is_listed_here() {
    use clap::CommandFactory;
    let mut defined: Vec<String> = slurmdash::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    defined.sort();
    let mut listed: Vec<String> = SUBCOMMANDS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        defined, listed,
        "the clap definitions (left) and SUBCOMMANDS (right) differ: list a new subcommand here"
    );
}

#[test]
fn every_subcommand_has_its_help() {
    for sub in SUBCOMMANDS {
        let (out, _home) = bare(&[sub, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{sub} --help: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(&format!("Usage: slurmdash {sub}")),
            "{sub} --help: {text}"
        );
    }
}

/// `submit` takes your own script before `--` and prints JSON on request.
#[test]
fn submit_help_names_the_script_and_json() {
    let (out, _home) = bare(&["submit", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("[SCRIPT]"), "{text}");
    assert!(text.contains("--json"), "{text}");
    assert!(text.contains("Your own batch script"), "{text}");
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let (out, _home) = bare(&["completions", shell]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let w = words(&text);
        for sub in SUBCOMMANDS {
            assert!(w.contains(sub), "{shell} completions lack `{sub}`");
        }
        for opt in ["read-only", "cluster", "config", "partition"] {
            assert!(w.contains(opt), "{shell} completions lack --{opt}");
        }
    }
}

#[test]
fn bash_really_completes_a_subcommand_from_the_generated_script() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, _home) = bare(&["completions", "bash"]);
    assert!(out.status.success());
    let script = dir.path().join("slurmdash.bash");
    std::fs::write(&script, &out.stdout).expect("write");
    let probe = format!(
        "source {}; COMP_WORDS=(slurmdash doc); COMP_CWORD=1; _slurmdash slurmdash doc slurmdash; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let r = Command::new("bash")
        .arg("-c")
        .arg(probe)
        .output()
        .expect("bash");
    let said = String::from_utf8_lossy(&r.stdout);
    assert_eq!(
        said.trim(),
        "doctor",
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}

#[test]
fn the_man_page_names_the_subcommands_and_options() {
    let (out, _home) = bare(&["man"]);
    assert!(out.status.success());
    let roff = String::from_utf8_lossy(&out.stdout);
    assert!(roff.contains(".TH slurmdash 1"), "{roff}");
    assert!(roff.contains(".SH SUBCOMMANDS"), "{roff}");
    // roff escapes the dashes in option names.
    assert!(roff.contains(r"\-\-read\-only"), "{roff}");
    for sub in SUBCOMMANDS {
        assert!(
            roff.contains(&format!("slurmdash\\-{sub}(1)")),
            "man page lacks `{sub}`"
        );
    }
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, _home) = bare(&["man", "--dir", &dir.path().display().to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("slurmdash.1").is_file());
    for sub in SUBCOMMANDS {
        let page = dir.path().join(format!("slurmdash-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        assert!(text.contains(".TH slurmdash-"), "{text}");
    }
}
