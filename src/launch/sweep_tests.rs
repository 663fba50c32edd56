use super::*;

fn run(pairs: &[(&str, &str)]) -> Run {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_grid_is_every_combination_the_last_name_fastest() {
    let s = Sweep::parse("LR=1e-3,3e-4 BATCH=32,64,128 %3").unwrap();
    assert_eq!(s.throttle, 3);
    let p = s.points().unwrap();
    assert_eq!(p.len(), 6);
    assert_eq!(p[0], run(&[("LR", "1e-3"), ("BATCH", "32")]));
    assert_eq!(p[2], run(&[("LR", "1e-3"), ("BATCH", "128")]));
    assert_eq!(p[3], run(&[("LR", "3e-4"), ("BATCH", "32")]));
    assert_eq!(p[5], run(&[("LR", "3e-4"), ("BATCH", "128")]));
}

#[test]
fn runs_are_separated_by_semicolons_and_quoted_values_keep_commas() {
    let s = Sweep::parse(r#"LR=1e-3 NOTE="a, b; c"; LR=3e-4 NOTE='x y'"#).unwrap();
    let p = s.points().unwrap();
    assert_eq!(
        p,
        vec![
            run(&[("LR", "1e-3"), ("NOTE", "a, b; c")]),
            run(&[("LR", "3e-4"), ("NOTE", "x y")])
        ]
    );
}

#[test]
fn the_text_form_reads_back_the_same_sweep() {
    for text in [
        "LR=1e-3,3e-4 BATCH=32 %2",
        r#"NOTE="a,b",c X=1"#,
        r#"LR=1 NOTE="say \"hi\""; LR=2 NOTE="%5""#,
        "A=1; A=2 %4",
    ] {
        let s = Sweep::parse(text).unwrap();
        assert_eq!(Sweep::parse(&s.to_string()).unwrap(), s, "{text} -> {s}");
    }
}

#[test]
fn mistakes_are_named() {
    let err = |t: &str| Sweep::parse(t).unwrap_err();
    assert!(err("LR").contains("not NAME=value"), "{}", err("LR"));
    assert!(err("1X=2").contains("environment variable name"));
    assert!(err("SLURM_JOB_ID=3").contains("would replace"));
    assert!(err("PATH=/x").contains("would replace"));
    assert!(err("throttle=3").contains("sweep setting"));
    assert!(err("A=1 A=2").contains("given twice"));
    assert!(err("A=1; B=2").contains("every run sets the same names"));
    assert!(err("A=1,2; A=3").contains("one value per name"));
    assert!(err("A=\"x").contains("not closed"));
    assert!(err("A=1 %0").contains("throttle"));
    assert!(err("A=1,,2").contains("empty value"));
    assert!(err("A=\"a\tb\"").contains("control character"));
    let big = format!(
        "A={} B={}",
        vec!["x"; 200].join(","),
        vec!["y"; 200].join(",")
    );
    assert!(err(&big).contains("more than"));
}

#[test]
fn the_array_covers_every_run_or_the_indices_given() {
    let n = 12;
    assert_eq!(array_for(n, None, 3).unwrap(), "0-11%3");
    assert_eq!(array_for(n, None, 0).unwrap(), "0-11");
    let failed = ArraySpec::parse("4,9").unwrap();
    assert_eq!(array_for(n, Some(&failed), 3).unwrap(), "4,9%3");
    let own = ArraySpec::parse("0-3%1").unwrap();
    assert_eq!(array_for(n, Some(&own), 3).unwrap(), "0-3%1");
    let beyond = ArraySpec::parse("10-12").unwrap();
    let e = array_for(n, Some(&beyond), 3).unwrap_err();
    assert!(e.contains("12 runs") && e.contains("0-11"), "{e}");
}

#[test]
fn a_template_table_and_its_json_copy_read_as_the_same_sweep() {
    let t: toml::Table = toml::from_str(
        "[sweep]\nLR = [1e-3, 0.0003]\nBATCH = [32, 64]\nDEBUG = true\nthrottle = 2\n",
    )
    .unwrap();
    let s: Sweep = t["sweep"].clone().try_into().unwrap();
    assert_eq!(s.throttle, 2);
    assert_eq!(s.len(), 4);
    // A TOML table keeps no order: the names come sorted.
    assert_eq!(
        s.axes[0],
        (
            "BATCH".to_string(),
            vec!["32".to_string(), "64".to_string()]
        )
    );
    assert_eq!(s.axes[1], ("DEBUG".to_string(), vec!["true".to_string()]));
    assert_eq!(
        s.axes[2],
        (
            "LR".to_string(),
            vec!["0.001".to_string(), "0.0003".to_string()]
        )
    );
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<Sweep>(&json).unwrap(), s);
    let runs: Sweep = toml::from_str::<toml::Table>("runs = [\"A=1 B=x\", \"A=2 B='y z'\"]\n")
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(runs.points().unwrap()[1], run(&[("A", "2"), ("B", "y z")]));
    let json = serde_json::to_string(&runs).unwrap();
    assert_eq!(serde_json::from_str::<Sweep>(&json).unwrap(), runs);
}

#[test]
fn a_file_of_runs_names_its_bad_line() {
    let runs = Sweep::runs_from_lines("# lr sweep\nLR=1 B=2\n\nLR=3 B=4\n").unwrap();
    assert_eq!(runs.len(), 2);
    let e = Sweep::runs_from_lines("LR=1\nLR\n").unwrap_err();
    assert!(e.starts_with("line 2:"), "{e}");
    assert!(Sweep::runs_from_lines("# nothing\n").is_err());
}

#[test]
fn each_task_gets_its_own_quoted_values_and_a_stray_index_stops() {
    let s = Sweep::parse(r#"LR=1e-3,"$(touch x)""#).unwrap();
    let case = script_case(&s.points().unwrap());
    assert!(
        case.contains("  0) export LR=1e-3; export SLURMDASH_SWEEP_RUN=LR=1e-3 ;;"),
        "{case}"
    );
    assert!(case.contains("export LR='$(touch x)'"), "{case}");
    assert!(case.contains("*) echo"), "{case}");
}

#[test]
fn sh_runs_each_index_with_its_values_and_refuses_others() {
    let s = Sweep::parse(r#"LR=1e-3,3e-4 NOTE="it's; a, b" %2"#).unwrap();
    let case = script_case(&s.points().unwrap());
    for (i, want) in [(0, "1e-3|it's; a, b"), (1, "3e-4|it's; a, b")] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{case}\nprintf '%s|%s' \"$LR\" \"$NOTE\""))
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), want);
        assert!(String::from_utf8_lossy(&out.stderr).contains("sweep run"));
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{case}\necho ran"))
        .env("SLURM_ARRAY_TASK_ID", "7")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(12));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran"));
}

proptest::proptest! {
    #[test]
    fn any_text_is_a_sweep_or_a_message(t in ".{0,80}") {
        let _ = Sweep::parse(&t);
        let _ = Sweep::runs_from_lines(&t);
    }
}
