use super::*;

const VERSIONS: [&str; 2] = ["22.05", "26.05"];

fn fixture(v: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{v}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn nv(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/nvidia-smi/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn cpu_times_and_sizes_read_as_slurm_prints_them() {
    assert_eq!(parse_cpu_time("00:00:07"), Some(7.0));
    assert_eq!(parse_cpu_time("1-02:03:04"), Some(93784.0));
    assert_eq!(parse_cpu_time("02:14.500"), Some(134.5));
    assert_eq!(parse_cpu_time(""), None);
    assert_eq!(parse_cpu_time("x:1"), None);
    assert_eq!(parse_size("951568K", 1024), Some(951568 * 1024));
    assert_eq!(parse_size("279.50M", 1024), Some(293_076_992));
    assert_eq!(parse_size("34335", 1), Some(34335));
    assert_eq!(parse_size("0", 1024), Some(0));
    assert_eq!(parse_size("-1K", 1), None);
    assert_eq!(parse_size("", 1), None);
}

#[test]
fn a_busy_step_reads_its_cpu_time_and_resident_memory_on_every_version() {
    for v in VERSIONS {
        let s = parse_sample(&fixture(v, "live_gpu_burn.out"), "MARK").unwrap();
        let steps = s.steps.unwrap();
        assert_eq!(steps.len(), 2, "{v}: batch and step 0");
        let batch = &steps[0];
        assert!(batch.step.ends_with(".batch"), "{v}");
        let step = &steps[1];
        assert!(step.step.ends_with(".0"), "{v}");
        assert_eq!(step.tasks, 1);
        assert_eq!(step.nodes, "gpu01");
        assert!(
            step.cpu_secs >= 2.0,
            "{v}: two busy loops for 8 s (on a shared machine)"
        );
        assert!(
            s.clock.is_some_and(|c| c > 1.7e9),
            "{v}: the login node's clock"
        );
        // ~300 MiB held by the job (python's bytearray plus the interpreter).
        let mib = step.rss_now / (1 << 20);
        assert!((300..340).contains(&mib), "{v}: {mib} MiB");
        assert!(step.rss_peak >= step.rss_now);
        assert!(step.read_bytes.is_some() && step.write_bytes.is_some());
        // The GPU of node gpu01 the capture wrote a load for.
        assert_eq!(s.gpus.len(), 1);
        assert_eq!(s.gpus[0].node, "gpu01");
        let GpuProbe::Gpus(g) = &s.gpus[0].probe else {
            panic!("{v}: {:?}", s.gpus[0].probe)
        };
        assert_eq!(g.len(), 2);
        assert!(g
            .iter()
            .any(|g| g.util == Some(37) && g.mem_used_mib == Some(1234)));
        assert!(g.iter().all(|g| g.mem_total_mib == Some(81920)));
        assert!(g[0].uuid.starts_with("GPU-"));
    }
}

#[test]
fn a_two_node_job_has_gpus_per_node_and_sums_its_tasks_memory() {
    for v in VERSIONS {
        let s = parse_sample(&fixture(v, "live_two_nodes.out"), "MARK").unwrap();
        let steps = s.steps.unwrap();
        let step = steps.iter().find(|s| s.tasks == 2).unwrap();
        assert_eq!(step.nodes, "gpu[01-02]");
        // TRESUsageInTot's mem is every task's resident memory added up; MaxRSS the
        // largest task's.
        assert!(step.rss_now > step.rss_peak, "{v}: {step:?}");
        let nodes: Vec<&str> = s.gpus.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(nodes, ["gpu01", "gpu02"], "{v}");
        for n in &s.gpus {
            let GpuProbe::Gpus(g) = &n.probe else {
                panic!("{v}: {:?}", n.probe)
            };
            assert_eq!(g.len(), 1, "{v}: one GPU a node");
            assert_eq!(g[0].util, Some(0), "{v}: idle by default");
        }
    }
}

#[test]
fn a_node_without_the_driver_says_so_and_an_ended_job_has_no_step() {
    for v in VERSIONS {
        let s = parse_sample(&fixture(v, "live_cpu_node.out"), "MARK").unwrap();
        assert!(s.steps.is_ok());
        match &s.gpus[0].probe {
            GpuProbe::NoTelemetry(w) => assert!(w.contains("NVIDIA driver"), "{v}: {w}"),
            p => panic!("{v}: {p:?}"),
        }
        let s = parse_sample(&fixture(v, "live_ended.out"), "MARK").unwrap();
        let e = s.steps.unwrap_err();
        assert!(e.contains("No steps running"), "{v}: {e}");
        assert!(s.gpus.is_empty());
    }
}

#[test]
fn nvidia_smi_csv_in_the_documented_formats() {
    let g = parse_nvidia_smi(&nv("noheader_nounits.csv")).unwrap();
    assert_eq!(g.len(), 8);
    assert_eq!(g[5].util, Some(100));
    assert_eq!(g[0].mem_used_mib, Some(71234));
    assert_eq!(g[7].index, 7);
    assert_eq!(g[2].name, "NVIDIA A100-SXM4-80GB");
    let h = parse_nvidia_smi(&nv("header_units.csv")).unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].util, Some(98));
    assert_eq!(h[0].mem_total_mib, Some(81559));
    assert_eq!(h[1].mem_used_mib, Some(4));
    let n = parse_nvidia_smi(&nv("not_supported.csv")).unwrap();
    assert_eq!(n[0].util, None);
    assert_eq!(n[1].mem_used_mib, None);
    assert_eq!(n[1].util, Some(23));
    let bad = parse_nvidia_smi("0, GPU-x, A100, 3\n").unwrap_err();
    assert!(bad.to_string().contains("6 fields"), "{bad}");
    assert!(parse_nvidia_smi("zero, GPU-x, A, 1, 2, 3").is_err());
}

/// Output of the sample script for one node, as `printf` in live_sample.sh frames it.
fn gpu_section(rc: &str, node: &str, body: &str, err: &str) -> String {
    format!("MARK sstat 0\n\nMARK stderr\n\nMARK end\nMARK gpu {rc} {node}\n{body}\nMARK stderr\n{err}\nMARK end\n")
}

#[test]
fn missing_nvidia_smi_no_device_timeouts_and_garbage_are_told_apart() {
    // What srun prints when the program is not on the node (written by hand).
    let missing = gpu_section(
        "2",
        "n1",
        "",
        "slurmstepd: error: execve(): nvidia-smi: No such file or directory\nsrun: error: n1: task 0: Exited with exit code 2",
    );
    let s = parse_sample(&missing, "MARK").unwrap();
    assert!(matches!(&s.gpus[0].probe, GpuProbe::NoTelemetry(w) if w.contains("execve")));
    let none = gpu_section("6", "n1", &nv("no_devices.txt"), "");
    let s = parse_sample(&none, "MARK").unwrap();
    assert!(matches!(&s.gpus[0].probe, GpuProbe::NoTelemetry(w) if w == "No devices were found"));
    let slow = gpu_section("124", "n1", "", "");
    let s = parse_sample(&slow, "MARK").unwrap();
    assert!(matches!(&s.gpus[0].probe, GpuProbe::Failed(w) if w.contains("in time")));
    let junk = gpu_section("0", "n1", "\u{1b}[31mwhat\u{0}", "");
    let s = parse_sample(&junk, "MARK").unwrap();
    assert!(matches!(&s.gpus[0].probe, GpuProbe::Failed(_)));
    // Cut-off output and no output at all.
    assert!(parse_sample("MARK sstat 0\n1.0|1|n", "MARK").is_err());
    let e = parse_sample("", "MARK").unwrap_err();
    assert!(e.to_string().contains("no sstat section"), "{e}");
    let e = parse_sample("MARK error mktemp\n", "MARK").unwrap_err();
    assert!(e.to_string().contains("could not start"), "{e}");
}

#[test]
fn sstat_lines_with_too_few_fields_are_an_error_naming_the_line() {
    let e = parse_sstat("1.0|1|n1|00:00:01\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("sstat"), "{e}");
    // AveCPU times tasks when TRES has no cpu.
    let s = parse_sstat("1.0|4|n1|00:00:10|1M|1M|mem=4M|mem=1M|\n").unwrap();
    assert_eq!(s[0].cpu_secs, 40.0);
    assert_eq!(s[0].rss_now, 4 << 20);
    // AveRSS times the tasks beyond any u64 (16 PiB by 4096 tasks): not known, no panic.
    let s = parse_sstat("1.0|4096|n1|00:00:10|1M|16P||||\n").unwrap();
    assert_eq!((s[0].rss_now, s[0].cpu_secs), (0, 40960.0));
}

#[test]
fn the_argv_carries_the_job_and_nodes_as_arguments_only() {
    let t = LiveTarget {
        id: "123".parse().unwrap(),
        gpu_nodes: vec!["gpu01".into(), "n;rm -rf ~".into()],
        nodes_skipped: 0,
        timeout_secs: 10,
    };
    let a = argv(&t, "SLURMDASH-LIVE-1");
    assert_eq!(a[..3], ["sh", "-c", SCRIPT]);
    assert_eq!(
        a[3..],
        [
            "slurmdash-live",
            "SLURMDASH-LIVE-1",
            "123",
            "10",
            "gpu01",
            "n;rm -rf ~"
        ]
    );
    assert!(SCRIPT.contains(GPU_QUERY));
    assert!(SCRIPT.contains(&SSTAT_FIELDS.join(",")));
}

#[test]
fn the_memory_request_comes_from_the_tres() {
    let d = JobDetail {
        tres: Some("cpu=2,mem=1G,node=1,billing=2,gres/gpu=2".into()),
        ..JobDetail::default()
    };
    assert_eq!(requested_memory(&d), Some(1 << 30));
    let d = JobDetail {
        tres: Some("cpu=2,mem=500,node=1".into()),
        ..JobDetail::default()
    };
    assert_eq!(requested_memory(&d), Some(500 << 20));
}

#[test]
fn the_script_runs_with_hostile_node_names_as_plain_data() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let put = |name: &str, body: &str| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // Stand-ins: sstat prints one step; srun says which node it was given, then answers
    // like nvidia-smi, except on the node called "slow", where it never ends.
    put(
        "sstat",
        "echo \"$*\" >&2; echo '9.0|1|n1|00:00:02|1M|1M|cpu=00:00:02,mem=2M|mem=1M|fs/disk=3'",
    );
    put(
        "srun",
        "for a; do case $a in --nodelist=*) n=${a#--nodelist=};; esac; done\n\
         [ \"$n\" = slow ] && exec sleep 30\n\
         echo \"0, GPU-x, node <$n>, 5, 6, 7\"",
    );
    let pwned = dir.path().join("pwned");
    let hostile = format!("a b;touch {}", pwned.display());
    let t = LiveTarget {
        id: "9".parse().unwrap(),
        gpu_nodes: vec![hostile.clone(), "$(touch x)".into(), "slow".into()],
        nodes_skipped: 0,
        timeout_secs: 1,
    };
    let a = argv(&t, "M");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = std::time::Instant::now();
    let out = std::process::Command::new(&a[0])
        .args(&a[1..])
        .env("PATH", path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let s = parse_sample(&String::from_utf8_lossy(&out.stdout), "M").unwrap();
    assert_eq!(s.steps.unwrap()[0].cpu_secs, 2.0);
    assert_eq!(s.gpus.len(), 3);
    assert_eq!(s.gpus[0].node, hostile);
    match &s.gpus[0].probe {
        GpuProbe::Gpus(g) => assert_eq!(g[0].name, format!("node <{hostile}>")),
        p => panic!("{p:?}"),
    }
    assert_eq!(s.gpus[1].node, "$(touch x)");
    assert!(
        matches!(&s.gpus[2].probe, GpuProbe::Failed(w) if w.contains("in time")),
        "{:?}",
        s.gpus[2]
    );
    assert!(!pwned.exists() && !dir.path().join("x").exists());
}

#[test]
fn stats_count_the_sstat_and_the_srun_of_a_sample() {
    let t = LiveTarget {
        id: "9".parse().unwrap(),
        gpu_nodes: vec!["n1".into()],
        nodes_skipped: 0,
        timeout_secs: 5,
    };
    // What slurmctld sees: sstat (3) and one srun (2) per node asked, as the budget plans it
    // and as :stats counts the argv.
    let table = |t: &LiveTarget| crate::slurm::command::rpc_cost(&argv(t, "M"));
    assert_eq!((table(&t).ctld, table(&t).dbd), (5, 0));
    assert_eq!(rpc_cost(&t), 5);
    let three = LiveTarget {
        gpu_nodes: vec!["n1".into(), "n2".into(), "n3".into()],
        ..t.clone()
    };
    assert_eq!(rpc_cost(&three), 9);
    assert_eq!(table(&three).ctld, 9);
    let cpu_only = LiveTarget {
        gpu_nodes: Vec::new(),
        ..t
    };
    assert_eq!(rpc_cost(&cpu_only), 3);
    assert_eq!(table(&cpu_only).ctld, 3);
}
