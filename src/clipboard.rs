//! Copying to the clipboard of the terminal the user sits at, through OSC 52: the escape
//! travels with the screen's bytes, so it works over SSH and inside tmux, with nothing to
//! install. Pure: the bytes are built here, the dashboard writes them.

/// The most text one copy carries (terminals cap OSC 52 near 100 kB of base64).
pub const MAX_BYTES: usize = 64 * 1024;

/// The escape that puts `text` on the clipboard. In tmux, the plain sequence is what tmux
/// takes when `set-clipboard` is on (it then sets the outer terminal's clipboard itself);
/// the same sequence wrapped for tmux's passthrough follows, for `allow-passthrough on`.
/// Text past [`MAX_BYTES`] is cut at a character boundary.
pub fn osc52(text: &str, in_tmux: bool) -> String {
    let mut end = text.len().min(MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let seq = format!(
        "\x1b]52;c;{}\x07",
        crate::remote::frame::base64(&text.as_bytes()[..end])
    );
    if in_tmux {
        format!("{seq}{}", crate::notify::tmux_wrap(&seq))
    } else {
        seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escape_and_its_tmux_form() {
        assert_eq!(osc52("1234", false), "\x1b]52;c;MTIzNA==\x07");
        let t = osc52("1234", true);
        assert!(t.starts_with("\x1b]52;c;MTIzNA==\x07\x1bPtmux;\x1b\x1b]52;c;MTIzNA==\x07"));
        assert!(t.ends_with("\x1b\\"));
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        let s = "é".repeat(MAX_BYTES);
        let e = osc52(&s, false);
        // 64 KiB of 2-byte characters: exactly MAX_BYTES bytes encoded.
        assert_eq!(e.len(), 7 + MAX_BYTES.div_ceil(3) * 4 + 1);
    }
}
