//! Colours and attributes of captured rows (`capture-pane -e`), turned into
//! what a model reads well: the plain text of each row, and runs over it named
//! the way tmux names styles (`fg=brightred`, `colour200`, `#0a141e`, `bold`,
//! `underscore`), never escape sequences. OSC 8 hyperlinks become a run's
//! `link`. `capture_since` reads its `styles` through here.
//!
//! tmux writes `-e` output as one stream: a row inherits the state the row
//! above ended in (tmux does not reset at a line end), so the whole capture is
//! parsed in one pass. The text of a row equals what the same capture without
//! `-e` gives: the escapes are removed, invalid UTF-8 is decoded the same way
//! ([`decode_lossy`]), and the trailing spaces tmux trims from a plain row are
//! trimmed (with `-e`, tmux 3.4 and later keep spaces that carry a colour).
//! That is what lets a cursor made by a plain read be continued by a styled
//! one: rows are compared by their text alone.

use crate::lines::decode_lossy;

/// A colour as tmux's style syntax spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    /// The 16 ANSI colours: 0–7 (`red`), 8–15 (`brightred`).
    Ansi(u8),
    /// The 256-colour palette: `colour200`.
    Palette(u8),
    /// Direct colour: `#0a141e`.
    Rgb(u8, u8, u8),
}

const ANSI_NAMES: [&str; 8] = [
    "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
];

impl Colour {
    /// tmux's name for the colour (`colour_tostring`).
    pub fn name(&self) -> String {
        match *self {
            Colour::Ansi(n) if n < 8 => ANSI_NAMES[n as usize].to_string(),
            Colour::Ansi(n) => format!("bright{}", ANSI_NAMES[(n & 7) as usize]),
            Colour::Palette(n) => format!("colour{n}"),
            Colour::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        }
    }
}

/// The attributes, in tmux's names, in the order a run lists them.
pub const ATTRIBUTES: [&str; 13] = [
    "bold",
    "dim",
    "italics",
    "underscore",
    "double-underscore",
    "curly-underscore",
    "dotted-underscore",
    "dashed-underscore",
    "blink",
    "reverse",
    "hidden",
    "strikethrough",
    "overline",
];

const BOLD: u16 = 1 << 0;
const DIM: u16 = 1 << 1;
const ITALICS: u16 = 1 << 2;
const UNDERSCORE: u16 = 1 << 3;
/// The four other underscore styles follow `UNDERSCORE` (SGR 4:2 … 4:5).
const UNDERSCORES: u16 = 0b1_1111 << 3;
const BLINK: u16 = 1 << 8;
const REVERSE: u16 = 1 << 9;
const HIDDEN: u16 = 1 << 10;
const STRIKETHROUGH: u16 = 1 << 11;
const OVERLINE: u16 = 1 << 12;

/// What a run of cells looks like; the default is how plain text looks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<Colour>,
    pub bg: Option<Colour>,
    attrs: u16,
    /// The target of an OSC 8 hyperlink (tmux 3.4 and later write them).
    pub link: Option<String>,
}

impl Style {
    /// The attributes set, in [`ATTRIBUTES`] order.
    pub fn attributes(&self) -> Vec<&'static str> {
        ATTRIBUTES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.attrs & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    fn is_plain(&self) -> bool {
        *self == Style::default()
    }

    /// Applies one SGR sequence's parameters (`1;38;5;200`, `4:3`, empty).
    fn apply_sgr(&mut self, params: &[u8]) {
        let params: Vec<&[u8]> = params.split(|b| *b == b';').collect();
        let mut i = 0;
        while i < params.len() {
            let sub: Vec<Option<u16>> = params[i].split(|b| *b == b':').map(number).collect();
            let code = sub[0].unwrap_or(0);
            match code {
                0 => {
                    let link = self.link.take();
                    *self = Style {
                        link,
                        ..Style::default()
                    };
                }
                1 => self.attrs |= BOLD,
                2 => self.attrs |= DIM,
                3 => self.attrs |= ITALICS,
                4 => {
                    self.attrs &= !UNDERSCORES;
                    match sub.get(1).copied().flatten().unwrap_or(1) {
                        0 => {}
                        n @ 1..=5 => self.attrs |= UNDERSCORE << (n - 1),
                        _ => self.attrs |= UNDERSCORE,
                    }
                }
                5 | 6 => self.attrs |= BLINK,
                7 => self.attrs |= REVERSE,
                8 => self.attrs |= HIDDEN,
                9 => self.attrs |= STRIKETHROUGH,
                21 => self.attrs = (self.attrs & !UNDERSCORES) | UNDERSCORE << 1,
                22 => self.attrs &= !(BOLD | DIM),
                23 => self.attrs &= !ITALICS,
                24 => self.attrs &= !UNDERSCORES,
                25 => self.attrs &= !BLINK,
                27 => self.attrs &= !REVERSE,
                28 => self.attrs &= !HIDDEN,
                29 => self.attrs &= !STRIKETHROUGH,
                53 => self.attrs |= OVERLINE,
                55 => self.attrs &= !OVERLINE,
                30..=37 => self.fg = Some(Colour::Ansi((code - 30) as u8)),
                90..=97 => self.fg = Some(Colour::Ansi((code - 90 + 8) as u8)),
                40..=47 => self.bg = Some(Colour::Ansi((code - 40) as u8)),
                100..=107 => self.bg = Some(Colour::Ansi((code - 100 + 8) as u8)),
                39 => self.fg = None,
                49 => self.bg = None,
                38 | 48 | 58 => {
                    let (colour, used) = extended(&sub, &params[i + 1..]);
                    i += used;
                    match code {
                        38 => self.fg = colour,
                        48 => self.bg = colour,
                        _ => {} // the underline colour is not reported
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

fn number(digits: &[u8]) -> Option<u16> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// An extended colour (38/48/58): in colon form all in `sub`
/// (`38:5:200`, `38:2::10:20:30`, `38:2:10:20:30`), else in the parameters
/// that follow (`38;5;200`, `38;2;10;20;30`). Returns the colour and how many
/// of the following parameters it used.
fn extended(sub: &[Option<u16>], rest: &[&[u8]]) -> (Option<Colour>, usize) {
    let (values, used): (Vec<Option<u16>>, usize) = if sub.len() > 1 {
        (sub[1..].to_vec(), 0)
    } else {
        let kind = rest.first().and_then(|p| number(p));
        let n = match kind {
            Some(5) => 2,
            Some(2) => 4,
            _ => 1,
        };
        let n = n.min(rest.len());
        (rest[..n].iter().map(|p| number(p)).collect(), n)
    };
    let byte = |v: Option<&Option<u16>>| v.copied().flatten().map(|n| n.min(255) as u8);
    let colour = match values.first().copied().flatten() {
        Some(5) => byte(values.get(1)).map(Colour::Palette),
        Some(2) => {
            // Colon form may hold a colour-space id before the three values.
            let rgb = if sub.len() > 1 && values.len() >= 5 {
                &values[2..5]
            } else {
                &values[1..values.len().min(4)]
            };
            match rgb {
                [r, g, b] => Some(Colour::Rgb(
                    byte(Some(r)).unwrap_or(0),
                    byte(Some(g)).unwrap_or(0),
                    byte(Some(b)).unwrap_or(0),
                )),
                _ => None,
            }
        }
        _ => None,
    };
    (colour, used)
}

/// A run of cells of one style that is not plain, in characters of its row's
/// text: `len` characters from character `col`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub col: usize,
    pub len: usize,
    pub style: Style,
}

/// One captured row: its plain text and its styled runs (none when plain).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StyledRow {
    pub text: String,
    pub runs: Vec<Run>,
}

impl StyledRow {
    /// A row without styles.
    pub fn plain(text: String) -> StyledRow {
        StyledRow {
            text,
            runs: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], style: &Style) {
        if bytes.is_empty() {
            return;
        }
        let text = decode_lossy(bytes);
        let col = self.text.chars().count();
        let len = text.chars().count();
        self.text.push_str(&text);
        if style.is_plain() {
            return;
        }
        match self.runs.last_mut() {
            Some(last) if last.col + last.len == col && last.style == *style => last.len += len,
            _ => self.runs.push(Run {
                col,
                len,
                style: style.clone(),
            }),
        }
    }

    /// Trims the trailing spaces a plain capture trims, and the runs with them.
    fn finish(&mut self) {
        let kept = self.text.trim_end_matches(' ').len();
        if kept == self.text.len() {
            return;
        }
        self.text.truncate(kept);
        let chars = self.text.chars().count();
        self.runs.retain_mut(|r| {
            r.len = r.len.min(chars.saturating_sub(r.col));
            r.len > 0
        });
    }

    /// The row cut to `text`, a tail of its text (see `lines::tail_bytes`),
    /// its runs moved with it.
    pub fn tail(&self, text: &str) -> StyledRow {
        let dropped = self.text.chars().count() - text.chars().count();
        let runs = self
            .runs
            .iter()
            .filter_map(|r| {
                let end = r.col + r.len;
                (end > dropped).then(|| Run {
                    col: r.col.saturating_sub(dropped),
                    len: end - r.col.max(dropped),
                    style: r.style.clone(),
                })
            })
            .collect();
        StyledRow {
            text: text.to_string(),
            runs,
        }
    }
}

impl std::ops::Deref for StyledRow {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::borrow::Borrow<str> for StyledRow {
    fn borrow(&self) -> &str {
        &self.text
    }
}

/// `capture-pane -p -e` output as rows: one per LF-separated piece, like
/// `out.split(LF)` (so the piece after the last LF is an empty row).
pub fn parse(out: &[u8]) -> Vec<StyledRow> {
    let mut rows = Vec::new();
    let mut row = StyledRow::default();
    let mut style = Style::default();
    let mut text_from = 0;
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'\n' => {
                row.push(&out[text_from..i], &style);
                row.finish();
                rows.push(std::mem::take(&mut row));
                i += 1;
            }
            0x1b => {
                row.push(&out[text_from..i], &style);
                i = escape(out, i, &mut style);
            }
            _ => {
                i += 1;
                continue;
            }
        }
        text_from = i;
    }
    row.push(&out[text_from..], &style);
    row.finish();
    rows.push(row);
    rows
}

/// Reads the escape sequence at `out[at]` (ESC) into `style`; returns where
/// the text after it starts. A sequence cut off by the end or by a LF ends
/// there.
fn escape(out: &[u8], at: usize, style: &mut Style) -> usize {
    let body = at + 2;
    match out.get(at + 1) {
        Some(b'[') => {
            // CSI: parameters and intermediates, then one final byte.
            let end = (body..out.len())
                .find(|&j| (0x40..=0x7e).contains(&out[j]) || out[j] == b'\n')
                .unwrap_or(out.len());
            if out.get(end) == Some(&b'm') {
                style.apply_sgr(&out[body..end]);
            }
            if out.get(end) == Some(&b'\n') {
                end
            } else {
                (end + 1).min(out.len())
            }
        }
        Some(b']') => {
            // OSC, ended by BEL or ST (ESC \).
            let mut j = body;
            let end;
            loop {
                match out.get(j) {
                    None | Some(b'\n') => {
                        end = j;
                        break;
                    }
                    Some(0x07) => {
                        end = j + 1;
                        break;
                    }
                    Some(0x1b) if out.get(j + 1) == Some(&b'\\') => {
                        end = j + 2;
                        break;
                    }
                    _ => j += 1,
                }
            }
            osc(&out[body..j], style);
            end
        }
        // ESC, intermediates (0x20–0x2f), then one final byte.
        Some(_) => {
            let mut j = at + 1;
            while out.get(j).is_some_and(|b| (0x20..=0x2f).contains(b)) {
                j += 1;
            }
            if out.get(j).is_some_and(|b| *b != b'\n') {
                j += 1;
            }
            j
        }
        None => out.len(),
    }
}

/// OSC 8 (`8;PARAMS;URI`) sets or, with an empty URI, ends a hyperlink;
/// other OSC strings carry no style.
fn osc(body: &[u8], style: &mut Style) {
    let Some(rest) = body.strip_prefix(b"8;") else {
        return;
    };
    let uri = rest
        .iter()
        .position(|b| *b == b';')
        .map_or(&[][..], |p| &rest[p + 1..]);
    style.link = (!uri.is_empty()).then(|| decode_lossy(uri));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(col: usize, len: usize, f: impl FnOnce(&mut Style)) -> Run {
        let mut style = Style::default();
        f(&mut style);
        Run { col, len, style }
    }

    #[test]
    fn text_is_the_plain_capture_and_runs_name_tmux_styles() {
        // tmux 3.3a's -e output of a red word, a bold underlined 256-colour
        // word and a reverse word with a wide character after it.
        let rows = parse(
            b"\x1b[31mred\x1b[39m plain \x1b[1;4m\x1b[38;5;200mbold256\x1b[0m\n\
              \x1b[7m\x1b[49mrev\x1b[0m \xe6\x97\xa5 \x1b[9mx\x1b[0m\n",
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].text, "red plain bold256");
        assert_eq!(
            rows[0].runs,
            vec![
                run(0, 3, |s| s.fg = Some(Colour::Ansi(1))),
                run(10, 7, |s| {
                    s.fg = Some(Colour::Palette(200));
                    s.attrs = BOLD | UNDERSCORE;
                }),
            ]
        );
        assert_eq!(rows[0].runs[1].style.attributes(), ["bold", "underscore"]);
        assert_eq!(rows[1].text, "rev 日 x");
        assert_eq!(rows[1].runs[0], run(0, 3, |s| s.attrs = REVERSE));
        assert_eq!(rows[1].runs[1], run(6, 1, |s| s.attrs = STRIKETHROUGH));
        assert_eq!(rows[2], StyledRow::default());
    }

    #[test]
    fn state_carries_over_a_line_end_and_coloured_trailing_spaces_go() {
        // tmux 3.7c keeps spaces with a background; a plain capture trims them.
        let rows = parse(b"a\x1b[44m  \x1b[49m\n\x1b[44mb\x1b[92m c \n\x1b[0m");
        assert_eq!(rows[0].text, "a");
        assert!(rows[0].runs.is_empty());
        assert_eq!(rows[1].text, "b c");
        assert_eq!(
            rows[1].runs,
            vec![
                run(0, 1, |s| s.bg = Some(Colour::Ansi(4))),
                run(1, 2, |s| {
                    s.bg = Some(Colour::Ansi(4));
                    s.fg = Some(Colour::Ansi(10));
                }),
            ]
        );
        assert_eq!(rows[1].runs[1].style.fg.unwrap().name(), "brightgreen");
    }

    #[test]
    fn extended_colours_in_both_spellings_and_hyperlinks() {
        let rows = parse(
            b"\x1b[48;2;10;20;30ma\x1b[38:2::1:2:3mb\x1b[0;38:5:9mc\x1b[4:3m\
              \x1b]8;;http://x\x1b\\d\x1b]8;;\x1b\\e\x1b]0;title\x07f",
        );
        let r = &rows[0];
        assert_eq!(r.text, "abcdef");
        assert_eq!(r.runs[0].style.bg.unwrap().name(), "#0a141e");
        assert_eq!(r.runs[1].style.fg.unwrap().name(), "#010203");
        assert_eq!(r.runs[2].style.fg.unwrap().name(), "colour9");
        assert_eq!(r.runs[2].style.bg, None, "SGR 0 reset the background");
        assert_eq!(r.runs[3].style.link.as_deref(), Some("http://x"));
        assert_eq!(r.runs[3].style.attributes(), ["curly-underscore"]);
        assert_eq!(r.runs[4].style.link, None);
        assert_eq!(r.runs[4].len, 2, "an OSC title is not text: {r:?}");
    }

    #[test]
    fn invalid_bytes_and_cut_sequences_decode_like_a_plain_read() {
        let rows = parse(b"\xff\x1b[1mb\xe6\x1b[0m\n\x1b[3");
        assert_eq!(rows[0].text, "\\xffb\\xe6");
        assert_eq!(rows[0].runs, vec![run(4, 5, |s| s.attrs = BOLD)]);
        assert_eq!(rows[1], StyledRow::default());
    }

    #[test]
    fn a_tail_moves_its_runs() {
        let rows = parse(b"ab\x1b[31mcde\x1b[0mfg");
        let t = rows[0].tail("defg");
        assert_eq!(t.runs, vec![run(0, 2, |s| s.fg = Some(Colour::Ansi(1)))]);
        assert!(rows[0].tail("g").runs.is_empty());
    }
}
