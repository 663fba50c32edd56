//! Slurm host lists as squeue and scontrol print them: `gpu01`, `gpu[01-02]`,
//! `gpu[01-03,07],cpu01`, `n[1-3]`.

/// The most names one list expands to (a list past it is cut there).
pub const MAX_HOSTS: usize = 4096;

/// Every host in `list`, in order. Zero padding is kept (`gpu[08-10]` → gpu08, gpu09,
/// gpu10). A part that does not read as a range list is kept as it was printed.
pub fn expand(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in split_top(list) {
        if out.len() >= MAX_HOSTS {
            break;
        }
        match expand_one(part) {
            Some(names) => out.extend(names.into_iter().take(MAX_HOSTS - out.len())),
            None => out.push(part.to_string()),
        }
    }
    out
}

/// Splits at the commas outside brackets.
fn split_top(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `prefix[ranges]suffix` with one bracket group; None when it is not that.
fn expand_one(part: &str) -> Option<Vec<String>> {
    let Some(open) = part.find('[') else {
        return Some(vec![part.to_string()]);
    };
    let close = open + part[open..].find(']')?;
    let (prefix, body, suffix) = (&part[..open], &part[open + 1..close], &part[close + 1..]);
    if suffix.contains('[') {
        return None;
    }
    let mut names = Vec::new();
    for r in body.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let width = a.len();
        let (lo, hi): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
        if hi < lo {
            return None;
        }
        for n in lo..=hi {
            if names.len() >= MAX_HOSTS {
                return Some(names);
            }
            names.push(format!("{prefix}{n:0width$}{suffix}"));
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn lists_ranges_and_padding() {
        assert_eq!(expand("gpu01"), ["gpu01"]);
        assert_eq!(expand("gpu[01-02]"), ["gpu01", "gpu02"]);
        assert_eq!(
            expand("gpu[08-10,12],cpu01"),
            ["gpu08", "gpu09", "gpu10", "gpu12", "cpu01"]
        );
        assert_eq!(expand("n[1-3]"), ["n1", "n2", "n3"]);
        assert_eq!(expand("rack1-n[7-8]-ib"), ["rack1-n7-ib", "rack1-n8-ib"]);
    }

    #[test]
    fn what_does_not_read_is_kept_and_huge_lists_are_cut() {
        assert_eq!(expand("a[1-2]b[3-4]"), ["a[1-2]b[3-4]"]);
        assert_eq!(expand("x[9-1]"), ["x[9-1]"]);
        assert_eq!(expand("x[oops"), ["x[oops"]);
        assert_eq!(expand(""), Vec::<String>::new());
        assert_eq!(expand("n[0-99999999]").len(), super::MAX_HOSTS);
    }
}
