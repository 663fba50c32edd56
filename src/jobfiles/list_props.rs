//! Properties of the listing parser: whatever bytes come back from the cluster it never
//! panics and an error says what was wrong; entries with any name find can print (every
//! byte but NUL), any size and time come back exactly; and a listing cut short (a dropped
//! connection) is refused, never shown as a directory with fewer entries.

use proptest::prelude::*;

use super::*;

/// A name find can print: any bytes but NUL, with the awkward ones more often.
fn name() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(1u8..=255, 1..6),
        Just(b"TOTAL".to_vec()),
        Just(b"\n".to_vec()),
        Just(b" ".to_vec()),
        Just(b"/".to_vec()),
        Just(b"-rf".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        Just("ünï名前".as_bytes().to_vec()),
        Just(b"'\"$(x)`".to_vec()),
        Just(b"\r\n".to_vec()),
    ];
    prop::collection::vec(piece, 1..5).prop_map(|v| v.concat())
}

/// find's `%y%Y`: the entry's type and its target's (`N` broken, `L` a loop, `?` unknown).
fn types() -> impl Strategy<Value = (String, Kind)> {
    prop_oneof![
        Just(("ff".to_string(), Kind::File)),
        Just(("dd".to_string(), Kind::Dir)),
        prop::sample::select(vec!['f', 'd', 'l', 'N', 'L', '?', 'p', 's'])
            .prop_map(|y| (format!("l{y}"), Kind::Link { to_dir: y == 'd' })),
        prop::sample::select(vec!['p', 's', 'b', 'c', 'D', 'U'])
            .prop_map(|t| (format!("{t}{t}"), Kind::Other)),
    ]
}

fn entry() -> impl Strategy<Value = (String, Entry, u32)> {
    (
        types(),
        name(),
        any::<u64>(),
        any::<i64>(),
        0u32..1_000_000_000,
    )
        .prop_map(|((t, kind), name, size, mtime, frac)| {
            (
                t,
                Entry {
                    name,
                    kind,
                    size,
                    mtime,
                },
                frac,
            )
        })
}

/// What LIST_SCRIPT prints for these entries (find's `%T@` has ten decimals), then the
/// count `wc -c` printed (padded on some systems).
fn listing(entries: &[(String, Entry, u32)], total: u64, pad: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for (t, e, frac) in entries {
        v.extend_from_slice(format!("{t}\0{}\0{}.{frac:09}0\0", e.size, e.mtime).as_bytes());
        v.extend_from_slice(&e.name);
        v.push(0);
    }
    v.extend_from_slice(format!("TOTAL\0{}{total}\n", " ".repeat(pad)).as_bytes());
    v
}

fn sorted(entries: &[(String, Entry, u32)]) -> Vec<Entry> {
    let mut l = Listing {
        entries: entries.iter().map(|(_, e, _)| e.clone()).collect(),
        total: 0,
    };
    l.sort();
    l.entries
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_bytes_give_a_listing_or_an_error_saying_what_is_wrong(
        out in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        match parse_listing(&out) {
            Ok(l) => {
                prop_assert!(l.total >= l.entries.len() as u64);
                prop_assert!(l.entries.iter().all(|e| !e.name.is_empty()));
            }
            Err(e) => prop_assert!(!e.0.is_empty()),
        }
    }

    /// The listing's own pieces in any order: NULs, TOTAL, types, numbers too big for
    /// their field, newlines, bytes that are not UTF-8.
    #[test]
    fn listing_soup_gives_a_listing_or_an_error_saying_what_is_wrong(
        pieces in prop::collection::vec(prop::sample::select(vec![
            &b"\0"[..], b"TOTAL", b"ff", b"lN", b"dd", b"zz", b"7", b"1.5", b"-3", b"\n", b"\r\n",
            b"\xff", b"a/b", b"18446744073709551616", b"9223372036854775808.0", b" ",
        ]), 0..40),
    ) {
        if let Err(e) = parse_listing(&pieces.concat()) {
            prop_assert!(!e.0.is_empty());
        }
    }

    #[test]
    fn entries_come_back_byte_for_byte(
        entries in prop::collection::vec(entry(), 0..12),
        beyond in prop::option::of(0u64..1_000_000),
        pad in 0usize..8,
    ) {
        let total = entries.len() as u64 + beyond.unwrap_or(0);
        let l = parse_listing(&listing(&entries, total, pad))
            .map_err(|e| TestCaseError::fail(e.0))?;
        prop_assert_eq!(&l.entries, &sorted(&entries));
        prop_assert_eq!(l.total, total);
        prop_assert_eq!(l.more(), beyond.unwrap_or(0));
    }

    /// A cut before the count is an error; a cut inside the count (the last line) at
    /// worst misreads how many more there are, never which entries there are.
    #[test]
    fn a_listing_cut_short_is_refused(
        entries in prop::collection::vec(entry(), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let full = listing(&entries, entries.len() as u64, 0);
        let at = cut.index(full.len());
        let count_at = full.len() - format!("{}\n", entries.len()).len();
        match parse_listing(&full[..at]) {
            Ok(l) => {
                prop_assert!(at > count_at, "cut at {} of {:?} gave {:?}", at, full, l);
                prop_assert_eq!(&l.entries, &sorted(&entries));
            }
            Err(e) => prop_assert!(!e.0.is_empty()),
        }
    }
}
