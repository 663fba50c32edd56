use super::*;
use crate::launch::facts::PartitionInfo;
use crate::slurm::timeline::tests::at;

fn resv(
    name: &str,
    nodes: &str,
    start: NaiveDateTime,
    end: NaiveDateTime,
    flags: &str,
) -> Reservation {
    let text = format!(
        "ReservationName={name} StartTime={} EndTime={} Duration=02:00:00\n   Nodes={nodes} NodeCnt=2 CoreCnt=8 Features=(null) PartitionName=(null) Flags={flags}\n   TRES=cpu=8\n   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n   MaxStartDelay=(null)\n",
        start.format("%Y-%m-%dT%H:%M:%S"),
        end.format("%Y-%m-%dT%H:%M:%S")
    );
    crate::slurm::reservation::parse_reservations(&text)
        .unwrap()
        .remove(0)
}

fn node(name: &str, part: &str, state: &str, cpus_idle: u32, gpus_used: u32) -> NodeShape {
    NodeShape {
        node: name.into(),
        partition: part.into(),
        cpus: 16,
        mem_mb: 65536,
        gpus: if part == "cpu" { 0 } else { 8 },
        state: state.into(),
        cpus_idle,
        mem_alloc_mb: 0,
        gpus_used,
    }
}

fn part(name: &str, hours: u64) -> PartitionInfo {
    PartitionInfo {
        name: name.into(),
        max_time: Some(Duration::from_secs(hours * 3600)),
        is_default: name == "gpu",
        state: "UP".into(),
        ..PartitionInfo::default()
    }
}

/// gpu01 has 6 GPUs free, gpu02 2, gpu03 is drained, gpu04 allocated; cpu01 idle.
fn facts() -> ClusterFacts {
    ClusterFacts {
        partitions: vec![part("gpu", 8), part("cpu", 4)],
        nodes: vec![
            node("gpu01", "gpu", "mixed", 12, 2),
            node("gpu02", "gpu", "mixed", 4, 6),
            node("gpu03", "gpu", "drained", 16, 0),
            node("gpu04", "gpu", "allocated", 0, 8),
            node("cpu01", "cpu", "idle", 16, 0),
        ],
        ..ClusterFacts::default()
    }
}

fn spec(partition: &str, nodes: u32, gpus: u32, time: &str) -> LaunchSpec {
    LaunchSpec {
        partition: partition.into(),
        nodes,
        gpus,
        max_gpus_per_node: 8,
        cpus_per_task: 2,
        time: time.into(),
        ..LaunchSpec::default()
    }
}

#[test]
fn the_request_reads_the_spec_as_validation_does() {
    let f = facts();
    let r = Request::of(&spec("", 2, 4, "4h"), &f);
    assert_eq!(r.partitions, ["gpu"], "the default partition");
    assert_eq!((r.nodes, r.gpus_per_node, r.cpus_per_node), (2, 2, 2));
    assert_eq!(r.time, Some(Duration::from_secs(4 * 3600)));
    let whole = Request::of(&spec("gpu", 1, 16, "bad"), &f);
    assert_eq!((whole.nodes, whole.gpus_per_node, whole.time), (2, 8, None));
    let nodes: Vec<&str> = r.nodes_of(&f).iter().map(|n| n.node.as_str()).collect();
    assert_eq!(nodes, ["gpu01", "gpu02", "gpu03", "gpu04"]);
}

#[test]
fn a_limit_that_crosses_a_maintenance_window_is_named_with_the_longest_before_it() {
    let f = facts();
    let all = resv(
        "maint",
        "gpu[01-04]",
        at(12, 0),
        at(18, 0),
        "MAINT,SPEC_NODES",
    );
    let req = Request::of(&spec("gpu", 1, 1, "4h"), &f);
    let hit = maintenance(&req, &f, std::slice::from_ref(&all), at(9, 50)).unwrap();
    assert_eq!(
        maintenance_text(&hit, &req, at(9, 50)),
        "your 4h limit runs into maintenance 2026-11-28 12:00–18:00 on gpu[01-04] (in 2h10m); a limit of 2h9m or less starts before it"
    );
    // A limit that ends before it, another partition's nodes, a window that is no MAINT:
    // nothing said.
    let short = Request::of(&spec("gpu", 1, 1, "2h"), &f);
    assert_eq!(
        maintenance(&short, &f, std::slice::from_ref(&all), at(9, 50)),
        None
    );
    let cpu = Request::of(&spec("cpu", 1, 0, "4h"), &f);
    assert_eq!(
        maintenance(&cpu, &f, std::slice::from_ref(&all), at(9, 50)),
        None
    );
    let other = resv("course", "gpu[01-04]", at(12, 0), at(18, 0), "SPEC_NODES");
    assert_eq!(maintenance(&req, &f, &[other], at(9, 50)), None);
    // Half the nodes in the window: a one-node job has the others.
    let half = resv("maint", "gpu[01-02]", at(12, 0), at(18, 0), "MAINT");
    assert_eq!(
        maintenance(&req, &f, std::slice::from_ref(&half), at(9, 50)),
        None
    );
    // Begun: the job waits for its end.
    let hit = maintenance(&req, &f, std::slice::from_ref(&all), at(13, 0)).unwrap();
    assert_eq!(
        maintenance_text(&hit, &req, at(13, 0)),
        "maintenance 2026-11-28 12:00–18:00 on gpu[01-04] (now, until 18:00) holds the nodes of gpu: the job waits until it ends"
    );
}

#[test]
fn starts_now_takes_the_most_gpus_the_open_nodes_have_and_the_next_reservation() {
    let f = facts();
    // No reservation: gpu01's 6 free GPUs, for up to the MaxTime.
    let req = Request::of(&spec("gpu", 1, 4, "4h"), &f);
    let s = starts_now(&req, &f, &[], at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &req),
        "up to 6 GPUs for up to 8h (MaxTime) start now on gpu; yours fits"
    );
    // A window on gpu01 at 12:00: 6 GPUs until then.
    let m = resv("maint", "gpu01", at(12, 0), at(14, 0), "MAINT");
    let s = starts_now(&req, &f, std::slice::from_ref(&m), at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &req),
        "up to 6 GPUs for up to 1h59m (until maintenance 12:00) start now on gpu; yours would wait"
    );
    // Two nodes: the second best has 2 free, each node; both end at the window.
    let two = Request::of(&spec("gpu", 2, 4, "1h"), &f);
    let s = starts_now(&two, &f, std::slice::from_ref(&m), at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &two),
        "2 nodes of up to 2 GPUs each for up to 1h59m (until maintenance 12:00) start now on gpu; yours fits"
    );
    // More CPUs than gpu02 has idle: only gpu01, one node.
    let mut big = spec("gpu", 2, 2, "1h");
    big.cpus_per_task = 8;
    let big = Request::of(&big, &f);
    let s = starts_now(&big, &f, &[], at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &big),
        "nothing of this size starts now on gpu: 2 nodes open, fewer than 2 with 8 CPUs free"
    );
}

#[test]
fn nothing_starts_on_busy_or_reserved_nodes_and_cpu_partitions_count_cpus() {
    let mut f = facts();
    let req = Request::of(&spec("gpu", 1, 1, "1h"), &f);
    let now = resv("maint", "gpu[01-04]", at(9, 0), at(18, 0), "MAINT");
    let s = starts_now(&req, &f, std::slice::from_ref(&now), at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &req),
        "nothing starts now on gpu: its nodes are reserved (maintenance) until 18:00"
    );
    for n in &mut f.nodes {
        if n.partition == "gpu" {
            n.state = "allocated".into();
        }
    }
    let s = starts_now(&req, &f, &[], at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &req),
        "nothing starts now on gpu: all 4 nodes busy or unavailable"
    );
    let cpu = Request::of(&spec("cpu", 1, 0, "5h"), &f);
    let s = starts_now(&cpu, &f, &[], at(10, 0)).unwrap();
    assert_eq!(
        starts_now_text(&s, &cpu),
        "up to 16 CPUs for up to 4h (MaxTime) start now on cpu; yours would wait"
    );
    // Unknown nodes (facts without sinfo --Node): nothing said.
    f.nodes.clear();
    assert_eq!(starts_now(&cpu, &f, &[], at(10, 0)), None);
}

#[test]
fn idle_or_mixed_only_without_flags() {
    for (state, open) in [
        ("idle", true),
        ("mixed", true),
        ("idle~", false),
        ("mixed-", false),
        ("idle*", false),
        ("drained", false),
        ("planned", false),
        ("", false),
    ] {
        let n = NodeShape {
            state: state.into(),
            ..NodeShape::default()
        };
        assert_eq!(n.open(), open, "{state}");
    }
}
