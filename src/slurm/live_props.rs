//! Properties of the live-use parsers: whatever sstat, nvidia-smi or the sample script
//! print (decoded lossily), they never panic, figures are finite, and an error names the
//! command and the line; and values Slurm and nvidia-smi print in their documented formats
//! come back exactly.

use proptest::prelude::*;

use super::*;

/// Text with the formats' own separators and numbers too big for their fields.
fn soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "|",
        ",",
        ", ",
        "=",
        ":",
        "-",
        ".",
        "\n",
        "\r\n",
        " ",
        "K",
        "M",
        "P",
        "%",
        " MiB",
        "[N/A]",
        "0",
        "7",
        "59",
        "1e308",
        "1e30",
        "-1",
        "NaN",
        "inf",
        "18446744073709551616",
        "213503982334-14:25:51",
        "cpu=",
        "mem=",
        "fs/disk=",
        "index,",
        "é",
        "\u{1}",
        "\u{feff}",
    ]);
    prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
}

/// Lines of nine `|`-separated fields of number-like pieces, as sstat's would be.
fn sstat_soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "",
        "0",
        "4",
        "1e308",
        "99999999999999999999",
        "NaN",
        "inf",
        "-1",
        "1-",
        "::",
        "00:00:07",
        "1-02:03:04",
        "1e308-00:00:01",
        "1e308:1e308:1e308",
        "NaN-00:00:01",
        "02:14.500",
        "K",
        "1P",
        "1e30K",
        "cpu=",
        "mem=",
        "fs/disk=",
        ",",
        "=",
        "gpu[01-02]",
        "é",
    ]);
    let field = prop_oneof![
        3 => piece.clone().prop_map(str::to_string),
        1 => prop::collection::vec(piece, 0..4).prop_map(|v| v.concat()),
    ];
    let line = prop::collection::vec(field, 8..11).prop_map(|f| f.join("|"));
    prop::collection::vec(line, 0..6).prop_map(|l| l.join("\n"))
}

fn check_error(e: &ParseError, command: &str, text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.command, command);
    prop_assert!(e.line >= 1 && e.line <= text.lines().count(), "{:?}", e);
    prop_assert!(!e.what.is_empty());
    Ok(())
}

fn check_steps(steps: &[StepUsage]) -> Result<(), TestCaseError> {
    for s in steps {
        prop_assert!(
            s.cpu_secs.is_finite() && s.cpu_secs >= 0.0,
            "CPU time {} of {:?}",
            s.cpu_secs,
            s
        );
    }
    Ok(())
}

/// A CPU time as Slurm prints it (`MM:SS.mmm` under an hour when it has milliseconds,
/// `HH:MM:SS`, `D-HH:MM:SS`) and its seconds.
fn cpu_time() -> impl Strategy<Value = (String, f64)> {
    prop_oneof![
        (0u64..3600, 0u64..1000).prop_map(|(s, ms)| (
            format!("{:02}:{:02}.{ms:03}", s / 60, s % 60),
            s as f64 + ms as f64 / 1000.0
        )),
        (0u64..86_400 * 100_000).prop_map(|s| {
            let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
            let t = if d > 0 {
                format!("{d}-{h:02}:{m:02}:{sec:02}")
            } else {
                format!("{h:02}:{m:02}:{sec:02}")
            };
            (t, s as f64)
        }),
    ]
}

/// A size as Slurm prints it, with a unit or in `plain` units, and its bytes.
fn size(plain: u64) -> impl Strategy<Value = (String, u64)> {
    prop_oneof![
        (0u64..1 << 32).prop_map(|k| (format!("{k}K"), k << 10)),
        (0u64..1 << 22).prop_map(|m| (format!("{m}M"), m << 20)),
        (0u64..1 << 12).prop_map(|g| (format!("{g}G"), g << 30)),
        (0u64..1 << 32).prop_map(move |n| (n.to_string(), n * plain)),
    ]
}

#[derive(Debug, Clone)]
struct Step {
    line: String,
    want: StepUsage,
}

/// One step as `sstat --parsable2` prints it: TRES lists with the figures (in any order,
/// beside others), or, for a step whose TRES are empty, only the per-task averages.
fn step() -> impl Strategy<Value = Step> {
    let id = (
        1u64..100_000_000,
        prop_oneof![
            Just(".batch".to_string()),
            Just(".extern".to_string()),
            (0u32..1000).prop_map(|n| format!(".{n}")),
            (0u32..4, 0u32..10).prop_map(|(h, n)| format!("+{h}.{n}")),
        ],
    )
        .prop_map(|(j, s)| format!("{j}{s}"));
    let nodes = "[a-z][a-z0-9-]{0,6}(\\[[0-9]{2}-[0-9]{2}(,[0-9]{2})?\\])?(,[a-z][a-z0-9]{0,4})?";
    let tres = (
        cpu_time(),
        size(1),
        prop::option::of(0u64..1 << 50),
        prop::option::of(0u64..1 << 50),
        any::<prop::sample::Index>(),
    );
    (
        id,
        0u32..10_000,
        nodes,
        cpu_time(),
        size(1024),
        size(1024),
        prop::option::of(tres),
    )
        .prop_map(|(step, tasks, nodes, ave_cpu, max_rss, ave_rss, tres)| {
            let (tot, out, cpu_secs, rss_now, read_bytes, write_bytes) = match tres {
                Some(((cpu, secs), (mem, bytes), read, write, at)) => {
                    let mut tot = vec![
                        format!("cpu={cpu}"),
                        "energy=0".into(),
                        format!("mem={mem}"),
                        "pages=3".into(),
                        "vmem=757692K".into(),
                    ];
                    if let Some(r) = read {
                        tot.push(format!("fs/disk={r}"));
                    }
                    let n = at.index(tot.len());
                    tot.rotate_left(n);
                    let out = match write {
                        Some(w) => format!("energy=0,fs/disk={w}"),
                        None => "energy=0".into(),
                    };
                    (tot.join(","), out, secs, bytes, read, write)
                }
                // Without TRES figures: the average per task times the tasks.
                None => (
                    String::new(),
                    String::new(),
                    ave_cpu.1 * f64::from(tasks),
                    ave_rss.1 * u64::from(tasks),
                    None,
                    None,
                ),
            };
            let line = [
                step.as_str(),
                &tasks.to_string(),
                &nodes,
                &ave_cpu.0,
                &max_rss.0,
                &ave_rss.0,
                &tot,
                &tot,
                &out,
            ]
            .join("|");
            Step {
                line,
                want: StepUsage {
                    step,
                    tasks,
                    nodes,
                    cpu_secs,
                    rss_now,
                    rss_peak: max_rss.1,
                    read_bytes,
                    write_bytes,
                },
            }
        })
}

/// A GPU name nvidia-smi could print: spaces inside, quotes, unicode. Not a comma: its CSV
/// does not quote fields, so a comma in a name cannot be told from a separator.
fn gpu_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9ü名\"'()_.-]([A-Za-z0-9ü名\"' ()_.-]{0,24}[A-Za-z0-9ü名\"'()_.-])?"
}

/// A value nvidia-smi could not read.
fn na() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "[N/A]",
        "[Not Supported]",
        "[Unknown Error]",
        "[Insufficient Permissions]",
    ])
}

fn gpu() -> impl Strategy<Value = (GpuUsage, [&'static str; 3])> {
    (
        any::<u32>(),
        "GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        gpu_name(),
        prop::option::of(0u32..=100),
        prop::option::of(0u64..1 << 40),
        prop::option::of(0u64..1 << 40),
        (na(), na(), na()),
    )
        .prop_map(|(index, uuid, name, util, used, total, (a, b, c))| {
            (
                GpuUsage {
                    index,
                    uuid,
                    name,
                    util,
                    mem_used_mib: used,
                    mem_total_mib: total,
                },
                [a, b, c],
            )
        })
}

fn csv(gpus: &[(GpuUsage, [&'static str; 3])], header: bool, units: bool, crlf: bool) -> String {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    if header {
        out.push_str(if units {
            "index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
        } else {
            "index, uuid, name, utilization.gpu, memory.used, memory.total"
        });
        out.push_str(eol);
    }
    let with = |v: Option<String>, unit: &str, na: &str| match v {
        Some(v) if units => format!("{v} {unit}"),
        Some(v) => v,
        None => na.to_string(),
    };
    for (g, [a, b, c]) in gpus {
        let row = [
            g.index.to_string(),
            g.uuid.clone(),
            g.name.clone(),
            with(g.util.map(|u| u.to_string()), "%", a),
            with(g.mem_used_mib.map(|m| m.to_string()), "MiB", b),
            with(g.mem_total_mib.map(|m| m.to_string()), "MiB", c),
        ];
        out.push_str(&row.join(", "));
        out.push_str(eol);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sstat_output_gives_finite_steps_or_an_error_naming_the_line(
        text in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            soup(),
            sstat_soup(),
        ],
    ) {
        match parse_sstat(&text) {
            Ok(steps) => check_steps(&steps)?,
            Err(e) => check_error(&e, "sstat", &text)?,
        }
    }

    #[test]
    fn sstat_steps_come_back_as_printed(
        steps in prop::collection::vec(step(), 0..6),
        crlf in any::<bool>(),
        blank_last in any::<bool>(),
    ) {
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text: String = steps.iter().map(|s| format!("{}{eol}", s.line)).collect();
        if blank_last {
            text.push_str(eol);
        }
        let got = parse_sstat(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(got.len(), steps.len());
        for (g, s) in got.iter().zip(&steps) {
            let w = &s.want;
            prop_assert!((g.cpu_secs - w.cpu_secs).abs() < 1e-6, "{:?} from {:?}", g, s.line);
            prop_assert_eq!(g, &StepUsage { cpu_secs: g.cpu_secs, ..w.clone() }, "{:?}", s.line);
        }
    }

    #[test]
    fn nvidia_smi_output_gives_gpus_or_an_error_naming_the_line(
        text in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            soup(),
        ],
    ) {
        match parse_nvidia_smi(&text) {
            Ok(gpus) => prop_assert!(gpus.iter().all(|g| g.util.is_none_or(|u| u <= 100))),
            Err(e) => check_error(&e, "nvidia-smi", &text)?,
        }
    }

    #[test]
    fn nvidia_smi_gpus_come_back_as_printed(
        gpus in prop::collection::vec(gpu(), 0..8),
        header in any::<bool>(),
        units in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let text = csv(&gpus, header, units, crlf);
        let got = parse_nvidia_smi(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want: Vec<GpuUsage> = gpus.into_iter().map(|(g, _)| g).collect();
        prop_assert_eq!(got, want, "{}", text);
    }

    /// The sample script's framing with any bodies: sections cut off, unclosed, repeated,
    /// markers inside bodies.
    #[test]
    fn a_sample_of_any_output_never_panics(
        parts in prop::collection::vec(prop_oneof![
            Just("MARK sstat 0 1795525660.12\n".to_string()),
            Just("MARK sstat 1 NaN\n".to_string()),
            Just("MARK gpu 0 gpu01\n".to_string()),
            Just("MARK gpu 124 n 1\n".to_string()),
            Just("MARK gpu\n".to_string()),
            Just("MARK stderr\n".to_string()),
            Just("MARK end\n".to_string()),
            Just("MARK error mktemp\n".to_string()),
            Just("MARK ".to_string()),
            soup(),
            sstat_soup(),
        ], 0..12),
    ) {
        let text = parts.concat();
        match parse_sample(&text, "MARK") {
            Ok(s) => {
                if let Ok(steps) = &s.steps {
                    check_steps(steps)?;
                }
                prop_assert!(s.clock.is_none_or(f64::is_finite));
            }
            Err(e) => prop_assert!(!e.what.is_empty()),
        }
    }
}
