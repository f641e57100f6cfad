//! `tmux_capture` (opt-in, seed family) against real tmux servers: the published
//! contract, rows compared with tmux's own `capture-pane`, the exact splice of
//! continuations over randomized screen updates, hook refusal, stale targets and
//! cursors, input validation, and the key binding's hand-off cursor.
//!
//! Every `structuredContent` is validated against the published `outputSchema`
//! (errors included) by the harness.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tmux_mcp_e2e::*;

const ENABLE: &[&str] = &["--enable-tool", "tmux_capture"];

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

/// The seed page of `tmux_capture` (tests/seeds/README.md): line 2 names the
/// tool, line 4 is the description the tool must publish.
const SEED: &str = "000_87064d815a28a871.txt";

fn seed_description() -> String {
    let text = seed_text(SEED);
    assert_eq!(
        text.lines().nth(1).map(str::trim),
        Some("tmux_capture"),
        "tests/seeds/{SEED} is not the tmux_capture seed"
    );
    text.lines()
        .nth(3)
        .unwrap_or_else(|| panic!("tests/seeds/{SEED} has no line 4"))
        .trim_end()
        .to_string()
}

/// `tmux -u -S sock capture-pane -p -t PANE -S <start> -E -` stdout bytes.
fn tmux_capture_bytes(srv: &TmuxServer, pane: &str, history: usize) -> Vec<u8> {
    let start = if history == 0 {
        "0".to_string()
    } else {
        format!("-{history}")
    };
    let out = Command::new("tmux")
        .arg("-u")
        .arg("-S")
        .arg(srv.socket())
        .args(["capture-pane", "-p", "-t", pane, "-S", &start, "-E", "-"])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .expect("tmux capture-pane");
    assert!(
        out.status.success(),
        "tmux capture-pane failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Splits after each LF (each row keeps its LF; a tail without LF is a row).
fn split_after_lf(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut rows = Vec::new();
    let mut cur = Vec::new();
    for &b in bytes {
        cur.push(b);
        if b == b'\n' {
            rows.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        rows.push(cur);
    }
    rows
}

fn tmux_rows(srv: &TmuxServer, pane: &str, history: usize) -> Vec<String> {
    split_after_lf(&tmux_capture_bytes(srv, pane, history))
        .into_iter()
        .map(|r| String::from_utf8(r).expect("tmux output is UTF-8"))
        .collect()
}

fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for ch in bytes.chunks(3) {
        let n = (ch[0] as u32) << 16
            | (*ch.get(1).unwrap_or(&0) as u32) << 8
            | *ch.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            s.push(if i <= ch.len() {
                T[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    s
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Scope {
    max_lines: usize,
    max_bytes: usize,
    history_lines: usize,
}

impl Scope {
    fn json(&self) -> Value {
        json!({ "max_lines": self.max_lines, "max_bytes": self.max_bytes, "history_lines": self.history_lines })
    }
}

/// What SPEC A.3.4 says the rows of `out` are under `scope`, computed here
/// independently: (rows as emitted, encoding, bytes, truncated).
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    rows: Vec<String>,
    encoding: &'static str,
    bytes: usize,
    truncated: bool,
}

fn expected_rows(out: &[u8], scope: &Scope) -> Expected {
    let rows = split_after_lf(out);
    let drop = rows.len().saturating_sub(scope.max_lines);
    let mut truncated = drop > 0;
    let mut buf: Vec<u8> = rows[drop..].concat();
    if buf.len() > scope.max_bytes {
        truncated = true;
        buf = buf[buf.len() - scope.max_bytes..].to_vec();
    }
    let bytes = buf.len();
    match std::str::from_utf8(&buf) {
        Ok(_) => Expected {
            rows: split_after_lf(&buf)
                .into_iter()
                .map(|r| String::from_utf8(r).unwrap())
                .collect(),
            encoding: "utf-8",
            bytes,
            truncated,
        },
        Err(_) => Expected {
            rows: split_after_lf(&buf).iter().map(|r| b64(r)).collect(),
            encoding: "base64",
            bytes,
            truncated,
        },
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("string row").to_string())
        .collect()
}

/// A.3.6 computed here: (start, delete, rows, reset).
fn expected_splice(
    p: &[String],
    p_enc: &str,
    c: &[String],
    c_enc: &str,
) -> (usize, usize, Vec<String>, bool) {
    let (pre, suf) = if p_enc == c_enc {
        let max = p.len().min(c.len());
        let pre = p.iter().zip(c).take_while(|(a, b)| a == b).count();
        let suf = p[pre..]
            .iter()
            .rev()
            .zip(c[pre..].iter().rev())
            .take(max - pre)
            .take_while(|(a, b)| a == b)
            .count();
        (pre, suf)
    } else {
        (0, 0)
    };
    (
        pre,
        p.len() - pre - suf,
        c[pre..c.len() - suf].to_vec(),
        pre == 0 && suf == 0,
    )
}

/// Applies a delta's splice to `prev` (what a client does).
fn apply_splice(prev: &[String], data: &Value) -> Vec<String> {
    let start = data["splice"]["start"].as_u64().expect("splice.start") as usize;
    let delete = data["splice"]["delete"].as_u64().expect("splice.delete") as usize;
    assert!(
        start + delete <= prev.len(),
        "splice start {start} + delete {delete} exceeds {} previous rows: {data:#}",
        prev.len()
    );
    let mut out = prev[..start].to_vec();
    out.extend(strings(&data["splice"]["rows"]));
    out.extend(prev[start + delete..].iter().cloned());
    out
}

fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn random_hex32() -> String {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .expect("urandom");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The pane program: writes to its terminal exactly the bytes it reads (one hex
/// line per update) from a FIFO the test holds open.
/// xorshift64*: reproducible pseudo-random steps.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
}

// ---------------------------------------------------------------------------
// 1. contract
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_schemas_equal_contract_files() {
    let srv = TmuxServer::start();
    let input = contract_json("tmux_capture.input.json");
    let output = contract_json("tmux_capture.output.json");

    // What rmcp's client got from tools/list, against the files in the repository.
    let c = McpClient::attach(&srv, ENABLE).await;
    let t = c.tool("tmux_capture");
    let published_in = Value::Object((*t.input_schema).clone());
    let published_out = Value::Object(
        (*t.output_schema
            .clone()
            .expect("tmux_capture publishes an outputSchema"))
        .clone(),
    );
    assert_eq!(
        published_in, input,
        "published inputSchema differs from broker/contracts/tmux_capture.input.json"
    );
    assert_eq!(
        published_out, output,
        "published outputSchema differs from broker/contracts/tmux_capture.output.json"
    );
    // Same keys in the same order (the contract is published verbatim).
    assert_eq!(
        serde_json::to_string(&published_in).unwrap(),
        serde_json::to_string(&input).unwrap(),
        "inputSchema key order"
    );
    assert_eq!(
        serde_json::to_string(&published_out).unwrap(),
        serde_json::to_string(&output).unwrap(),
        "outputSchema key order"
    );
    assert_eq!(
        t.description.as_deref(),
        Some(seed_description().as_str()),
        "description differs from the seed"
    );
    let ann = serde_json::to_value(t.annotations.clone().expect("annotations")).unwrap();
    assert_eq!(
        ann,
        json!({"title": "Capture pane rows", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        "annotations"
    );
    c.close().await;

    // Without --enable-tool: hidden, and a direct call gets the policy_denied envelope.
    let d = McpClient::attach(&srv, &[]).await;
    let names: Vec<String> = d.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        !names.iter().any(|n| n == "tmux_capture"),
        "tmux_capture listed without --enable-tool: {names:?}"
    );
    let gen = generation(&d).await;
    let result = d
        .call_raw("tmux_capture", json!({"target": pane_ref(&gen, "%0")}))
        .await;
    let sc = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("calling a hidden tool gave no structuredContent: {result:?}"));
    validate(&output, &sc).unwrap_or_else(|e| {
        panic!("policy_denied envelope does not validate against the contract: {e}\n{sc:#}")
    });
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(sc["ok"], json!(false), "{sc:#}");
    assert_eq!(sc["error"]["code"], "policy_denied", "{sc:#}");
    assert_eq!(sc["error"]["delivery"], "not_sent", "{sc:#}");
    // The envelope's message is the fixed text alone; how to enable the tool
    // (the tier, the switch) is in the one text item after it.
    assert_eq!(
        sc["error"]["message"], "The configured policy denies this operation.",
        "{sc:#}"
    );
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    assert_eq!(text.len(), 1, "one text item: {text:?}");
    assert!(
        text[0].starts_with("The configured policy denies this operation. ")
            && text[0].contains("--enable-tool tmux_capture"),
        "{text:?}"
    );
    d.close().await;
}

// ---------------------------------------------------------------------------
// 2. snapshot rows
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_rows_match_tmux() {
    let srv = TmuxServer::start();
    let script = srv.dir().join("lines.sh");
    std::fs::write(&script, "i=1\nwhile [ $i -le 20 ]; do printf 'line %02d\\n' $i; i=$((i+1)); done\nprintf '漢字 wide'\nexec sleep 1000\n").unwrap();
    let id = srv
        .tmux(&[
            "new-session",
            "-d",
            "-s",
            "snap",
            "-x",
            "40",
            "-y",
            "10",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh {}", sh_quote(script.to_str().unwrap())),
        ])
        .trim()
        .to_string();
    poll(Duration::from_secs(5), || {
        tmux_rows(&srv, &id, 0)
            .last()
            .is_some_and(|r| r == "漢字 wide\n")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("pane output never appeared: {:?}", tmux_rows(&srv, &id, 0)));

    let c = McpClient::attach(&srv, ENABLE).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, &id);

    // Defaults: every visible row, as tmux prints them.
    let t0 = Instant::now();
    let e = c
        .call_envelope("tmux_capture", json!({"target": target}))
        .await;
    let d = e.data();
    let want = tmux_rows(&srv, &id, 0);
    assert_eq!(want.len(), 10, "test premise: 10 visible rows: {want:?}");
    assert_eq!(
        strings(&d["rows"]),
        want,
        "rows differ from tmux capture-pane -S 0 -E -"
    );
    assert_eq!(d["rows"][0], "line 12\n");
    assert_eq!(
        d["rows"][9], "漢字 wide\n",
        "wide characters are intact (emitted once, not padded)"
    );
    assert!(
        strings(&d["rows"]).iter().all(|r| r.ends_with('\n')),
        "every row keeps its LF"
    );
    assert_eq!(d["mode"], "snapshot");
    assert_eq!(d["target"], target);
    assert!(is_hex32(d["capture_id"].as_str().unwrap()), "{d:#}");
    assert_eq!(d["process_generation"], Value::Null, "untracked");
    assert!(
        d.get("next_cursor").is_none(),
        "untracked capture has no next_cursor: {d:#}"
    );
    assert_eq!(d["encoding"], "utf-8");
    assert_eq!(d["row_count"], json!(10));
    assert_eq!(d["bytes"], json!(want.concat().len()));
    assert_eq!(d["truncated"], json!(false));
    assert_eq!(d["history_continuity"], "unknown");
    assert_eq!(
        d["scope"],
        json!({"max_lines": 200, "max_bytes": 65536, "history_lines": 0})
    );
    assert_eq!(d["interval"]["clock"], "monotonic_seconds");
    let (s, f) = (
        d["interval"]["started"].as_f64().unwrap(),
        d["interval"]["finished"].as_f64().unwrap(),
    );
    assert!(s <= f, "interval started {s} > finished {f}");
    assert!(
        f - s <= t0.elapsed().as_secs_f64() + 0.001,
        "interval {s}..{f} is longer than the call"
    );
    let (header, body) = e
        .text
        .split_once('\n')
        .unwrap_or_else(|| panic!("text has no header line: {:?}", e.text));
    assert!(
        header.contains(&id),
        "header does not name the pane: {header:?}"
    );
    assert_eq!(
        body,
        want.concat(),
        "text content after the header is the rows"
    );

    // history_lines N: N history rows on top.
    let e = c
        .call_envelope(
            "tmux_capture",
            json!({"target": target, "history_lines": 5}),
        )
        .await;
    let d = e.data();
    let want5 = tmux_rows(&srv, &id, 5);
    assert_eq!(strings(&d["rows"]), want5);
    assert_eq!(d["row_count"], json!(15));
    assert_eq!(
        strings(&d["rows"])[..5],
        [
            "line 07\n",
            "line 08\n",
            "line 09\n",
            "line 10\n",
            "line 11\n"
        ]
    );
    assert_eq!(strings(&d["rows"])[5..], want[..]);
    assert_eq!(d["scope"]["history_lines"], json!(5));
    assert_eq!(d["truncated"], json!(false));
    // More history than exists: all 11 history rows.
    let d = c
        .call_envelope(
            "tmux_capture",
            json!({"target": target, "history_lines": 1000}),
        )
        .await
        .data()
        .clone();
    assert_eq!(d["row_count"], json!(21), "{d:#}");
    assert_eq!(d["rows"][0], "line 01\n");

    // max_lines keeps the last rows.
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_lines": 3}))
        .await
        .data()
        .clone();
    assert_eq!(strings(&d["rows"]), want[7..].to_vec());
    assert_eq!(
        (d["row_count"].clone(), d["truncated"].clone()),
        (json!(3), json!(true))
    );
    assert_eq!(d["bytes"], json!(want[7..].concat().len()));
    // max_lines with history: the head (history) is dropped first.
    let d = c
        .call_envelope(
            "tmux_capture",
            json!({"target": target, "max_lines": 12, "history_lines": 5}),
        )
        .await
        .data()
        .clone();
    assert_eq!(strings(&d["rows"]), want5[3..].to_vec());
    assert_eq!(d["truncated"], json!(true));
    // Exactly max_lines rows: not truncated.
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_lines": 10}))
        .await
        .data()
        .clone();
    assert_eq!(d["truncated"], json!(false), "{d:#}");

    // max_bytes keeps the last bytes, cutting inside a row.
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_bytes": 12}))
        .await
        .data()
        .clone();
    assert_eq!(
        strings(&d["rows"]),
        vec!["漢字 wide\n"],
        "12 bytes is exactly the last row"
    );
    assert_eq!(
        (
            d["bytes"].clone(),
            d["truncated"].clone(),
            d["encoding"].clone()
        ),
        (json!(12), json!(true), json!("utf-8"))
    );
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_bytes": 9}))
        .await
        .data()
        .clone();
    assert_eq!(strings(&d["rows"]), vec!["字 wide\n"]);
    assert_eq!(
        (
            d["bytes"].clone(),
            d["truncated"].clone(),
            d["encoding"].clone()
        ),
        (json!(9), json!(true), json!("utf-8"))
    );
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_bytes": 15}))
        .await
        .data()
        .clone();
    assert_eq!(
        strings(&d["rows"]),
        vec!["20\n", "漢字 wide\n"],
        "the first row becomes partial"
    );
    assert_eq!(
        (d["row_count"].clone(), d["bytes"].clone()),
        (json!(2), json!(15))
    );
    // A cut inside 漢 (E6 BC A2): the whole capture is base64.
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_bytes": 10}))
        .await
        .data()
        .clone();
    assert_eq!(d["encoding"], "base64", "{d:#}");
    assert_eq!(strings(&d["rows"]), vec![b64(b"\xa2\xe5\xad\x97 wide\n")]);
    assert_eq!(
        (
            d["bytes"].clone(),
            d["truncated"].clone(),
            d["row_count"].clone()
        ),
        (json!(10), json!(true), json!(1))
    );
    let d = c
        .call_envelope("tmux_capture", json!({"target": target, "max_bytes": 11}))
        .await
        .data()
        .clone();
    assert_eq!(d["encoding"], "base64", "{d:#}");
    let raw = tmux_capture_bytes(&srv, &id, 0);
    assert_eq!(strings(&d["rows"]), vec![b64(&raw[raw.len() - 11..])]);
    assert_eq!(
        strings(&d["rows"]),
        vec![b64(b"\xbc\xa2\xe5\xad\x97 wide\n")]
    );

    // Every combination agrees with the rule computed here from tmux's output.
    for (ml, mb, hl) in [
        (1, 1, 0),
        (4, 30, 3),
        (200, 65536, 7),
        (1000, 262144, 1000),
        (2, 5, 2),
        (15, 100, 11),
    ] {
        let scope = Scope {
            max_lines: ml,
            max_bytes: mb,
            history_lines: hl,
        };
        let d = c
            .call_envelope(
                "tmux_capture",
                json!({"target": target, "max_lines": ml, "max_bytes": mb, "history_lines": hl}),
            )
            .await
            .data()
            .clone();
        let want = expected_rows(&tmux_capture_bytes(&srv, &id, hl), &scope);
        assert_eq!(strings(&d["rows"]), want.rows, "scope {scope:?}");
        assert_eq!(
            (
                d["encoding"].as_str().unwrap(),
                d["bytes"].as_u64().unwrap() as usize,
                d["truncated"].as_bool().unwrap(),
                d["row_count"].as_u64().unwrap() as usize
            ),
            (want.encoding, want.bytes, want.truncated, want.rows.len()),
            "scope {scope:?}"
        );
        assert_eq!(d["scope"], scope.json());
    }
    c.close().await;
}

// ---------------------------------------------------------------------------
// 3. randomized splice
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Noop,
    Append,
    Wide,
    Clear,
    Redraw,
    EditRow,
    Resize,
    Base64,
}

const WIDE: [&str; 6] = ["漢", "字", "か", "な", "ア", "語"];

/// Random text at most `cols` terminal columns wide (wide characters count 2).
fn random_text(rng: &mut Rng, cols: usize, wide: bool) -> String {
    let mut s = String::new();
    let mut used = 0;
    while used < cols {
        if wide && cols - used >= 2 && rng.below(3) == 0 {
            s.push_str(WIDE[rng.below(WIDE.len())]);
            used += 2;
        } else {
            s.push(if used > 0 && rng.below(6) == 0 {
                ' '
            } else {
                (b'a' + rng.below(26) as u8) as char
            });
            used += 1;
        }
    }
    s.trim_end().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn splice_reconstructs_over_randomized_pane_updates() {
    let seed: u64 = std::env::var("CAPTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("splice_reconstructs_over_randomized_pane_updates: CAPTURE_SEED={seed}");
    eprintln!("splice_reconstructs_over_randomized_pane_updates: CAPTURE_SEED={seed}");
    let mut rng = Rng(seed);

    let srv = TmuxServer::start();
    let mut pw = PaneWriter::new_session(&srv, "spl", 40, 10);
    let id = pw.id.clone();
    pw.emit(&srv, b"first line\nsecond line\n");

    let c = McpClient::attach(&srv, ENABLE).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, &id);
    let scope = Scope {
        max_lines: 12,
        max_bytes: 200,
        history_lines: 4,
    };

    let first = c.call_envelope("tmux_capture", json!({"target": target, "track": true, "max_lines": scope.max_lines, "max_bytes": scope.max_bytes, "history_lines": scope.history_lines})).await;
    let d = first.data().clone();
    let want = expected_rows(&tmux_capture_bytes(&srv, &id, scope.history_lines), &scope);
    assert_eq!(strings(&d["rows"]), want.rows, "tracked snapshot rows");
    let pgen = d["process_generation"]
        .as_str()
        .expect("tracked capture has a process_generation")
        .to_string();
    assert!(is_hex32(&pgen), "{d:#}");
    assert_eq!(
        d["next_cursor"], d["capture_id"],
        "next_cursor is the capture id"
    );
    let mut cursor = d["next_cursor"].as_str().unwrap().to_string();
    let mut prev = strings(&d["rows"]);
    let mut prev_enc = d["encoding"].as_str().unwrap().to_string();

    let mut plan: Vec<Step> = Vec::new();
    let all = [
        Step::Append,
        Step::Append,
        Step::Wide,
        Step::Clear,
        Step::Redraw,
        Step::EditRow,
        Step::Resize,
        Step::Base64,
        Step::Noop,
    ];
    for i in 0..48 {
        plan.push(match i {
            0 => Step::Noop,
            3 => Step::Resize,
            6 | 20 | 35 => Step::Base64,
            7 | 21 | 36 => Step::Append, // flips back to utf-8 most of the time
            _ => all[rng.below(all.len())],
        });
    }
    let (mut flips_to_b64, mut flips_to_utf8, mut identical) = (0, 0, 0);
    let mut log: Vec<String> = Vec::new();

    for (n, step) in plan.iter().enumerate() {
        let (w, h) = pw.size(&srv);
        match step {
            Step::Noop => pw.emit(&srv, b""),
            Step::Append | Step::Wide => {
                let mut out = String::new();
                for _ in 0..rng.range(1, 3) {
                    let len = rng.range(0, w + w / 2);
                    out.push_str(&random_text(&mut rng, len, *step == Step::Wide));
                    out.push('\n');
                }
                pw.emit(&srv, out.as_bytes());
            }
            Step::Clear => pw.emit(&srv, b"\x1b[2J\x1b[H"),
            Step::Redraw => {
                let mut out = String::new();
                for r in 1..=h {
                    let len = rng.range(0, w - 2);
                    let wide = rng.below(2) == 0;
                    out.push_str(&format!(
                        "\x1b[{r};1H\x1b[2K{}",
                        random_text(&mut rng, len, wide)
                    ));
                }
                out.push_str(&format!("\x1b[{h};1H"));
                pw.emit(&srv, out.as_bytes());
            }
            Step::EditRow => {
                let r = rng.range(1, h);
                let len = rng.range(0, w - 2);
                let text = random_text(&mut rng, len, true);
                pw.emit(
                    &srv,
                    format!("\x1b7\x1b[{r};1H\x1b[2K{text}\x1b8").as_bytes(),
                );
            }
            Step::Resize => {
                let (nw, nh) = (rng.range(30, 60), rng.range(6, 14));
                srv.tmux(&[
                    "resize-window",
                    "-t",
                    &id,
                    "-x",
                    &nw.to_string(),
                    "-y",
                    &nh.to_string(),
                ]);
                poll(Duration::from_secs(5), || {
                    (pw.size(&srv) == (nw, nh)).then_some(())
                })
                .unwrap_or_else(|| panic!("resize to {nw}x{nh} not applied: {:?}", pw.size(&srv)));
                pw.emit(&srv, b"");
            }
            Step::Base64 => {
                // Full screen of 3-byte characters; the max_bytes cut lands inside
                // one for one of three lengths of the last row.
                let chars = w / 2 - 1;
                let rows: Vec<String> = (0..h)
                    .map(|_| (0..chars).map(|_| WIDE[rng.below(WIDE.len())]).collect())
                    .collect();
                let mut hit = false;
                for k in 0..3 {
                    let last = format!("{}{}", rows[h - 1], "x".repeat(k));
                    let mut out = String::new();
                    for (r, text) in rows.iter().enumerate().take(h - 1) {
                        out.push_str(&format!("\x1b[{};1H\x1b[2K{text}", r + 1));
                    }
                    out.push_str(&format!("\x1b[{h};1H\x1b[2K{last}\x1b[{h};1H"));
                    pw.emit(&srv, out.as_bytes());
                    if expected_rows(&tmux_capture_bytes(&srv, &id, scope.history_lines), &scope)
                        .encoding
                        == "base64"
                    {
                        hit = true;
                        break;
                    }
                }
                assert!(hit, "step {n}: could not make the max_bytes cut fall inside a character (seed {seed})");
            }
        }

        let raw = tmux_capture_bytes(&srv, &id, scope.history_lines);
        let want = expected_rows(&raw, &scope);
        let e = c
            .call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
            .await;
        let d = e.data().clone();
        let ctx = || {
            format!("seed {seed}, step {n} ({step:?}), size {w}x{h}\nprevious rows {prev:?} ({prev_enc})\nexpected rows {:?} ({})\ndelta {d:#}\nsteps so far: {log:?}", want.rows, want.encoding)
        };
        assert_eq!(d["mode"], "delta", "{}", ctx());
        assert_eq!(d["base_capture_id"], json!(cursor), "{}", ctx());
        assert_eq!(d["next_cursor"], d["capture_id"], "{}", ctx());
        assert_ne!(d["next_cursor"], json!(cursor), "{}", ctx());
        assert_eq!(
            d["process_generation"],
            json!(pgen),
            "the cursor chain keeps one process generation; {}",
            ctx()
        );
        assert_eq!(d["scope"], scope.json(), "scope is inherited; {}", ctx());
        assert_eq!(d["target"], target);
        assert_eq!(d["history_continuity"], "unknown");

        let rebuilt = apply_splice(&prev, &d);
        // The untracked snapshot with the same scope, taken right after.
        let snap = c.call_envelope("tmux_capture", json!({"target": target, "max_lines": scope.max_lines, "max_bytes": scope.max_bytes, "history_lines": scope.history_lines})).await;
        let snap_rows = strings(&snap.data()["rows"]);
        assert_eq!(
            rebuilt,
            snap_rows,
            "splice applied to the previous rows differs from a fresh snapshot; {}",
            ctx()
        );
        assert_eq!(
            rebuilt,
            want.rows,
            "splice applied to the previous rows differs from tmux capture-pane; {}",
            ctx()
        );
        if want.encoding == "utf-8" {
            let tail: String = split_after_lf(&raw)
                .into_iter()
                .map(|r| String::from_utf8(r).unwrap())
                .collect::<String>();
            assert!(
                tail.ends_with(&rebuilt.concat()),
                "utf-8 rows are the tail of tmux's output; {}",
                ctx()
            );
        }
        assert_eq!(d["encoding"], json!(want.encoding), "{}", ctx());
        assert_eq!(
            d["row_count"],
            json!(rebuilt.len()),
            "row_count describes the full current state; {}",
            ctx()
        );
        assert_eq!(d["bytes"], json!(want.bytes), "{}", ctx());
        assert_eq!(d["truncated"], json!(want.truncated), "{}", ctx());

        let (start, delete, rows, reset) =
            expected_splice(&prev, &prev_enc, &want.rows, want.encoding);
        assert_eq!(
            (
                d["splice"]["start"].as_u64().unwrap() as usize,
                d["splice"]["delete"].as_u64().unwrap() as usize,
                strings(&d["splice"]["rows"]),
                d["reset"].as_bool().unwrap()
            ),
            (start, delete, rows, reset),
            "splice is not the longest-common-prefix/suffix one; {}",
            ctx()
        );
        if prev == want.rows && prev_enc == want.encoding {
            identical += 1;
            assert_eq!(
                d["splice"],
                json!({"start": prev.len(), "delete": 0, "rows": []}),
                "identical state; {}",
                ctx()
            );
            assert_eq!(d["reset"], json!(false), "identical state; {}", ctx());
        }
        if prev_enc != want.encoding {
            if want.encoding == "base64" {
                flips_to_b64 += 1
            } else {
                flips_to_utf8 += 1
            }
            assert_eq!(
                d["reset"],
                json!(true),
                "an encoding change forces reset; {}",
                ctx()
            );
            assert_eq!(
                d["splice"],
                json!({"start": 0, "delete": prev.len(), "rows": want.rows}),
                "encoding change; {}",
                ctx()
            );
        }
        log.push(format!("{step:?}"));
        prev = rebuilt;
        prev_enc = want.encoding.to_string();
        cursor = d["next_cursor"].as_str().unwrap().to_string();
    }
    println!("seed {seed}: {} steps {log:?}; identical {identical}, to base64 {flips_to_b64}, to utf-8 {flips_to_utf8}", log.len());
    assert!(identical >= 1, "no identical-state step was checked");
    assert!(
        flips_to_b64 >= 1 && flips_to_utf8 >= 1,
        "encoding flips: to base64 {flips_to_b64}, to utf-8 {flips_to_utf8} (seed {seed})"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// 4. hooks
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_refusal_global_and_session_leaves_hook_unrun() {
    let srv = TmuxServer::start();
    let trap = HookTrap::new(&srv);
    let run = trap.command.as_str();
    let c = McpClient::attach(&srv, ENABLE).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");

    // Sanity: a capture works and (no hook) nothing is written.
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();
    let tracked = c
        .call_envelope("tmux_capture", json!({"target": target, "track": true}))
        .await;
    let cursor = tracked.data()["next_cursor"].as_str().unwrap().to_string();

    // Refused for a snapshot and for a tracked snapshot alike; `why` names the case.
    let refused = |why: &'static str| {
        let c = &c;
        let target = target.clone();
        async move {
            for args in [
                json!({"target": target}),
                json!({"target": target, "track": true}),
            ] {
                let e = c.call_envelope("tmux_capture", args).await;
                assert_eq!(
                    e.structured["error"]["code"], "unsupported",
                    "{why}: {:#}",
                    e.structured
                );
                e.expect_error("unsupported", hook_refusal_delivery());
            }
        }
    };

    // Global hook.
    srv.tmux(&["set-hook", "-g", "after-capture-pane", run]);
    refused("global").await;
    // With a cursor the hook refusal passes through (not stale_cursor).
    c.call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
        .await
        .expect_error("unsupported", hook_refusal_delivery());
    srv.tmux(&["set-hook", "-gu", "after-capture-pane"]);
    // The same hook, fired on purpose by tmux's own capture-pane, writes a
    // sentinel into the same file: had a refused call run the hook, its line
    // would be there before the sentinel.
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "%0"]
        ),
        "",
        "the global hook ran"
    );
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();
    c.call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
        .await
        .data();

    // Session hook at a sparse index.
    srv.tmux(&["set-hook", "-t", "main", "after-capture-pane[17]", run]);
    assert!(
        srv.tmux(&["show-hooks", "-t", "main"])
            .contains("after-capture-pane[17]"),
        "test premise: the sparse hook is set"
    );
    refused("session [17]").await;
    srv.tmux(&["set-hook", "-u", "-t", "main", "after-capture-pane[17]"]);
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();
    // Drop main's emptied array too: it would mask the global entry below, and
    // tmux >= 3.5's in-queue check reads the hook as tmux would run it (see
    // tests/e2e/roundtrip.rs for the masked case).
    srv.tmux(&["set-hook", "-u", "-t", "main", "after-capture-pane"]);

    // Global hook at a sparse index.
    srv.tmux(&["set-hook", "-g", "after-capture-pane[503]", run]);
    refused("global [503]").await;
    srv.tmux(&["set-hook", "-gu", "after-capture-pane[503]"]);
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();

    // A hook on another session that links the pane's window.
    srv.tmux(&["new-session", "-d", "-s", "other"]);
    srv.tmux(&["link-window", "-s", "main:0", "-t", "other:7"]);
    srv.tmux(&["set-hook", "-t", "other", "after-capture-pane", run]);
    refused("linking session").await;
    srv.tmux(&["set-hook", "-u", "-t", "other", "after-capture-pane"]);
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();

    // A hook on an unrelated session does not stop the capture.
    srv.tmux(&["new-session", "-d", "-s", "unrelated"]);
    srv.tmux(&["set-hook", "-t", "unrelated", "after-capture-pane", run]);
    c.call_envelope("tmux_capture", json!({"target": target}))
        .await
        .data();
    c.call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
        .await
        .data();

    // Sentinel in a fresh session: `main` and `other` keep the (now empty)
    // hook arrays of the steps above, which mask the global entry in tmux.
    srv.tmux(&["new-session", "-d", "-s", "sentinel"]);
    assert_eq!(
        trap.fire_sentinel(
            &srv,
            "after-capture-pane",
            &["capture-pane", "-p", "-t", "sentinel:"]
        ),
        "",
        "an after-capture-pane hook ran"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// 5. stale target
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_target_after_server_restart_on_same_socket() {
    let mut srv = TmuxServer::start();
    let c = McpClient::attach(&srv, ENABLE).await;
    let old_gen = generation(&c).await;
    let old = pane_ref(&old_gen, "%0");
    c.call_envelope("tmux_capture", json!({"target": old}))
        .await
        .data();
    c.close().await;

    let old_pid = srv.pid();
    let old_brokers = srv.brokers();
    srv.restart_on_same_socket();
    assert_ne!(srv.pid(), old_pid, "test premise: a new server process");
    poll(Duration::from_secs(5), || {
        old_brokers.iter().all(|p| !pid_alive(*p)).then_some(())
    })
    .unwrap_or_else(|| panic!("the old server's broker {old_brokers:?} did not exit"));
    assert_eq!(
        srv.tmux(&["display-message", "-p", "-t", "%0", "#{pane_id}"])
            .trim(),
        "%0",
        "test premise: the new server also has %0"
    );

    let c = McpClient::attach(&srv, ENABLE).await;
    let new_gen = generation(&c).await;
    assert_ne!(
        new_gen, old_gen,
        "a restarted server on the same socket must have a new generation"
    );
    c.call_envelope("tmux_capture", json!({"target": old}))
        .await
        .expect_error("stale_target", "not_sent");
    c.call_envelope("tmux_capture", json!({"target": old, "track": true}))
        .await
        .expect_error("stale_target", "not_sent");
    // The same pane under the new generation works.
    c.call_envelope("tmux_capture", json!({"target": pane_ref(&new_gen, "%0")}))
        .await
        .data();
    // An unknown pane id of the right generation.
    c.call_envelope(
        "tmux_capture",
        json!({"target": pane_ref(&new_gen, "%9999")}),
    )
    .await
    .expect_error("stale_target", "not_sent");
    c.call_envelope(
        "tmux_capture",
        json!({"target": pane_ref(&new_gen, "%9999"), "track": true}),
    )
    .await
    .expect_error("stale_target", "not_sent");
    c.close().await;
}

// ---------------------------------------------------------------------------
// 6. stale cursor
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_cursor_after_respawn_and_for_unknown_cursor() {
    let srv = TmuxServer::start();
    let sleeper = srv
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "sleep 1000"])
        .trim()
        .to_string();
    let mut pw = PaneWriter::new_window(&srv, "twice");
    pw.emit(&srv, b"base line\n");
    let c = McpClient::attach(&srv, ENABLE).await;
    let gen = generation(&c).await;

    // Respawned pane: the cursor's process is gone.
    let t_sleep = pane_ref(&gen, &sleeper);
    let tracked = c
        .call_envelope("tmux_capture", json!({"target": t_sleep, "track": true}))
        .await;
    let cur = tracked.data()["next_cursor"]
        .as_str()
        .expect("next_cursor")
        .to_string();
    c.call_envelope("tmux_capture", json!({"target": t_sleep, "cursor": cur}))
        .await
        .data();
    let pid_before = srv.tmux(&["display-message", "-p", "-t", &sleeper, "#{pane_pid}"]);
    srv.tmux(&["respawn-pane", "-k", "-t", &sleeper]);
    assert_ne!(
        srv.tmux(&["display-message", "-p", "-t", &sleeper, "#{pane_pid}"]),
        pid_before,
        "test premise: respawn gave a new process"
    );
    c.call_envelope("tmux_capture", json!({"target": t_sleep, "cursor": cur}))
        .await
        .expect_error("stale_cursor", "not_sent");
    // Snapshots of the respawned pane still work.
    c.call_envelope("tmux_capture", json!({"target": t_sleep}))
        .await
        .data();

    // Unknown cursor.
    c.call_envelope(
        "tmux_capture",
        json!({"target": t_sleep, "cursor": random_hex32()}),
    )
    .await
    .expect_error("stale_cursor", "not_sent");

    // A cursor used with another pane's target.
    let t_w = pane_ref(&gen, &pw.id);
    let base = c
        .call_envelope("tmux_capture", json!({"target": t_w, "track": true}))
        .await;
    let base_rows = strings(&base.data()["rows"]);
    let c0 = base.data()["next_cursor"].as_str().unwrap().to_string();
    let t_other = pane_ref(&gen, "%0");
    c.call_envelope("tmux_capture", json!({"target": t_other, "cursor": c0}))
        .await
        .expect_error("stale_cursor", "not_sent");
    // ... and with the same pane id but another generation.
    c.call_envelope(
        "tmux_capture",
        json!({"target": pane_ref(&random_hex32(), &pw.id), "cursor": c0}),
    )
    .await
    .expect_error("stale_cursor", "not_sent");

    // Not consumed: two uses give deltas against the same base.
    pw.emit(&srv, b"second line\n");
    let now = tmux_rows(&srv, &pw.id, 0);
    let d1 = c
        .call_envelope("tmux_capture", json!({"target": t_w, "cursor": c0}))
        .await
        .data()
        .clone();
    let d2 = c
        .call_envelope("tmux_capture", json!({"target": t_w, "cursor": c0}))
        .await
        .data()
        .clone();
    for d in [&d1, &d2] {
        assert_eq!(d["base_capture_id"], json!(c0));
        assert_eq!(apply_splice(&base_rows, d), now, "{d:#}");
    }
    assert_eq!(
        d1["splice"], d2["splice"],
        "same base, same state, same splice"
    );
    assert_ne!(
        d1["capture_id"], d2["capture_id"],
        "each use mints a new capture id"
    );
    assert!(
        strings(&d1["splice"]["rows"]).contains(&"second line\n".to_string()),
        "{d1:#}"
    );
    // Later still, the same base.
    pw.emit(&srv, b"third line\n");
    let now = tmux_rows(&srv, &pw.id, 0);
    let d3 = c
        .call_envelope("tmux_capture", json!({"target": t_w, "cursor": c0}))
        .await
        .data()
        .clone();
    assert_eq!(d3["base_capture_id"], json!(c0));
    assert_eq!(apply_splice(&base_rows, &d3), now, "{d3:#}");
    // Branches continue independently.
    let from1 = c
        .call_envelope(
            "tmux_capture",
            json!({"target": t_w, "cursor": d1["next_cursor"]}),
        )
        .await
        .data()
        .clone();
    assert_eq!(
        apply_splice(&apply_splice(&base_rows, &d1), &from1),
        now,
        "{from1:#}"
    );
    c.close().await;
}

// ---------------------------------------------------------------------------
// 7. input validation
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuation_rejects_extra_fields() {
    let srv = TmuxServer::start();
    let c = McpClient::attach(&srv, ENABLE).await;
    let gen = generation(&c).await;
    let target = pane_ref(&gen, "%0");
    let tracked = c
        .call_envelope("tmux_capture", json!({"target": target, "track": true}))
        .await;
    let cursor = tracked.data()["next_cursor"].as_str().unwrap().to_string();

    let mut problems = Vec::new();
    for (field, value) in [
        ("max_lines", json!(5)),
        ("max_bytes", json!(100)),
        ("history_lines", json!(0)),
        ("track", json!(true)),
    ] {
        let mut args = json!({"target": target, "cursor": cursor});
        args[field] = value;
        let e = c.call_envelope("tmux_capture", args).await;
        let msg = e.expect_error("invalid_input", "not_sent");
        assert!(
            msg.starts_with("Input does not match the operation schema."),
            "{msg}"
        );
        assert_eq!(e.text, msg, "the text content equals the message");
        if !msg.contains(field) {
            problems.push(format!(
                "{{target, cursor, {field}}}: message does not name {field}: {msg:?}"
            ));
        }
    }
    // The cursor itself is still good afterwards.
    c.call_envelope("tmux_capture", json!({"target": target, "cursor": cursor}))
        .await
        .data();

    for bad in [0u64, 262145] {
        let e = c
            .call_envelope("tmux_capture", json!({"target": target, "max_bytes": bad}))
            .await;
        let msg = e.expect_error("invalid_input", "not_sent");
        if !msg.contains("/max_bytes") {
            problems.push(format!(
                "max_bytes {bad}: message does not name /max_bytes: {msg:?}"
            ));
        }
        assert!(
            !msg.contains(&bad.to_string()) || bad == 0,
            "the message echoes the value: {msg}"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    c.close().await;
}

// ---------------------------------------------------------------------------
// 8. hand-off cursor
// ---------------------------------------------------------------------------

/// Validates a raw tools/call response's structuredContent (error or not).
fn raw_envelope(tools: &Value, name: &str, resp: &Value) -> Value {
    let result = resp
        .get("result")
        .unwrap_or_else(|| panic!("tools/call {name} failed: {resp}"));
    let sc = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| panic!("no structuredContent: {result}"));
    let t = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"));
    validate(&t["outputSchema"], &sc)
        .unwrap_or_else(|e| panic!("{name} structuredContent does not validate: {e}\n{sc:#}"));
    assert_eq!(
        result["isError"] == json!(true),
        sc["ok"] == json!(false),
        "isError disagrees with ok: {result}"
    );
    sc
}

#[test]
fn handoff_cursor_from_key_binding_works_across_scopes() {
    let srv = TmuxServer::start(); // session main: B, where the agent runs
    let mut pa = PaneWriter::new_session(&srv, "alpha", 60, 12); // session A
    pa.emit(&srv, b"alpha one\nalpha two\n");
    let a = pa.id.clone();

    // The agent's relay runs inside a pane of session main (B).
    let relay = PaneRelay::start(&srv, "relay", &["--enable-tool", "tmux_capture"], false);
    let (mut ch, tools, caller) = (relay.channel, relay.tools, relay.pane);
    let relay_err = || std::fs::read_to_string(&relay.stderr).unwrap_or_default();
    let cap = raw_envelope(
        &tools,
        "tmux_capabilities",
        &ch.request(
            2,
            "tools/call",
            json!({"name": "tmux_capabilities", "arguments": {}}),
        ),
    );
    assert_eq!(
        cap["data"]["broker"]["caller_pane"],
        json!(caller),
        "test premise: the relay runs in {caller}; relay stderr: {}",
        relay_err()
    );
    assert_eq!(
        cap["data"]["broker"]["scope"], "session",
        "test premise: session scope"
    );
    let gen = cap["data"]["server_identity"]["generation"]
        .as_str()
        .unwrap()
        .to_string();
    let target_a = pane_ref(&gen, &a);

    // Out of scope: pane A is in another session.
    let denied = raw_envelope(
        &tools,
        "tmux_capture",
        &ch.request(
            3,
            "tools/call",
            json!({"name": "tmux_capture", "arguments": {"target": target_a}}),
        ),
    );
    assert_eq!(
        (
            denied["error"]["code"].as_str(),
            denied["error"]["delivery"].as_str()
        ),
        (Some("policy_denied"), Some("not_sent")),
        "{denied:#}"
    );
    let denied = raw_envelope(
        &tools,
        "tmux_capture",
        &ch.request(
            4,
            "tools/call",
            json!({"name": "tmux_capture", "arguments": {"target": target_a, "track": true}}),
        ),
    );
    assert_eq!(denied["error"]["code"], "policy_denied", "{denied:#}");
    // In scope: the caller's own session.
    let own = raw_envelope(
        &tools,
        "tmux_capture",
        &ch.request(
            5,
            "tools/call",
            json!({"name": "tmux_capture", "arguments": {"target": pane_ref(&gen, "%0")}}),
        ),
    );
    assert_eq!(own["ok"], json!(true), "{own:#}");

    // The person presses the key in pane A: the key binding runs `tmux-mcp cursor`.
    let at_press = tmux_rows(&srv, &a, 0);
    let (out, _) = run_with_timeout(
        tmux_mcp(&["cursor", "-S", srv.socket_str(), &a]),
        Duration::from_secs(15),
    );
    assert!(
        out.status.success(),
        "tmux-mcp cursor failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string();
    let (since_args, handed) = parse_handoff(&line);
    // The server as list_servers keys it: this one's socket is outside
    // tmux's socket directory, so its path.
    let key = std::fs::canonicalize(srv.socket()).unwrap();
    assert_eq!(handed["server"], json!(key.to_str().unwrap()), "{line}");
    assert_eq!(
        since_args,
        json!({"paneId": a, "cursor": handed["cursor"], "server": handed["server"]}),
        "the capture_since call names the same pane, cursor and server: {line}"
    );
    assert_eq!(handed["target"], target_a, "{handed:#}");
    let cursor = handed["cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("no cursor in {handed:#}"))
        .to_string();
    assert!(is_hex32(&cursor), "{cursor}");
    assert_eq!(
        srv.tmux(&["show-buffer", "-b", "mcp-cursor"]).trim_end(),
        line,
        "buffer mcp-cursor holds the same text"
    );

    // Pane A changes after the key press.
    pa.emit(&srv, b"alpha three (after the key press)\n");
    let now = tmux_rows(&srv, &a, 0);
    assert_ne!(now, at_press);

    // The agent pastes {target, cursor}.
    let resp = ch.request(
        6,
        "tools/call",
        json!({"name": "tmux_capture", "arguments": handed}),
    );
    let d = raw_envelope(&tools, "tmux_capture", &resp);
    assert_eq!(
        d["ok"],
        json!(true),
        "hand-off cursor refused: {d:#}; relay stderr: {}",
        relay_err()
    );
    let d = &d["data"];
    assert_eq!(d["mode"], "delta", "{d:#}");
    assert_eq!(d["base_capture_id"], json!(cursor));
    assert_eq!(d["target"], target_a);
    assert!(
        is_hex32(d["process_generation"].as_str().unwrap_or("")),
        "{d:#}"
    );
    assert_eq!(
        apply_splice(&at_press, d),
        now,
        "the splice against the state at the key press gives the current rows: {d:#}"
    );
    assert!(
        strings(&d["splice"]["rows"]).contains(&"alpha three (after the key press)\n".to_string()),
        "{d:#}"
    );
    assert_eq!(d["reset"], json!(false), "{d:#}");

    // The chain continues for the agent; the hand-off does not widen snapshots.
    pa.emit(&srv, b"alpha four\n");
    let later = tmux_rows(&srv, &a, 0);
    let d2 = raw_envelope(&tools, "tmux_capture", &ch.request(7, "tools/call", json!({"name": "tmux_capture", "arguments": {"target": target_a, "cursor": d["next_cursor"]}})));
    assert_eq!(
        d2["ok"],
        json!(true),
        "continuing the hand-off chain: {d2:#}"
    );
    assert_eq!(apply_splice(&now, &d2["data"]), later);
    let denied = raw_envelope(
        &tools,
        "tmux_capture",
        &ch.request(
            8,
            "tools/call",
            json!({"name": "tmux_capture", "arguments": {"target": target_a}}),
        ),
    );
    assert_eq!(denied["error"]["code"], "policy_denied", "{denied:#}");
}
