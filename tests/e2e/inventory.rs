//! Lists that name every tool are the catalog's (rust-analyzer's sourcegen
//! habit): each is derived from `tools::CATALOG` and the tools' own
//! declarations, or checked against them here, and a failing check says how
//! to regenerate the list.
//!
//! Architecture invariant: README.md's tools table is `CATALOG`, in catalog
//! order, with each tool's default and tier as the catalog declares them.
//! Regenerate it with
//! `TMUX_MCP_UPDATE_DOCS=1 cargo test -p tmux-mcp-e2e --test e2e -- inventory::`:
//! the prose of a row kept, a new tool's row filled from its declaration.

use std::collections::HashMap;
use tmux_mcp_broker::toolkit::call::spec::{Listed, Tier, ToolSpec};
use tmux_mcp_e2e::repo_root;

const HEADER: &str = "| tool | default | tier | what it does |";

/// The default column: `on` (listed for every agent), `tier` (once the
/// agent's tier reaches the tool's), `opt-in`, or `with X`.
fn default_of(t: &ToolSpec) -> String {
    match t.listed {
        Listed::AtTier if t.tier() == Tier::Readonly => "on".into(),
        Listed::AtTier => "tier".into(),
        Listed::OptIn => "opt-in".into(),
        Listed::With(other) => format!("with `{other}`"),
    }
}

/// The README's table as it is, and the table the catalog makes of it:
/// (the text before the table, its rows, the text after; the rows it
/// should have).
fn tables(readme: &str) -> (String, Vec<String>, String, Vec<String>) {
    let start = readme
        .find(HEADER)
        .expect("README.md has the tools table header");
    let body_start = start + readme[start..].find('\n').unwrap() + 1; // the header line
    let body_start = body_start + readme[body_start..].find('\n').unwrap() + 1; // |---|
    let mut end = body_start;
    let mut rows = Vec::new();
    for line in readme[body_start..].split_inclusive('\n') {
        if !line.starts_with("| `") {
            break;
        }
        rows.push(line.trim_end_matches('\n').to_string());
        end += line.len();
    }
    // The prose kept per tool: the last cell of its row.
    let prose: HashMap<String, String> = rows
        .iter()
        .filter_map(|r| {
            let name = r.strip_prefix("| `")?.split('`').next()?.to_string();
            // The prose is the rest after the third separator (it may hold
            // an escaped `\|` of its own).
            let cells: Vec<&str> = r.splitn(4, " | ").collect();
            Some((name, cells.get(3)?.strip_suffix(" |")?.to_string()))
        })
        .collect();
    let want = tmux_mcp_broker::tools::CATALOG
        .iter()
        .map(|t| {
            let what = prose.get(t.name).cloned().unwrap_or_else(|| {
                let doc = if t.details.is_empty() {
                    t.description
                } else {
                    t.details
                };
                doc.replace('|', "\\|")
            });
            format!(
                "| `{}` | {} | {} | {what} |",
                t.name,
                default_of(t),
                t.tier().as_str()
            )
        })
        .collect();
    (
        readme[..body_start].to_string(),
        rows,
        readme[end..].to_string(),
        want,
    )
}

#[test]
fn the_readme_tools_table_is_the_catalog() {
    let path = repo_root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (before, rows, after, want) = tables(&readme);
    if rows == want {
        return;
    }
    if std::env::var_os("TMUX_MCP_UPDATE_DOCS").is_some() {
        let text = format!("{before}{}\n{after}", want.join("\n"));
        std::fs::write(&path, text).unwrap();
        return;
    }
    let name = |r: &String| r.split('`').nth(1).unwrap_or_default().to_string();
    let have: Vec<String> = rows.iter().map(name).collect();
    let wanted: Vec<String> = want.iter().map(name).collect();
    let differing: Vec<&String> = want.iter().filter(|w| !rows.contains(w)).collect();
    panic!(
        "README.md's tools table is not the catalog (tools {have:?}, catalog {wanted:?}); rows that differ (as the catalog makes them):\n{}\n\nRegenerate it: TMUX_MCP_UPDATE_DOCS=1 cargo test -p tmux-mcp-e2e --test e2e -- inventory::",
        differing
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The check fails on a table that lost a row or says another tier (so the
/// test above can fail), and the regenerated table passes it.
#[test]
fn the_table_check_sees_a_wrong_table() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let (before, _, after, want) = tables(&readme);
    let good = format!("{before}{}\n{after}", want.join("\n"));
    let (_, rows, _, want2) = tables(&good);
    assert_eq!(rows, want2, "a regenerated table is the catalog");
    let dropped = good.replacen(&format!("{}\n", want[1]), "", 1);
    let (_, rows, _, want3) = tables(&dropped);
    assert_ne!(rows, want3, "a missing row is seen");
    let retiered = good.replacen("| on | readonly |", "| on | mutating |", 1);
    let (_, rows, _, want4) = tables(&retiered);
    assert_ne!(rows, want4, "a wrong tier is seen");
}

/// The modules a crate's `src/` holds: each `name.rs` and each directory
/// with a `mod.rs` (as `name/`), but the crate roots.
fn modules_in(src: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            if e.path().join("mod.rs").is_file() {
                Some(format!("{name}/"))
            } else {
                let m = name.strip_suffix(".rs")?;
                (!["lib", "main"].contains(&m)).then(|| m.to_string())
            }
        })
        .collect()
}

/// The backticked names in the first cell of each row of the first
/// `| module | what it is |` table after `heading`.
fn modules_named(doc: &str, heading: &str) -> std::collections::BTreeSet<String> {
    let at = doc
        .find(heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has {heading:?}"));
    let rest = &doc[at..];
    let table = &rest[rest
        .find("| module | what it is |")
        .expect("a module table")..];
    let ticked = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .flat_map(|l| ticked(l.split('|').nth(1).unwrap_or_default()))
        .collect()
}

/// The second cell of the row for `module` in the first module table after
/// `heading` ("" when there is none).
fn row_text(doc: &str, heading: &str, module: &str) -> String {
    let rest = &doc[doc.find(heading).unwrap_or(0)..];
    let table = &rest[rest.find("| module | what it is |").unwrap_or(0)..];
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .find(|l| {
            l.split('|')
                .nth(1)
                .unwrap_or_default()
                .contains(&format!("`{module}`"))
        })
        .and_then(|l| l.split('|').nth(2))
        .unwrap_or_default()
        .to_string()
}

/// Architecture invariant: ARCHITECTURE.md's module tables name every
/// module of core, engine, broker and client, and only those; its
/// `toolkit/` table every toolkit role directory, and each role's row every
/// module in it.
#[test]
fn the_architecture_map_names_every_module() {
    let root = repo_root();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut wrong = Vec::new();
    for (dir, heading) in [
        ("core", "### `core/`"),
        ("engine", "### `engine/`"),
        ("broker", "### `broker/`"),
        ("client", "### `client/`"),
    ] {
        let have = modules_in(&root.join(dir).join("src"));
        let named = modules_named(&doc, heading);
        for m in have.difference(&named) {
            wrong.push(format!(
                "{dir}/src: `{m}` is not in ARCHITECTURE.md's table"
            ));
        }
        for m in named.difference(&have) {
            wrong.push(format!(
                "ARCHITECTURE.md's {dir} table names `{m}`, which {dir}/src does not have"
            ));
        }
    }
    let mut have = modules_in(&root.join("broker/src/toolkit"));
    have.remove("mod");
    let named = modules_named(&doc, "**`toolkit/`**");
    for m in have.difference(&named) {
        wrong.push(format!(
            "broker/src/toolkit: `{m}` is not in ARCHITECTURE.md's toolkit table"
        ));
    }
    for m in named.difference(&have) {
        wrong.push(format!(
            "ARCHITECTURE.md's toolkit table names `{m}`, which broker/src/toolkit does not have"
        ));
    }
    // Each role directory's row names its modules in its second cell.
    for role in have.iter().filter(|m| m.ends_with('/')) {
        let row = row_text(&doc, "**`toolkit/`**", role);
        for m in modules_in(&root.join("broker/src/toolkit").join(role)) {
            if m != "mod" && !row.contains(&format!("`{m}`")) {
                wrong.push(format!(
                    "ARCHITECTURE.md's toolkit row `{role}` does not name its module `{m}`"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's map is not the code (add or remove the module's row):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_map_check_sees_a_missing_and_an_extra_module() {
    let doc = "### `x/`\n\n| module | what it is |\n|---|---|\n| `a`, `b/` | two |\n| `c` | one |\n\nAfter.";
    let named = modules_named(doc, "### `x/`");
    assert_eq!(named.into_iter().collect::<Vec<_>>(), ["a", "b/", "c"]);
}

/// The sentences of a Markdown text's prose (code blocks, tables and
/// headings left out): each paragraph split after `.`, `!` or `?` followed
/// by a space and a capital, a backtick, `*`, `[`, `(` or `-`.
fn prose_sentences(doc: &str) -> Vec<String> {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || line.starts_with('|') || line.starts_with('#') || line.trim().is_empty() {
            if !current.is_empty() {
                paragraphs.push(std::mem::take(&mut current));
            }
            continue;
        }
        current.push(' ');
        current.push_str(line.trim());
    }
    paragraphs.push(current);
    let mut out = Vec::new();
    for p in paragraphs {
        let chars: Vec<char> = p.trim().chars().collect();
        let mut start = 0;
        for i in 0..chars.len() {
            let ends = matches!(chars[i], '.' | '!' | '?')
                && chars.get(i + 1) == Some(&' ')
                && chars
                    .get(i + 2)
                    .is_some_and(|c| c.is_uppercase() || "`*[(-".contains(*c));
            if ends || i + 1 == chars.len() {
                let s: String = chars[start..=i].iter().collect();
                if s.split_whitespace().count() >= 2 {
                    out.push(s.trim().to_string());
                }
                start = i + 1;
            }
        }
    }
    out
}

/// ARCHITECTURE.md is a map read in passing: short sentences, at most 20
/// words on average (issue 51).
#[test]
fn the_architecture_map_is_written_in_short_sentences() {
    let doc = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let sentences = prose_sentences(&doc);
    let words: Vec<usize> = sentences
        .iter()
        .map(|s| s.split_whitespace().count())
        .collect();
    let average = words.iter().sum::<usize>() as f64 / words.len() as f64;
    let mut longest: Vec<(usize, &String)> = words.iter().copied().zip(&sentences).collect();
    longest.sort_by_key(|b| std::cmp::Reverse(b.0));
    assert!(
        average <= 20.0,
        "ARCHITECTURE.md's sentences average {average:.1} words (at most 20); the longest:\n{}",
        longest
            .iter()
            .take(5)
            .map(|(n, s)| format!("{n}: {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_sentence_counter_splits_prose_only() {
    let doc = "# Title\n\nOne two three. Four five `six`.\n\n| a | b |\n\n```\nnot. Prose.\n```\nSeven eight.";
    assert_eq!(
        prose_sentences(doc),
        ["One two three.", "Four five `six`.", "Seven eight."]
    );
}

/// The lines (1-based) of `doc` that open a table whose first column is
/// `module`: a copy of the map.
fn module_tables(doc: &str) -> Vec<usize> {
    doc.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim_start()
                .strip_prefix('|')
                .and_then(|row| row.split('|').next())
                .is_some_and(|cell| cell.trim().eq_ignore_ascii_case("module"))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// One map (issue 51): ARCHITECTURE.md's code map names the modules, and
/// each module's own `//!` doc says what it holds. docs/internals.md says
/// how things work and keeps no `| module |` table, a second copy that goes
/// stale.
#[test]
fn internals_md_holds_no_second_copy_of_the_map() {
    let doc = std::fs::read_to_string(repo_root().join("docs/internals.md")).unwrap();
    let found = module_tables(&doc);
    assert!(
        found.is_empty(),
        "docs/internals.md has a `| module |` table at line(s) {found:?}, a second copy of the map. \
         A module's row goes in ARCHITECTURE.md's code map (checked by \
         the_architecture_map_names_every_module); what the module holds in detail goes in its own \
         `//!` doc (a tool's in broker/src/tools/<tool>.rs)."
    );
}

#[test]
fn the_copy_check_sees_a_module_table() {
    let doc = "Prose.\n\n| module | what it is |\n|---|---|\n| `a` | one |\n";
    assert_eq!(module_tables(doc), [3]);
    assert!(module_tables("| tool | default |\n|---|---|\n").is_empty());
    let map = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    assert!(
        !module_tables(&map).is_empty(),
        "the check finds ARCHITECTURE.md's own module tables"
    );
}

/// The anchor GitHub gives a Markdown heading: lower case, every character
/// but letters, digits, `-`, `_` and spaces dropped, spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A Markdown text without its fenced code blocks.
fn outside_code(doc: &str) -> Vec<&str> {
    let mut fenced = false;
    doc.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of a Markdown text's headings; a repeated heading's later
/// anchors get `-1`, `-2`, … as GitHub numbers them.
fn anchors(doc: &str) -> std::collections::BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    outside_code(doc)
        .into_iter()
        .filter_map(|l| {
            let text = l.trim_start_matches('#');
            (text.len() < l.len() && l.len() - text.len() <= 6 && text.starts_with(' '))
                .then(|| anchor_of(text))
        })
        .map(|a| {
            let n = seen.entry(a.clone()).or_default();
            *n += 1;
            match *n {
                1 => a,
                n => format!("{a}-{}", n - 1),
            }
        })
        .collect()
}

/// The targets of a Markdown text's relative links, `[text](target)` with
/// no scheme, outside code blocks.
fn relative_links(doc: &str) -> Vec<String> {
    outside_code(doc)
        .into_iter()
        .flat_map(|l| l.split("](").skip(1))
        .filter_map(|rest| rest.split([')', ' ']).next())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .map(str::to_string)
        .collect()
}

/// Every relative link of README.md, ARCHITECTURE.md and docs/ names a file
/// that exists and, with a `#`, a heading of that file: moving or renaming
/// a section keeps the pages that point at it right.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = repo_root();
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let doc = std::fs::read_to_string(page).unwrap();
        let shown = page.strip_prefix(&root).unwrap().display().to_string();
        for link in relative_links(&doc) {
            checked += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{shown}: {link}: no such file"));
            } else if !anchor.is_empty()
                && target.extension().is_some_and(|x| x == "md")
                && !anchors(&std::fs::read_to_string(&target).unwrap()).contains(anchor)
            {
                broken.push(format!("{shown}: {link}: no heading with that anchor"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: the parser broke"
    );
    assert!(
        broken.is_empty(),
        "links that do not resolve (fix the link, or the heading it names):\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_reads_anchors_and_links_as_github_does() {
    assert_eq!(anchor_of(" A request, end to end"), "a-request-end-to-end");
    assert_eq!(
        anchor_of(" `core/` — `tmux-mcp-core`"),
        "core--tmux-mcp-core"
    );
    let doc = "# Two\n\n## Two\n\n```\n# not\n[x](gone.md)\n```\n[a](b.md#c) and [d](#two-1), [w](https://x.y)";
    assert_eq!(
        anchors(doc).into_iter().collect::<Vec<_>>(),
        ["two", "two-1"]
    );
    assert_eq!(relative_links(doc), ["b.md#c", "#two-1"]);
}
