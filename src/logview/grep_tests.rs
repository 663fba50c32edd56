use proptest::prelude::*;

use super::*;

/// The paths given to the captures in `tests/fixtures/slurm/26.05/grep-*.bin` (the 26.05 dev
/// cluster's login node, GNU grep 3.12): a name with `:`, one with a space, a binary file,
/// a missing file, a directory, a link to a root-owned file, a root-owned file.
fn fixture_paths() -> Vec<String> {
    [
        "/tmp/sdgrep-fx/task:0.out",
        "/tmp/sdgrep-fx/task 7.err",
        "/tmp/sdgrep-fx/bin.out",
        "/tmp/sdgrep-fx/none.out",
        "/tmp/sdgrep-fx",
        "/tmp/sdgrep-fx/link.out",
        "/etc/shadow",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_fixed_string_over_real_files_lists_each_line_with_its_file_and_number() {
    let out = include_bytes!("../../tests/fixtures/slurm/26.05/grep-common-26.05.bin");
    let got = parse_grep(out, &fixture_paths()[..4]).unwrap();
    assert_eq!(
        got.hits,
        vec![
            Hit {
                file: 0,
                line: 1,
                text: "step 1 common".into()
            },
            Hit {
                file: 0,
                line: 3,
                text: "\\x1b[1mcommon bold\\x1b[0m".into()
            },
        ],
        "a `:` in the path does not cut the record; the binary file is skipped; escapes shown"
    );
    assert_eq!(got.skipped, vec![(3, Skipped::Missing)]);
    assert_eq!(got.status, Some(0));
    assert!(!got.cut);
    assert_eq!(got.odd, 0);
}

#[test]
fn the_error_preset_finds_the_traceback_and_skips_files_that_are_not_the_users() {
    let out = include_bytes!("../../tests/fixtures/slurm/26.05/grep-errors-26.05.bin");
    let got = parse_grep(out, &fixture_paths()).unwrap();
    let lines: Vec<(usize, u64, &str)> = got
        .hits
        .iter()
        .map(|h| (h.file, h.line, h.text.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (1, 1, "Traceback (most recent call last):"),
            (1, 3, "RuntimeError: boom"),
        ]
    );
    assert_eq!(
        got.skipped,
        vec![
            (3, Skipped::Missing),
            (4, Skipped::NotRegular),
            (5, Skipped::NotYours),
            (6, Skipped::NotYours),
        ],
        "a link to root's file and root's file are not read"
    );
    assert_eq!(got.status, Some(0));
}

#[test]
fn output_cut_at_the_limit_says_so_and_drops_the_partial_line() {
    let paths = vec!["/a".to_string(), "/b".to_string()];
    let out = b"SDGREP1 begin\nSDGREP1 grep\n/a\x001:one\n/b\x002:tw";
    let got = parse_grep(out, &paths).unwrap();
    assert!(got.cut);
    assert_eq!(got.status, None);
    assert_eq!(got.hits.len(), 1);
    assert_eq!(got.hits[0].text, "one");
}

#[test]
fn a_shells_chatter_before_the_start_is_skipped_and_no_start_is_an_error() {
    let paths = vec!["/a".to_string()];
    let out = b"Welcome to login1\nSDGREP1 begin\nSDGREP1 grep\n\x00SDGREP1 end 1\n";
    let got = parse_grep(out, &paths).unwrap();
    assert!(got.hits.is_empty());
    assert_eq!(got.status, Some(1), "no match is not an error");
    assert!(parse_grep(b"sh: grep: not found\n", &paths).is_err());
}

#[test]
fn a_line_forging_the_trailer_in_the_middle_is_only_a_line() {
    let paths = vec!["/a".to_string()];
    let out = b"SDGREP1 begin\nSDGREP1 grep\n/a\x001:SDGREP1 end 0\n/a\x002:x\n\x00SDGREP1 end 0\n";
    let got = parse_grep(out, &paths).unwrap();
    assert_eq!(got.hits.len(), 2);
    assert_eq!(got.hits[0].text, "SDGREP1 end 0");
}

#[test]
fn the_pattern_and_paths_are_arguments_of_their_own() {
    let paths = vec!["-rf /".to_string(), "$(reboot)".to_string()];
    let argv = grep_argv(Syntax::Fixed, "-e; rm *", &paths, Limits::default());
    assert_eq!(argv[..4], ["sh", "-c", GREP_SCRIPT, "sh"]);
    assert_eq!(argv[4..9], ["F", "-e; rm *", "20", "262144", "30"]);
    assert_eq!(argv[9..], paths[..]);
    assert!(GREP_SCRIPT.contains(r#"-e "$pat" -- "$@""#));
}

#[test]
fn the_script_runs_here_on_hostile_names_and_patterns() {
    let dir = std::env::temp_dir().join(format!("sdgrep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a:1\nx.out");
    std::fs::write(&a, "ok -e line\nnope\n$(touch pwned) -e\n").unwrap();
    let paths = vec![a.to_string_lossy().into_owned(), "--help".to_string()];
    let run = |syntax, pat: &str| {
        let argv = grep_argv(syntax, pat, &paths, Limits::default());
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(&dir)
            .output()
            .unwrap();
        parse_grep(&out.stdout, &paths).unwrap()
    };
    let got = run(Syntax::Fixed, "-e");
    let lines: Vec<u64> = got.hits.iter().map(|h| h.line).collect();
    assert_eq!(lines, vec![1, 3]);
    assert_eq!(got.skipped, vec![(1, Skipped::Missing)]);
    assert!(!dir.join("pwned").exists());
    let got = run(Syntax::Regex, "^(ok|nope)$|^no");
    assert_eq!(got.hits.len(), 1);
    assert_eq!(got.hits[0].line, 2);
    let got = run(Syntax::RegexNoCase, "OK -E");
    assert_eq!(got.hits.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #[test]
    fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let paths = vec!["/a".to_string(), "/b:c".to_string()];
        let _ = parse_grep(&bytes, &paths);
        let mut framed = b"SDGREP1 begin\nSDGREP1 missing 9\nSDGREP1 grep\n".to_vec();
        framed.extend_from_slice(&bytes);
        let got = parse_grep(&framed, &paths).unwrap();
        prop_assert!(got.hits.iter().all(|h| h.file < 2));
        prop_assert!(got.hits.iter().all(|h| !h.text.chars().any(char::is_control)));
    }

    #[test]
    fn records_written_come_back(lines in prop::collection::vec(("[a-z :]{0,20}", 1u64..10_000), 0..20)) {
        let paths = vec!["/x/a:b".to_string()];
        let mut out = b"SDGREP1 begin\nSDGREP1 grep\n".to_vec();
        for (t, n) in &lines {
            out.extend_from_slice(format!("/x/a:b\0{n}:{t}\n").as_bytes());
        }
        out.extend_from_slice(b"\0SDGREP1 end 0\n");
        let got = parse_grep(&out, &paths).unwrap();
        prop_assert_eq!(got.hits.len(), lines.len());
        for (h, (t, n)) in got.hits.iter().zip(&lines) {
            prop_assert_eq!(&h.text, t);
            prop_assert_eq!(h.line, *n);
        }
        prop_assert!(!got.cut);
    }
}
