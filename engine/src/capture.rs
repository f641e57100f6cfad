//! The capture core: turning `capture-pane` output into bounded, line-preserving
//! rows (docs/spec.md A.3.4) and the exact row splice between two captures (A.3.6).
//! Tracked captures are kept in `retention` for later deltas.
//!
//! Rows are UTF-8 text, each keeping its LF, or base64 when the kept bytes are
//! not UTF-8.
//!
//! Everything here is pure except the store's clock; the tmux side of a capture
//! (the hook check, the guarded `capture-pane`) lives in `observe`.

use std::sync::Arc;
use tmux_mcp_core::process::ProcessIdentity;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub max_lines: usize,
    pub max_bytes: usize,
    pub history_lines: usize,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            max_lines: 200,
            max_bytes: 65536,
            history_lines: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Base64,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Base64 => "base64",
        }
    }
}

/// Rows as they are emitted: UTF-8 text each keeping its LF, or (when the kept
/// bytes are not valid UTF-8 as a whole) padded base64 of each raw row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub rows: Vec<String>,
    pub encoding: Encoding,
    /// Raw bytes of all rows (decoded), ≤ `max_bytes`.
    pub bytes: usize,
    pub truncated: bool,
}

impl Rows {
    /// The raw bytes of the whole capture.
    pub fn raw(&self) -> Vec<u8> {
        match self.encoding {
            Encoding::Utf8 => self.rows.concat().into_bytes(),
            Encoding::Base64 => self
                .rows
                .iter()
                .flat_map(|r| base64_decode(r).unwrap_or_default())
                .collect(),
        }
    }
}

/// A.3.4: last `max_lines` rows, then last `max_bytes` bytes, then the encoding.
pub fn select(out: &[u8], scope: &Scope) -> Rows {
    let rows = split_rows(out);
    let keep_from = rows.len().saturating_sub(scope.max_lines);
    let mut truncated = keep_from > 0;
    let mut buf: Vec<u8> = rows[keep_from..].concat();
    if buf.len() > scope.max_bytes {
        truncated = true;
        buf.drain(..buf.len() - scope.max_bytes);
    }
    let bytes = buf.len();
    match String::from_utf8(buf) {
        Ok(text) => Rows {
            rows: split_rows(text.as_bytes())
                .into_iter()
                .map(|r| String::from_utf8(r.to_vec()).expect("valid UTF-8 splits at LF"))
                .collect(),
            encoding: Encoding::Utf8,
            bytes,
            truncated,
        },
        Err(e) => {
            let raw = e.into_bytes();
            Rows {
                rows: split_rows(&raw).into_iter().map(base64_encode).collect(),
                encoding: Encoding::Base64,
                bytes,
                truncated,
            }
        }
    }
}

/// Splits after each LF; a tail without LF is its own (last) row.
fn split_rows(bytes: &[u8]) -> Vec<&[u8]> {
    let mut rows = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            rows.push(&bytes[start..=i]);
            start = i + 1;
        }
    }
    if start < bytes.len() {
        rows.push(&bytes[start..]);
    }
    rows
}

/// A.3.6: the splice that turns `prev` into `cur`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    pub start: usize,
    pub delete: usize,
    pub rows: Vec<String>,
    pub reset: bool,
}

pub fn diff(prev: &[String], prev_enc: Encoding, cur: &[String], cur_enc: Encoding) -> Splice {
    let (p, s) = if prev_enc == cur_enc {
        let max = prev.len().min(cur.len());
        let p = prev.iter().zip(cur).take_while(|(a, b)| a == b).count();
        let s = prev[p..]
            .iter()
            .rev()
            .zip(cur[p..].iter().rev())
            .take(max - p)
            .take_while(|(a, b)| a == b)
            .count();
        (p, s)
    } else {
        (0, 0)
    };
    Splice {
        start: p,
        delete: prev.len() - p - s,
        rows: cur[p..cur.len() - s].to_vec(),
        reset: p == 0 && s == 0,
    }
}

/// Applies a splice (what a client does to reconstruct the current rows).
pub fn apply(prev: &[String], splice: &Splice) -> Vec<String> {
    let mut out = prev[..splice.start].to_vec();
    out.extend(splice.rows.iter().cloned());
    out.extend(prev[splice.start + splice.delete..].iter().cloned());
    out
}

/// Padded standard base64 (RFC 4648), as the `base64` encoding publishes it.
pub fn base64_encode(bytes: &[u8]) -> String {
    data_encoding::BASE64.encode(bytes)
}

/// The bytes of padded standard base64; `None` for anything else (wrong
/// length, stray characters, padding where it cannot be).
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    data_encoding::BASE64.decode(s.as_bytes()).ok()
}

/// A retained tracked capture: what a cursor continues from.
#[derive(Debug, Clone)]
pub struct CursorEntry {
    pub pane_id: String,
    pub generation: String,
    pub rows: Rows,
    pub scope: Scope,
    pub identity: Arc<ProcessIdentity>,
    /// Made by the hand-off key binding: readable by any session of this broker.
    pub handoff: bool,
}

/// A retained `capture_since` cursor: where the lines already returned end in
/// the pane's grid (history + screen, rows numbered from the top of history).
/// Rows are kept as hashes only: the cursor locates itself by them, it never
/// returns them again.
#[derive(Debug, Clone)]
pub struct SinceEntry {
    pub pane_id: String,
    pub pid: u32,
    pub process_generation: Option<String>,
    /// Absolute row of the first row not yet returned as a complete line (the
    /// terminal cursor's row at the last read).
    pub frontier: u64,
    /// Hashes of the rows just above `frontier` (at most a few): how the cursor
    /// finds its place again after history was trimmed or the grid reflowed.
    pub window: Vec<u64>,
    /// Hashes of the rows from `frontier` down that were already returned
    /// (the line in progress, e.g. a prompt): returned again only once changed.
    pub pending: Vec<u64>,
    pub history_size: u64,
    /// Hash of the alternate screen last returned, while a full-screen program runs.
    pub alternate: Option<u64>,
    /// Continued from the key binding's hand-off: readable by any agent.
    pub handoff: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(max_lines: usize, max_bytes: usize) -> Scope {
        Scope {
            max_lines,
            max_bytes,
            history_lines: 0,
        }
    }

    #[test]
    fn worked_example_from_the_spec() {
        let out = [0xC3, 0xA9, 0xC3, 0xA9, 0x0A];
        let r = select(&out, &sc(1, 4));
        assert_eq!(r.encoding, Encoding::Base64);
        assert_eq!(r.rows, vec!["qcOpCg==".to_string()]);
        assert_eq!(r.bytes, 4);
        assert!(r.truncated);
        assert_eq!(r.raw(), vec![0xA9, 0xC3, 0xA9, 0x0A]);
    }

    #[test]
    fn rows_keep_their_lf_and_blank_rows_stay() {
        let r = select(b"a\n\nb\n", &sc(200, 65536));
        assert_eq!(r.rows, vec!["a\n", "\n", "b\n"]);
        assert_eq!(
            (r.bytes, r.truncated, r.encoding),
            (5, false, Encoding::Utf8)
        );
        let r = select(b"1\n2\n3\n", &sc(2, 65536));
        assert_eq!(r.rows, vec!["2\n", "3\n"]);
        assert!(r.truncated);
        let r = select(b"abc\ndef\n", &sc(10, 5));
        assert_eq!(r.rows, vec!["\n", "def\n"]);
        assert!(r.truncated);
    }

    #[test]
    fn splice_cases() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let p = v(&["a", "b", "c"]);
        let same = diff(&p, Encoding::Utf8, &p, Encoding::Utf8);
        assert_eq!(
            same,
            Splice {
                start: 3,
                delete: 0,
                rows: vec![],
                reset: false
            }
        );
        let c = v(&["a", "b", "c", "d"]);
        let s = diff(&p, Encoding::Utf8, &c, Encoding::Utf8);
        assert_eq!(
            s,
            Splice {
                start: 3,
                delete: 0,
                rows: v(&["d"]),
                reset: false
            }
        );
        let c = v(&["x", "y"]);
        let s = diff(&p, Encoding::Utf8, &c, Encoding::Utf8);
        assert!(s.reset);
        assert_eq!(apply(&p, &s), c);
        // Prefix and suffix never overlap: [a,a] -> [a].
        let s = diff(&v(&["a", "a"]), Encoding::Utf8, &v(&["a"]), Encoding::Utf8);
        assert_eq!(apply(&v(&["a", "a"]), &s), v(&["a"]));
        // Encoding change forces a reset.
        let s = diff(&p, Encoding::Utf8, &p, Encoding::Base64);
        assert!(s.reset && s.delete == 3);
    }

    #[test]
    fn splice_reconstructs_random_sequences() {
        // Deterministic pseudo-random edits: append, delete, replace, clear.
        let mut seed = 0x2545F4914F6CDD1Du64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut prev: Vec<String> = (0..10).map(|i| format!("row {i}\n")).collect();
        for step in 0..2000 {
            let mut cur = prev.clone();
            match rnd(5) {
                0 => cur.push(format!("new {step}\n")),
                1 if !cur.is_empty() => {
                    cur.remove(rnd(cur.len()));
                }
                2 if !cur.is_empty() => {
                    let i = rnd(cur.len());
                    cur[i] = format!("edit {step}\n");
                }
                3 => cur.clear(),
                _ => cur.insert(rnd(cur.len() + 1), "\n".into()),
            }
            let s = diff(&prev, Encoding::Utf8, &cur, Encoding::Utf8);
            assert_eq!(apply(&prev, &s), cur, "step {step}");
            prev = cur;
        }
    }

    #[test]
    fn base64_round_trip() {
        for n in 0..20u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(base64_decode(&base64_encode(&data)).unwrap(), data);
        }
        assert_eq!(base64_encode(b"\xa9\xc3\xa9\n"), "qcOpCg==");
        // Malformed input is refused, never decoded into garbage (the
        // hand-written decoder underflowed on all-padding groups).
        for bad in ["====", "A===", "qcOpCg=", "qc=pCg==", "qcOp Cg==", "é"] {
            assert_eq!(base64_decode(bad), None, "{bad:?}");
        }
    }
}
