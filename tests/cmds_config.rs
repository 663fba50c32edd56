//! A bad `[[commands]]` entry stops slurmdash at start-up with a message that names the entry
//! (its place in the list, its key and its name) and what is wrong, before anything connects.
//! Cluster-free: the config names a host that is never reached.

use std::process::Command;

fn start_with(commands: &str) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let text = format!(
        "default_cluster = \"x\"\n\n[clusters.x]\nhosts = [\"never-reached.invalid\"]\n{commands}"
    );
    std::fs::write(&config, text).expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(&config)
        .arg("jobs")
        .env_remove("SLURM_HOSTNAME")
        .output()
        .expect("run slurmdash");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn a_bad_entry_is_named_by_its_key_and_name_at_start_up() {
    let cases = [
        (
            "[[commands]]\nkey = \"J\"\nname = \"jobstats\"\ncommand = \"jobstats {job_id}\"\n\n[[commands]]\nkey = \"d\"\nname = \"seff\"\ncommand = \"seff {job_id}\"\n",
            "key `commands[1]`: the command on key `d` (\"seff\"): `d` is slurmdash's key for",
        ),
        (
            "[[commands]]\nkey = \"J\"\nname = \"jobstats\"\ncommand = \"jobstats {jobid}\"\n",
            "the command on key `J` (\"jobstats\"): unknown placeholder {jobid}",
        ),
        (
            "[[commands]]\nkey = \"J\"\nname = \"stats\"\nstates = [\"RUNING\"]\ncommand = \"x\"\n",
            "`RUNING` is not a job state",
        ),
        (
            "[[commands]]\nkey = \"J\"\nname = \"stats\"\nwhere = \"gpu\"\ncommand = \"x\"\n",
            "unknown variant `gpu`, expected one of `login`, `node`, `laptop`",
        ),
    ];
    for (entry, said) in cases {
        let (ok, stderr) = start_with(entry);
        assert!(!ok, "started with a bad entry:\n{entry}");
        assert!(stderr.contains(said), "{entry}\nsaid: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
