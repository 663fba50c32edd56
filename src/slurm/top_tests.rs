use super::*;

const VERSIONS: [&str; 3] = ["22.05", "24.11", "26.05"];
const M: &str = "SLURMDASH-TOP-fixture";

fn fixture(v: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{v}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The job each version's fixture was captured from: two nodes, a batch script that runs
/// `srun sh -c 'sleep 300 | cat & SLURMDASH_FAKE_GPU_MIB=2048 yes > /dev/null & wait'`.
fn job_of(v: &str) -> &'static str {
    match v {
        "22.05" => "2212067",
        "24.11" => "2417544",
        _ => "2611631",
    }
}

#[test]
fn two_nodes_show_the_steps_tree_and_gpu_memory_on_every_version() {
    for v in VERSIONS {
        let s = parse_sample(&fixture(v, "top_two_nodes.out"), M, job_of(v)).unwrap();
        assert_eq!(s.srun_exit, Some(0), "{v}");
        let names: Vec<&str> = s.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(names, ["gpu01", "gpu02"], "{v}");
        for n in &s.nodes {
            assert_eq!(n.steps, StepSource::Listpids, "{v} {}", n.node);
            assert!(n.problems.is_empty(), "{v}: {:?}", n.problems);
            assert_eq!(n.gpu_note, None, "{v}");
            // The probe's own step and other jobs' processes are not shown.
            for p in &n.procs {
                assert!(!p.command.contains(M), "{v}: {p:?}");
                assert!(!p.command.starts_with("slurmstepd"), "{v}: {p:?}");
            }
            // Step 0: sh -c … with its children sleep, cat and the busy yes under it.
            let sh = n
                .procs
                .iter()
                .position(|p| p.step.as_deref() == Some("0") && p.command.contains("sh -c"))
                .unwrap_or_else(|| panic!("{v} {}: {:#?}", n.node, n.procs));
            let kids: Vec<&Proc> = n.procs[sh + 1..]
                .iter()
                .take_while(|p| p.depth > n.procs[sh].depth)
                .collect();
            let words: Vec<&str> = kids.iter().map(|p| p.command.as_str()).collect();
            assert_eq!(words, ["sleep 300", "cat", "yes"], "{v} {}", n.node);
            let yes = kids[2];
            assert_eq!(yes.ppid, n.procs[sh].pid);
            assert_eq!(yes.depth, n.procs[sh].depth + 1);
            assert!(yes.state.starts_with('R'), "{v}: {yes:?}");
            assert!(yes.cpu.unwrap() > 5.0, "{v}: {yes:?}");
            assert_eq!(yes.gpus.len(), 1, "{v}: {yes:?}");
            assert_eq!(yes.gpus[0].mem_mib, Some(2048));
            assert_eq!(yes.gpus[0].index, Some(0));
            assert_eq!(yes.gpus[0].util, Some(0));
            assert!(kids[0].gpus.is_empty());
        }
        // The batch step (on the first node only): the script, then srun.
        let first = &s.nodes[0];
        assert_eq!(first.procs[0].step.as_deref(), Some("batch"), "{v}");
        assert_eq!(first.procs[0].depth, 0);
        assert!(first.procs[0].command.contains("slurm_script"), "{v}");
        assert!(first.procs[1].command.starts_with("srun "), "{v}");
        assert!(
            s.nodes[1]
                .procs
                .iter()
                .all(|p| p.step.as_deref() == Some("0")),
            "{v}"
        );
    }
}

#[test]
fn a_cpu_node_says_why_there_are_no_gpu_figures() {
    let s = parse_sample(&fixture("22.05", "top_cpu_node.out"), M, "2212068").unwrap();
    let n = &s.nodes[0];
    assert_eq!(n.node, "cpu01");
    assert!(n
        .gpu_note
        .as_deref()
        .unwrap()
        .starts_with("nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate"));
    let cmds: Vec<(&str, usize)> = n
        .procs
        .iter()
        .map(|p| (p.command.as_str(), p.depth))
        .collect();
    assert_eq!(cmds[0].1, 0);
    assert!(cmds[0].0.contains("slurm_script"));
    assert_eq!(
        &cmds[1..],
        [
            ("sh -c sleep 200 | cat & yes > /dev/null & wait", 1),
            ("sleep 200", 2),
            ("cat", 2),
            ("yes", 2)
        ]
    );
}

#[test]
fn an_ended_job_gives_srun_exit_and_no_node() {
    let s = parse_sample(&fixture("22.05", "top_ended.out"), M, "2212064").unwrap();
    assert_eq!(s.srun_exit, Some(1));
    assert!(s.nodes.is_empty());
    assert!(parse_sample("", M, "1").is_err());
}

fn node_text(listpids: &str, listpids_rc: i32, ps: &str) -> String {
    let mut out = format!("0: {M} node n1 7\n0: {M} ps\n");
    for l in ps.lines() {
        out.push_str(&format!("0: {l}\n"));
    }
    out.push_str(&format!("0: {M} rc 0\n0: {M} listpids\n"));
    for l in listpids.lines() {
        out.push_str(&format!("0: {l}\n"));
    }
    out.push_str(&format!(
        "0: {M} rc {listpids_rc}\n0: {M} done\n{M} srun 0\n"
    ));
    out
}

#[test]
fn without_listpids_the_steps_come_from_slurmstepd_titles() {
    let ps = "  10     1 Sl 0.0 100 5 slurmstepd: [55.batch]\n\
              \x20 11    10 S  0.0 100 5 /bin/sh script\n\
              \x20 12    11 R 99.0 100 5 python train.py\n\
              \x20 20     1 Sl 0.0 100 5 slurmstepd: [55.7]\n\
              \x20 21    20 S  0.0 100 5 sh -c probe\n\
              \x20 30     1 Sl 0.0 100 5 slurmstepd: [66.batch]\n\
              \x20 31    30 S  0.0 100 5 other job\n";
    let s = parse_sample(
        &node_text("scontrol: error: listpids not supported", 1, ps),
        M,
        "55",
    )
    .unwrap();
    let n = &s.nodes[0];
    assert!(matches!(&n.steps, StepSource::Titles(w) if w.contains("not supported")));
    let got: Vec<(u32, Option<&str>, usize)> = n
        .procs
        .iter()
        .map(|p| (p.pid, p.step.as_deref(), p.depth))
        .collect();
    assert_eq!(got, [(11, Some("batch"), 0), (12, Some("batch"), 1)]);
    assert_eq!(n.gpu_note.as_deref(), Some("no nvidia-smi on this node"));

    // Neither listpids nor visible step daemons (hidepid): nothing is guessed.
    let s = parse_sample(&node_text("", 1, "  11 10 S 0.0 1 1 sh\n"), M, "55").unwrap();
    assert!(matches!(s.nodes[0].steps, StepSource::Unknown(_)));
    assert!(s.nodes[0].procs.is_empty());
}

#[test]
fn hostile_command_lines_are_shown_safely() {
    let ps = "  11 10 S 0.0 1 1 evil\x1b[2Jname\x07 \u{202e}x\n  12 11 S 0.0 1 1 x\n\
              \x20 bad line\n";
    let lp = "PID JOBID STEPID\n11 55 batch\n";
    let s = parse_sample(&node_text(lp, 0, ps), M, "55").unwrap();
    let n = &s.nodes[0];
    assert_eq!(
        n.procs[0].command,
        "evil?[2Jname? \u{202e}x".replace('\u{202e}', "?")
    );
    assert_eq!(n.procs[1].depth, 1);
    assert_eq!(n.problems.len(), 1, "{:?}", n.problems);
    assert!(n.problems[0].contains("1 line of ps unreadable"));
}

#[test]
fn the_argv_carries_data_only_as_arguments_and_costs_one_srun() {
    let t = TopTarget {
        id: "123".parse().unwrap(),
        nodes: vec!["gpu01".into(), "n$(reboot)".into()],
        nodes_skipped: 0,
        timeout_secs: 9,
    };
    let a = argv(&t, "MK");
    assert_eq!(&a[..4], ["sh", "-c", SCRIPT, NAME]);
    assert_eq!(&a[4..9], ["MK", "123", "9", "2", "gpu01,n$(reboot)"]);
    assert_eq!(a[9], NODE_SCRIPT);
    assert_eq!(rpc_cost(&t), 2);
    // An array task is named by its own id first: squeue --local, 2 more.
    let task = TopTarget {
        id: "123_4".parse().unwrap(),
        ..t
    };
    assert_eq!(rpc_cost(&task), 4);
}

#[test]
fn the_node_names_the_job_id_it_resolved_for_an_array_task() {
    let ps = "  10 1 Sl 0.0 1 1 slurmstepd: [9001.batch]\n  11 10 S 0.0 1 1 python task.py\n";
    let text = node_text("", 1, ps).replace(
        &format!("{M} node n1 7\n"),
        &format!("{M} node n1 7 9001\n"),
    );
    let s = parse_sample(&text, M, "9000_3").unwrap();
    let cmds: Vec<&str> = s.nodes[0]
        .procs
        .iter()
        .map(|p| p.command.as_str())
        .collect();
    assert_eq!(cmds, ["python task.py"]);
}

#[test]
fn safe_text_cuts_and_hides_control_characters() {
    assert_eq!(safe_text("a\tb\nc", 10), "a?b?c");
    assert_eq!(safe_text("abcdef", 3), "abc…");
    assert_eq!(safe_text("äöü", 3), "äöü");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the node prints (decoded lossily), reading it never panics, every
        /// command shown is free of control characters and bounded, and every process
        /// comes after its parent when the parent is shown.
        #[test]
        fn any_output_reads_without_panic(
            ps in prop::collection::vec(
                ("[0-9]{1,6}", "[0-9]{1,6}", "[RSDZ]", "[0-9.]{1,5}", "[0-9]{1,9}",
                 "[0-9]{1,7}", any::<String>()),
                0..20),
            lp in prop::collection::vec(("[0-9]{1,6}", "[a-z0-9]{1,6}"), 0..10),
            junk in any::<String>(),
        ) {
            let ps: String = ps.iter()
                .map(|(a, b, c, d, e, f, g)| format!("{a} {b} {c} {d} {e} {f} {g}\n"))
                .collect();
            let lp: String = lp.iter().map(|(p, s)| format!("{p} 55 {s}\n")).collect();
            let text = format!("{}{junk}", node_text(&lp, 0, &ps));
            if let Ok(s) = parse_sample(&text, M, "55") {
                for n in &s.nodes {
                    for (i, p) in n.procs.iter().enumerate() {
                        prop_assert!(!p.command.chars().any(char::is_control));
                        prop_assert!(p.command.chars().count() <= MAX_COMMAND + 1);
                        if let Some(j) = n.procs.iter().position(|q| q.pid == p.ppid && q.pid != p.pid) {
                            prop_assert!(j < i || p.depth == 0, "{} after its child", p.pid);
                        }
                    }
                }
            }
            let _ = parse_sample(&junk, M, &junk);
        }
    }
}

#[test]
fn an_array_task_is_read_by_its_own_id_on_24_11() {
    // `top_array_task.out`: array task 2417561_3, which the script named by its own id
    // (squeue %A) for srun and scontrol listpids, on the CPU node.
    let s = parse_sample(&fixture("24.11", "top_array_task.out"), M, "2417561_3").unwrap();
    let n = &s.nodes[0];
    assert_eq!(n.node, "cpu01");
    assert_eq!(n.steps, StepSource::Listpids);
    let got: Vec<(&str, usize, Option<&str>)> = n
        .procs
        .iter()
        .map(|p| (p.command.as_str(), p.depth, p.step.as_deref()))
        .collect();
    assert!(got[0].0.ends_with("slurm_script"), "{got:?}");
    assert_eq!(
        &got[1..],
        [
            (
                "sh -c sleep 120 | cat & yes > /dev/null & wait",
                1,
                Some("batch")
            ),
            ("sleep 120", 2, Some("batch")),
            ("cat", 2, Some("batch")),
            ("yes", 2, Some("batch")),
        ]
    );
    assert!(n.gpu_note.as_deref().unwrap().contains("NVIDIA driver"));
}
