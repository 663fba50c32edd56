//! Properties of the `scontrol show assoc_mgr` parser: whatever slurmctld (or a login
//! shell) prints, it and the sentences built from it never panic and an error names the
//! command and the line; and associations, QOS and their limits printed in slurmctld's
//! layout come back exactly, names with unicode and values with `=`, `/`, `(`, `,` included.

use proptest::prelude::*;

use super::*;

fn fixture(v: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{v}/{name}.out",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Parses, picks the limits of the capture's job and words them, as the detail pane does.
fn whole_path(out: &str, job: &Request, reason: &str) -> Result<AssocMgr, ParseError> {
    let m = parse_assoc_mgr(out)?;
    for (user, account, qos) in [
        ("sduser", "sdcapture", "sdcapture"),
        ("sduser", "research", "normal"),
    ] {
        let sel = select(&m, user, account, "short", qos);
        let h = headroom(&sel, job);
        if let Some(i) = blocking(reason, &h) {
            assert!(i < h.len());
        }
    }
    Ok(m)
}

fn request() -> impl Strategy<Value = Request> {
    // A job's CPUs, GPUs and nodes are u32 in Slurm; minutes from a u32 of seconds.
    (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(c, g, n, m)| Request {
        cpus: c.into(),
        gpus: g.into(),
        nodes: n.into(),
        minutes: u64::from(m) / 60,
    })
}

fn reason() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "QOSMaxGRESPerUser",
        "QOSMaxJobsPerUserLimit",
        "QOSGrpCpuLimit",
        "AssocGrpGRES",
        "AssocMaxJobsLimit",
        "QOSMaxWallDurationPerJobLimit",
        "QOSMaxSubmitJobPerAccountLimit",
        "Priority",
    ])
}

fn check_error(e: &ParseError, out: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.command, "scontrol show assoc_mgr");
    prop_assert!(e.line <= out.lines().count(), "{:?}", e);
    prop_assert!(!e.what.is_empty());
    Ok(())
}

/// A count as slurmctld prints it: `N` (none), a number, a number too big for any field,
/// or minutes with decimals.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("N".to_string()),
        4 => any::<u32>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => Just(u64::MAX.to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just("1e300".to_string()),
        1 => Just("NaN".to_string()),
        1 => Just("-3".to_string()),
        1 => (0u32..100_000, 0u32..100).prop_map(|(a, b)| format!("{a}.{b:02}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_text_gives_limits_or_an_error_naming_the_line(
        out in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            "(Current Association Manager state\n|Association Records\n|QOS Records\n|User Records\n|\
              ClusterName=dev |Account=|UserName=|QOS=|Account Limits\n|User Limits\n|No Users\n|\
              MaxJobs=|GrpTRES=|gres/gpu=|\\(|\\)|N|[0-9]{1,25}|=|,| |\n|\r\n|é){0,60}",
        ],
        job in request(),
        reason in reason(),
    ) {
        if let Err(e) = whole_path(&out, &job, reason) {
            check_error(&e, &out)?;
        }
    }

    /// Real output of every version with one of its numbers replaced by another (too big
    /// for its field, not a number), a piece of text put in anywhere (a stray bracket, a
    /// line break, a CR) and cut off anywhere.
    #[test]
    fn real_output_with_odd_bytes_or_cut_off_never_panics(
        which in prop::sample::select(vec![
            ("22.05", "scontrol_assoc_mgr_limits"),
            ("24.11", "scontrol_assoc_mgr_limits"),
            ("26.05", "scontrol_assoc_mgr_limits"),
            ("26.05", "scontrol_assoc_mgr"),
        ]),
        nth in any::<prop::sample::Index>(),
        number in number(),
        at in any::<prop::sample::Index>(),
        insert in prop_oneof![
            number(),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("\n".to_string()),
            Just("\r".to_string()),
            Just("=".to_string()),
            Just("\u{0}".to_string()),
        ],
        cut in any::<prop::sample::Index>(),
        job in request(),
        reason in reason(),
    ) {
        let mut real = fixture(which.0, which.1);
        let digits: Vec<(usize, usize)> = real
            .char_indices()
            .filter(|&(i, c)| c.is_ascii_digit() && !real[..i].ends_with(|p: char| p.is_ascii_digit()))
            .map(|(i, _)| (i, i + real[i..].find(|c: char| !c.is_ascii_digit()).unwrap_or(real.len() - i)))
            .collect();
        if !digits.is_empty() {
            let (a, b) = digits[nth.index(digits.len())];
            real.replace_range(a..b, &number);
        }
        let mut chars: Vec<char> = real.chars().collect();
        let i = at.index(chars.len() + 1);
        chars.splice(i..i, insert.chars());
        let s: String = chars.into_iter().collect();
        for out in [s.as_str(), &s[..s.char_indices().nth(cut.index(s.chars().count())).map_or(0, |(i, _)| i)]] {
            if let Err(e) = whole_path(out, &job, reason) {
                check_error(&e, out)?;
            }
        }
    }

    /// `N`, `4`, `4(2)`, `N(0.50)`: the limit and slurmctld's count come back; what is
    /// not a count is not read as one.
    #[test]
    fn tallies_come_back_as_printed(
        max in prop::option::of(any::<u64>()),
        used in prop::option::of(any::<u64>()),
        minutes in prop::option::of((0u64..1 << 40, 0u32..100)),
        garbage in prop::sample::select(vec!["NaN", "inf", "-1", "1e30", "18446744073709551616", "x", ""]),
    ) {
        let m = max.map_or("N".to_string(), |m| m.to_string());
        let text = match (used, minutes) {
            (_, Some((whole, hundredths))) => format!("{m}({whole}.{hundredths:02})"),
            (Some(u), None) => format!("{m}({u})"),
            (None, None) => m.clone(),
        };
        let want_used = match (used, minutes) {
            // GrpWall's minutes are rounded to whole ones.
            (_, Some((whole, h))) => Some(whole + u64::from(h >= 50)),
            (u, None) => u,
        };
        prop_assert_eq!(tally(&text), Some(Tally { max, used: want_used }), "{}", text);
        let list = format!("cpu={text},gres/gpu:a100={text},fs/disk={m}");
        let got = tres_tallies(&list);
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        prop_assert_eq!(keys, ["cpu", "gres/gpu:a100", "fs/disk"]);
        prop_assert_eq!(tally(garbage), None, "{:?}", garbage);
        prop_assert_eq!(tally(&format!("{m}({garbage})")), None);
        prop_assert_eq!(tally(&format!("{garbage}(1)")), None);
    }
}

/// Names slurmctld allows for accounts, users and QOS: no white space, `=`, `(`, `)` or `,`
/// (its output could not be read otherwise); unicode and `.`, `-`, `_` are fine.
fn name() -> impl Strategy<Value = String> {
    "[a-zé名][a-z0-9_.é名-]{0,10}"
}

/// Values slurmctld prints: tallies, TRES lists of tallies, paths, `(null)`, empty ones.
fn value() -> impl Strategy<Value = String> {
    let tally = || {
        (number(), prop::option::of(number())).prop_map(|(m, u)| match u {
            Some(u) => format!("{m}({u})"),
            None => m,
        })
    };
    let tres_key = prop::sample::select(vec![
        "cpu",
        "mem",
        "node",
        "billing",
        "fs/disk",
        "gres/gpu",
        "gres/gpu:a100",
        "license/x",
    ]);
    prop_oneof![
        tally(),
        prop::collection::vec((tres_key, tally()), 1..4).prop_map(|v| {
            v.iter()
                .map(|(k, t)| format!("{k}={t}"))
                .collect::<Vec<_>>()
                .join(",")
        }),
        Just(String::new()),
        Just("(null)".to_string()),
        Just("/sdcapture/0-sduser/".to_string()),
        Just("1/0.01/103/0.00".to_string()),
        Just("root(1)".to_string()),
    ]
}

/// The fields of one record (`Key=value` pairs) and how many slurmctld puts on each line.
#[derive(Debug, Clone)]
struct Printed {
    pairs: Vec<(String, String)>,
    per_line: Vec<usize>,
}

fn fields() -> impl Strategy<Value = Printed> {
    let key = prop::sample::select(vec![
        "GrpJobs",
        "GrpSubmitJobs",
        "GrpWall",
        "GrpTRES",
        "GrpTRESRunMins",
        "MaxJobs",
        "MaxSubmitJobs",
        "MaxWallPJ",
        "MaxTRESPJ",
        "MaxTRESPN",
        "MaxJobsPU",
        "MaxTRESPU",
        "MaxJobsPA",
        "MaxTRESPA",
        "SharesRaw/Norm/Level/Factor",
        "ParentAccount",
        "Comment",
    ]);
    (
        prop::collection::vec((key.prop_map(str::to_string), value()), 0..8),
        prop::collection::vec(1usize..4, 8),
    )
        .prop_map(|(pairs, per_line)| Printed { pairs, per_line })
}

fn print_fields(out: &mut String, indent: &str, f: &Printed) {
    let mut rest = &f.pairs[..];
    for g in f.per_line.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (line, r) = rest.split_at((*g).min(rest.len()));
        rest = r;
        let kv: Vec<String> = line.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("{indent}{}\n", kv.join(" ")));
    }
}

#[derive(Debug, Clone)]
struct Assoc {
    account: String,
    user: Option<(String, u32)>,
    partition: Option<String>,
    fields: Printed,
}

fn assoc() -> impl Strategy<Value = Assoc> {
    (
        name(),
        prop::option::of((name(), any::<u32>())),
        prop::option::of(name()),
        fields(),
    )
        .prop_map(|(account, user, partition, fields)| Assoc {
            account,
            user,
            partition,
            fields,
        })
}

/// A QOS entry's owner: `name(uid)`, or the uid alone as 22.05 prints users.
#[derive(Debug, Clone)]
enum Who {
    Named(String, Option<u32>),
    Uid(u32),
}

#[derive(Debug, Clone)]
struct Qos {
    name: String,
    id: u32,
    fields: Printed,
    accounts: Vec<(String, Printed)>,
    users: Vec<(Who, Printed)>,
}

fn qos() -> impl Strategy<Value = Qos> {
    let who = prop_oneof![
        (name(), prop::option::of(any::<u32>())).prop_map(|(n, u)| Who::Named(n, u)),
        any::<u32>().prop_map(Who::Uid),
    ];
    (
        name(),
        any::<u32>(),
        fields(),
        prop::collection::vec((name(), fields()), 0..3),
        prop::collection::vec((who, fields()), 0..3),
    )
        .prop_map(|(name, id, fields, accounts, users)| Qos {
            name,
            id,
            fields,
            accounts,
            users,
        })
}

fn print(assocs: &[Assoc], qos: &[Qos], crlf: bool) -> String {
    let mut out = String::from("Current Association Manager state\n\nAssociation Records\n\n");
    for (i, a) in assocs.iter().enumerate() {
        let user = a
            .user
            .as_ref()
            .map_or(String::new(), |(n, uid)| format!("{n}({uid})"));
        out.push_str(&format!(
            "ClusterName=dev Account={} UserName={user} Partition={} Priority=0 ID={i}\n",
            a.account,
            a.partition.as_deref().unwrap_or("")
        ));
        print_fields(&mut out, "    ", &a.fields);
    }
    out.push_str("\nQOS Records\n\n");
    for q in qos {
        out.push_str(&format!("QOS={}({})\n", q.name, q.id));
        print_fields(&mut out, "    ", &q.fields);
        out.push_str("    Account Limits\n");
        if q.accounts.is_empty() {
            out.push_str("        No Accounts\n");
        }
        for (a, f) in &q.accounts {
            out.push_str(&format!("      {a}\n"));
            print_fields(&mut out, "        ", f);
        }
        out.push_str("    User Limits\n");
        if q.users.is_empty() {
            out.push_str("        No Users\n");
        }
        for (w, f) in &q.users {
            match w {
                Who::Named(n, Some(uid)) => out.push_str(&format!("      {n}({uid})\n")),
                Who::Named(n, None) => out.push_str(&format!("      {n}\n")),
                Who::Uid(uid) => out.push_str(&format!("      {uid}\n")),
            }
            print_fields(&mut out, "        ", f);
        }
    }
    out.push_str("\nUser Records\n\nUserName=sduser(1001) DefAccount=research AdminLevel=None\n");
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    out
}

fn want_fields(f: &Printed) -> Fields {
    Fields(f.pairs.clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn associations_and_qos_come_back_as_printed(
        assocs in prop::collection::vec(assoc(), 0..4),
        qos in prop::collection::vec(qos(), 0..3),
        crlf in any::<bool>(),
    ) {
        let out = print(&assocs, &qos, crlf);
        let got = parse_assoc_mgr(&out).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = AssocMgr {
            assocs: assocs
                .iter()
                .map(|a| AssocRec {
                    account: a.account.clone(),
                    user: a.user.as_ref().map(|(n, _)| n.clone()),
                    uid: a.user.as_ref().map(|(_, u)| *u),
                    partition: a.partition.clone(),
                    fields: want_fields(&a.fields),
                })
                .collect(),
            qos: qos
                .iter()
                .map(|q| QosRec {
                    name: q.name.clone(),
                    fields: want_fields(&q.fields),
                    accounts: q
                        .accounts
                        .iter()
                        .map(|(a, f)| QosEntry {
                            name: Some(a.clone()),
                            uid: None,
                            fields: want_fields(f),
                        })
                        .collect(),
                    users: q
                        .users
                        .iter()
                        .map(|(w, f)| {
                            let (name, uid) = match w {
                                Who::Named(n, u) => (Some(n.clone()), *u),
                                Who::Uid(u) => (None, Some(*u)),
                            };
                            QosEntry {
                                name,
                                uid,
                                fields: want_fields(f),
                            }
                        })
                        .collect(),
                })
                .collect(),
        };
        prop_assert_eq!(got, want, "{}", out);
    }
}
