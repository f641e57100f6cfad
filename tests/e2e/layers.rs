//! The layers hold: which crate may depend on which (the compiler then keeps
//! them), and inside each crate no module imports one that imports it back.
//!
//! Architecture invariant: crates form core <- engine <- broker, core <-
//! client, plugin = client + broker; within a crate the module import graph
//! (every `use` tree and every `crate::`/`super::`/`self::` path, tests
//! excluded) has no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `tmux-mcp-*` crates a manifest's `[dependencies]` name.
fn project_deps(dir: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut deps = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" && line.starts_with("tmux-mcp-") {
            deps.insert(line.split([' ', '=', '.']).next().unwrap().to_string());
        }
    }
    deps
}

#[test]
fn crates_depend_only_downward() {
    let expected: &[(&str, &[&str])] = &[
        ("core", &[]),
        ("engine", &["tmux-mcp-core"]),
        ("broker", &["tmux-mcp-core", "tmux-mcp-engine"]),
        ("client", &["tmux-mcp-core"]),
        ("plugin", &["tmux-mcp-broker", "tmux-mcp-client"]),
    ];
    for (dir, want) in expected {
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(project_deps(dir), want, "{dir}/Cargo.toml [dependencies]");
    }
}

/// Architecture invariant: `core` holds no MCP concern: no schema crate and
/// no MCP crate among its dependencies (the published schemas of the core
/// types it serializes are the broker's, `toolkit::schemas::wire_schemas`).
#[test]
fn core_knows_nothing_of_mcp() {
    let text = std::fs::read_to_string(root().join("core/Cargo.toml")).unwrap();
    for banned in ["schemars", "rmcp", "jsonschema"] {
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(banned)),
            "core/Cargo.toml depends on {banned}"
        );
    }
}

/// A module path inside one crate (`[]` is the crate root).
type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("lib" | "mod" | "main")) {
        m.pop();
    }
    m
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every path a file names that starts at `crate`, `super` or `self`, as
/// segments; `#[cfg(test)]` items are skipped (a test may reach anywhere).
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Whether `item` is a `#[cfg(test)]` module, function, impl or import
/// (the checks here leave tests out).
fn is_test_item(item: &syn::Item) -> bool {
    match item {
        syn::Item::Mod(m) => is_cfg_test(&m.attrs),
        syn::Item::Fn(f) => is_cfg_test(&f.attrs),
        syn::Item::Impl(i) => is_cfg_test(&i.attrs),
        syn::Item::Use(u) => is_cfg_test(&u.attrs),
        _ => false,
    }
}

fn use_paths(prefix: &mut Vec<String>, tree: &syn::UseTree, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(prefix, &p.tree, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut v = prefix.clone();
            if n.ident != "self" {
                v.push(n.ident.to_string());
            }
            out.push(v);
        }
        syn::UseTree::Rename(r) => {
            let mut v = prefix.clone();
            v.push(r.ident.to_string());
            out.push(v);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(prefix, t, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_item(item) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        use_paths(&mut Vec::new(), &u.tree, &mut self.0);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.0
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The crate's file-level import graph: module -> the modules it names.
fn graph(dir: &str) -> BTreeMap<Module, BTreeSet<Module>> {
    let src = root().join(dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut edges = BTreeMap::new();
    for (m, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths::default();
        paths.visit_file(&ast);
        let mut to = BTreeSet::new();
        for p in paths.0 {
            let (mut base, rest): (Module, &[String]) = match p.first().map(String::as_str) {
                Some("crate") => (vec![], &p[1..]),
                Some("self") => (m.clone(), &p[1..]),
                Some("super") => {
                    let mut b = m.clone();
                    let mut i = 0;
                    while p.get(i).map(String::as_str) == Some("super") {
                        b.pop();
                        i += 1;
                    }
                    (b, &p[i..])
                }
                _ => continue,
            };
            // The longest module prefix the path names.
            let mut best = modules.contains_key(&base).then(|| base.clone());
            for seg in rest {
                base.push(seg.clone());
                if modules.contains_key(&base) {
                    best = Some(base.clone());
                } else {
                    break;
                }
            }
            if let Some(b) = best.filter(|b| b != m) {
                to.insert(b);
            }
        }
        edges.insert(m.clone(), to);
    }
    edges
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct T<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Module) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.edges.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_crate_has_an_import_circle() {
    for dir in ["core", "engine", "broker", "client"] {
        let g = graph(dir);
        assert!(g.len() > 1, "{dir}: no modules found");
        let c = cycles(&g);
        let shown: Vec<String> = c
            .iter()
            .map(|comp| {
                comp.iter()
                    .map(|m| m.join("::"))
                    .collect::<Vec<_>>()
                    .join(" <-> ")
            })
            .collect();
        assert!(c.is_empty(), "{dir}: import circles: {shown:#?}");
    }
}

/// The cycle finder finds a circle (so the test above can fail).
#[test]
fn the_cycle_finder_sees_a_circle() {
    let m = |s: &str| vec![s.to_string()];
    let mut g = BTreeMap::new();
    g.insert(m("a"), BTreeSet::from([m("b")]));
    g.insert(m("b"), BTreeSet::from([m("c")]));
    g.insert(m("c"), BTreeSet::from([m("a")]));
    g.insert(m("d"), BTreeSet::from([m("a")]));
    let c = cycles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].len(), 3);
}

/// The edges of `g` that break the broker's tools layering: a tool module
/// (`tools::x`, not the catalog `tools` itself) naming another tool module,
/// or a toolkit module naming `tools` or a tool.
fn tool_layer_breaches(g: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let is_tool = |m: &Module| m.len() == 2 && m[0] == "tools";
    let mut out = Vec::new();
    for (from, tos) in g {
        for to in tos {
            let breach = (is_tool(from) && is_tool(to) && from != to)
                || (from.first().map(String::as_str) == Some("toolkit")
                    && to.first().map(String::as_str) == Some("tools"));
            if breach {
                out.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    out
}

/// Architecture invariant (ARCHITECTURE.md "Adding a tool"): tools are
/// leaves. No tool module names another tool module, and the toolkit (the
/// one layer every tool is spelled over) never names the tools: what two
/// tools share lives in the toolkit, or in the engine.
#[test]
fn tools_are_leaves_over_the_toolkit() {
    let g = graph("broker");
    let tools = g.keys().filter(|m| m.len() == 2 && m[0] == "tools").count();
    assert!(
        tools > 30,
        "found only {tools} tool modules in broker/src/tools"
    );
    let bad = tool_layer_breaches(&g);
    assert!(
        bad.is_empty(),
        "tool modules naming each other, or the toolkit naming tools: {bad:#?}"
    );
}

/// The check sees a planted import: a tool naming another tool, and the
/// toolkit naming a tool, each fail it (so the test above can fail).
#[test]
fn the_tool_layer_check_sees_a_planted_import() {
    let mut g = graph("broker");
    assert!(tool_layer_breaches(&g).is_empty());
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Module>();
    g.get_mut(&m("tools::wait_for_idle"))
        .expect("tools::wait_for_idle exists")
        .insert(m("tools::wait_for_text"));
    g.get_mut(&m("toolkit::events"))
        .expect("toolkit::events exists")
        .insert(m("tools::wait"));
    assert_eq!(
        tool_layer_breaches(&g),
        [
            "toolkit::events -> tools::wait",
            "tools::wait_for_idle -> tools::wait_for_text"
        ]
    );
    // Parsed from source, too: a `use super::x` in a tool is an edge.
    let ast: syn::File = syn::parse_str("use super::wait_for_text::Watched; fn f() {}").unwrap();
    let mut paths = Paths::default();
    paths.visit_file(&ast);
    assert!(paths.0.contains(&vec![
        "super".to_string(),
        "wait_for_text".into(),
        "Watched".into()
    ]));
}

/// What a file outside the platform module must not hold (tests excluded):
/// each item a `cfg(target_os|target_env)`, a Linux-only call, or a Linux
/// path, with where it is.
#[derive(Default)]
struct LinuxSpecifics(Vec<String>);

/// Names only Linux has: pidfds, peer credentials, inotify, `TIOCGPTPEER`,
/// glibc's heap trim.
const LINUX_ONLY: &[&str] = &[
    "pidfd_open",
    "SYS_pidfd_open",
    "SO_PEERCRED",
    "SO_PEERPIDFD",
    "socket_peercred",
    "ucred",
    "inotify",
    "inotify_init1",
    "inotify_add_watch",
    "ioctl_tiocgptpeer",
    "malloc_trim",
];

impl<'ast> Visit<'ast> for LinuxSpecifics {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_item(item) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        let syn::Meta::List(list) = &a.meta else {
            return;
        };
        let text = list.tokens.to_string();
        if text.contains("target_os") || text.contains("target_env") {
            self.0.push(format!("cfg({text})"));
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(s) = p
            .segments
            .iter()
            .find(|s| LINUX_ONLY.contains(&&*s.ident.to_string()))
        {
            self.0.push(format!("a call of {}", s.ident));
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        let v = s.value();
        if v.starts_with("/proc") || v.starts_with("/dev/pts") {
            self.0.push(format!("the path {v:?}"));
        }
    }
}

fn linux_specifics(code: &str) -> Vec<String> {
    let file = syn::parse_file(code).expect("parses");
    let mut v = LinuxSpecifics::default();
    v.visit_file(&file);
    v.0
}

/// Architecture invariant (ARCHITECTURE.md "Platform seam"): no Linux-only
/// call, no Linux path and no `cfg(target_os)` outside `core/src/platform/`.
#[test]
fn linux_specifics_stay_behind_the_platform_seam() {
    let platform = root().join("core/src/platform");
    let mut found = Vec::new();
    for dir in ["core", "engine", "broker", "client", "plugin"] {
        let mut files = Vec::new();
        rust_files(&root().join(dir).join("src"), &mut files);
        for f in files.iter().filter(|f| !f.starts_with(&platform)) {
            let code = std::fs::read_to_string(f).unwrap();
            for what in linux_specifics(&code) {
                found.push(format!(
                    "{}: {what}",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "outside core/src/platform/:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_seam_check_sees_each_kind_of_linux_specific() {
    let found = linux_specifics(
        r#"
        #[cfg(target_os = "linux")]
        fn a() { let _ = std::fs::read("/proc/self/stat"); libc::inotify_init1(0); }
        fn b() { rustix::process::pidfd_open(p, f); }
        #[cfg(test)]
        mod tests { fn c() { let _ = "/dev/pts/1"; libc::malloc_trim(0); } }
        "#,
    );
    assert_eq!(
        found,
        [
            "cfg(target_os = \"linux\")",
            "the path \"/proc/self/stat\"",
            "a call of inotify_init1",
            "a call of pidfd_open",
        ]
    );
}

/// Every `unsafe` block, function and impl outside test code.
#[derive(Default)]
struct Unsafes(Vec<String>);

impl<'ast> Visit<'ast> for Unsafes {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_item(item) {
            syn::visit::visit_item(self, item);
        }
    }
    fn visit_expr_unsafe(&mut self, e: &'ast syn::ExprUnsafe) {
        self.0.push("an unsafe block".into());
        syn::visit::visit_expr_unsafe(self, e);
    }
    fn visit_signature(&mut self, s: &'ast syn::Signature) {
        if s.unsafety.is_some() {
            self.0.push(format!("unsafe fn {}", s.ident));
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if i.unsafety.is_some() {
            self.0.push("an unsafe impl".into());
        }
        syn::visit::visit_item_impl(self, i);
    }
}

fn unsafes(code: &str) -> Vec<String> {
    let file = syn::parse_file(code).expect("parses");
    let mut v = Unsafes::default();
    v.visit_file(&file);
    v.0
}

/// Architecture invariant (ARCHITECTURE.md "Platform seam"): no `unsafe`
/// outside `core/src/platform/`; everything else calls safe wrappers (rustix,
/// or the seam's own).
#[test]
fn no_unsafe_outside_the_platform_seam() {
    let platform = root().join("core/src/platform");
    let mut found = Vec::new();
    for dir in ["core", "engine", "broker", "client", "plugin"] {
        let mut files = Vec::new();
        rust_files(&root().join(dir).join("src"), &mut files);
        for f in files.iter().filter(|f| !f.starts_with(&platform)) {
            for what in unsafes(&std::fs::read_to_string(f).unwrap()) {
                found.push(format!(
                    "{}: {what}",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "unsafe outside core/src/platform/ (move it behind the seam, or use rustix):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_unsafe_check_sees_blocks_fns_and_impls() {
    let found = unsafes(
        r#"
        fn a() { let _ = unsafe { libc::getppid() }; }
        unsafe fn b() {}
        unsafe impl Send for X {}
        #[cfg(test)]
        mod tests { fn c() { unsafe { libc::getpid() }; } }
        "#,
    );
    assert_eq!(found, ["an unsafe block", "unsafe fn b", "an unsafe impl"]);
}

/// Architecture invariant: no function outside tests is over this many
/// lines, from its `fn` line to its closing brace. A longer one mixes phases:
/// name each phase, a function whose doc says why it is a step of its own.
const MAX_FN_LINES: usize = 100;

/// `code` with every comment, string and char literal blanked (newlines
/// kept), so that the braces and the `fn`s left are the code's own.
fn code_only(code: &str) -> Vec<u8> {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p)
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            loop {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break j;
                    }
                } else {
                    j += 1;
                }
            }
        } else if let Some(open) = raw_string_quote(b, i) {
            // A raw string: r"…", r#"…"#, br##"…"##.
            let hashes = rest[..open].iter().filter(|&&c| c == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = i + open + 1;
            body + b[body..]
                .windows(close.len())
                .position(|w| w == close)
                .unwrap()
                + close.len()
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && rest.get(1) == Some(&b'\\') {
            i + 3 + b[i + 3..].iter().position(|&c| c == b'\'').unwrap() + 1
        } else if let Some(len) = char_literal_len(code, i) {
            i + len
        } else {
            i += 1; // code, or a lifetime's quote
            continue;
        };
        for c in &mut out[i..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = end;
    }
    out
}

/// Where the opening quote of a raw string starting at `b[i]` is, relative
/// to `i` (`r"`, `r#"`, `br##"`), if one starts there.
fn raw_string_quote(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i..];
    let prefixed = rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br");
    let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let open = rest
        .iter()
        .position(|&c| c != b'b' && c != b'r' && c != b'#')?;
    (prefixed && word_start && rest[open] == b'"').then_some(open)
}

/// The length of an unescaped char literal (`'x'`, `'é'`) starting at
/// `code[i]`; `None` for a lifetime's quote.
fn char_literal_len(code: &str, i: usize) -> Option<usize> {
    let c = code.get(i + 1..)?.chars().next()?;
    (code.as_bytes()[i] == b'\'' && code.as_bytes().get(i + 1 + c.len_utf8()) == Some(&b'\''))
        .then_some(2 + c.len_utf8())
}

/// The index just past the group that opens at `b[open]` (`{`, `(` or `[`).
fn group_end(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced group at byte {open}")
}

/// Every `fn` with a body in `code`, in source order, with its length in
/// lines; `macro_rules!` bodies are skipped (syn does not see into them).
fn fn_spans(code: &str) -> Vec<(String, usize)> {
    let b = code_only(code);
    let line = |at: usize| b[..at].iter().filter(|&&c| c == b'\n').count();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let word_at = |at: usize| {
        let end = at
            + b[at..]
                .iter()
                .position(|&c| !ident(c))
                .unwrap_or(b.len() - at);
        (std::str::from_utf8(&b[at..end]).unwrap(), end)
    };
    let skip_space = |mut at: usize| {
        while at < b.len() && b[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !ident(b[i]) || (i > 0 && ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let (word, after) = word_at(i);
        i = after;
        if word == "macro_rules" {
            let open = after + b[after..].iter().position(|c| b"{([".contains(c)).unwrap();
            i = group_end(&b, open);
        } else if word == "fn" {
            let at = skip_space(after);
            if at >= b.len() || !(b[at].is_ascii_alphabetic() || b[at] == b'_') {
                continue; // a fn pointer type
            }
            let (name, mut j) = word_at(at);
            // The body's `{`, or the `;` of a declaration, outside the signature's groups.
            while !matches!(b[j], b'{' | b';') {
                j = if matches!(b[j], b'(' | b'[') {
                    group_end(&b, j)
                } else {
                    j + 1
                };
            }
            if b[j] == b'{' {
                found.push((name.to_string(), line(group_end(&b, j) - 1) - line(at) + 1));
            }
            i = at + name.len();
        }
    }
    found
}

/// Every function with a body, in source order, and whether it is test code
/// (under `#[cfg(test)]`, or a `#[test]` and what it holds).
#[derive(Default)]
struct Fns {
    in_test: usize,
    found: Vec<(String, bool)>,
}

impl Fns {
    fn enter(&mut self, sig: &syn::Signature, attrs: &[syn::Attribute]) -> bool {
        let test = is_cfg_test(attrs)
            || attrs
                .iter()
                .any(|a| a.path().segments.last().is_some_and(|s| s.ident == "test"));
        self.found
            .push((sig.ident.to_string(), test || self.in_test > 0));
        self.in_test += usize::from(test);
        test
    }
}

impl<'ast> Visit<'ast> for Fns {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_test_item(item) && !matches!(item, syn::Item::Fn(_));
        self.in_test += usize::from(test);
        syn::visit::visit_item(self, item);
        self.in_test -= usize::from(test);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let test = self.enter(&f.sig, &f.attrs);
        syn::visit::visit_item_fn(self, f);
        self.in_test -= usize::from(test);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let test = self.enter(&f.sig, &f.attrs);
        syn::visit::visit_impl_item_fn(self, f);
        self.in_test -= usize::from(test);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if f.default.is_some() {
            let test = self.enter(&f.sig, &f.attrs);
            syn::visit::visit_trait_item_fn(self, f);
            self.in_test -= usize::from(test);
        }
    }
}

/// The functions of `code` outside tests that are over `MAX_FN_LINES`, with
/// their lengths. syn says which functions there are and which are tests;
/// the lengths come from the text (syn's spans carry no lines here), and the
/// two must name the same functions in the same order.
fn long_fns(code: &str) -> Result<Vec<(String, usize)>, String> {
    let file = syn::parse_file(code).map_err(|e| e.to_string())?;
    let mut fns = Fns::default();
    fns.visit_file(&file);
    let spans = fn_spans(code);
    let names = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
    if names(fns.found.iter().map(|f| &f.0).collect())
        != names(spans.iter().map(|s| &s.0).collect())
    {
        return Err(format!(
            "syn and the line counter disagree on the functions:\n  syn: {:?}\n  text: {:?}",
            fns.found.iter().map(|f| &f.0).collect::<Vec<_>>(),
            spans.iter().map(|s| &s.0).collect::<Vec<_>>()
        ));
    }
    Ok(fns
        .found
        .into_iter()
        .zip(spans)
        .filter(|((_, test), (_, lines))| !test && *lines > MAX_FN_LINES)
        .map(|((name, _), (_, lines))| (name, lines))
        .collect())
}

/// The modules `#[cfg(test)] mod name;` declares in `file` (test code in a
/// file of its own).
fn test_modules(src: &Path, file: &Path, ast: &syn::File) -> Vec<Module> {
    // `a/b.rs`'s children live in `a/b/`, `a/mod.rs`'s in `a/`: either way
    // the child's module path is the file's plus its name.
    let parent = module_of(src, file);
    ast.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() && is_cfg_test(&m.attrs) => {
                let mut child = parent.clone();
                child.push(m.ident.to_string());
                Some(child)
            }
            _ => None,
        })
        .collect()
}

#[test]
fn no_function_outside_tests_is_over_100_lines() {
    let mut found = Vec::new();
    for dir in ["core", "engine", "broker", "client", "plugin"] {
        let src = root().join(dir).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut parsed = Vec::new();
        let mut tests = BTreeSet::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            tests.extend(test_modules(&src, &f, &ast));
            parsed.push((f, text));
        }
        for (f, text) in parsed
            .iter()
            .filter(|(f, _)| !tests.contains(&module_of(&src, f)))
        {
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            for (name, lines) in long_fns(text).unwrap_or_else(|e| panic!("{rel}: {e}")) {
                found.push(format!("{rel}: fn {name}, {lines} lines"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "functions over {MAX_FN_LINES} lines (split each into named steps, \
         a function each whose doc says why):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_length_check_counts_code_lines_and_leaves_tests_out() {
    let body = |n: usize| "    let _ = 1;\n".repeat(n);
    // `fn` line + n body lines + `}` line.
    let code = format!(
        "fn short() {{\n{}}}\n\
         fn long(a: [u8; 2]) -> Result<(), ()> {{\n\
         let s = \"}} fn fake() {{\"; let r = r#\"}}\"#; let c = '{{'; let l: &'static str = s;\n\
         // }} a comment\n/* {{ nested /* }} */ */\n{}}}\n\
         trait T {{ fn declared(&self); fn defaulted(&self) {{\n{}}} }}\n\
         macro_rules! m {{ () => {{ fn in_macro() {{}} }} }}\n\
         #[test]\nfn a_test() {{\n{}}}\n\
         #[cfg(test)]\nmod tests {{ fn helper() {{\n{}}} }}\n",
        body(98),
        body(96),
        body(99),
        body(200),
        body(200)
    );
    assert_eq!(
        long_fns(&code).unwrap(),
        [("long".to_string(), 101), ("defaulted".to_string(), 101)]
    );
}

/// Architecture invariant: no two modules of the workspace share a name
/// (`since` in the engine and in the broker read as one): each module's
/// last path segment is its own. The platform backends are the exception by
/// design: `linux/X` and `darwin/X` are one interface's two sides.
#[test]
fn no_two_modules_share_a_name() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for dir in ["core", "engine", "broker", "client", "plugin"] {
        let src = root().join(dir).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let rel = f.strip_prefix(&src).unwrap();
            let parts: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            let name = match parts.last().map(String::as_str) {
                Some("mod") => parts[parts.len() - 2].clone(),
                Some("lib" | "main") if parts.len() == 1 => continue,
                _ => parts.last().unwrap().clone(),
            };
            if parts.first().is_some_and(|p| p == "bin") {
                continue;
            }
            let path = format!("{dir}::{}", parts.join("::").trim_end_matches("::mod"));
            if path.starts_with("core::platform::linux::")
                || path.starts_with("core::platform::darwin::")
            {
                let side =
                    path.replacen("::linux::", "::SIDE::", 1)
                        .replacen("::darwin::", "::SIDE::", 1);
                seen.entry(name).or_default().push(side);
            } else {
                seen.entry(name).or_default().push(path);
            }
        }
    }
    let twice: Vec<String> = seen
        .into_iter()
        .filter_map(|(name, mut paths)| {
            paths.sort();
            paths.dedup();
            (paths.len() > 1).then(|| format!("{name}: {}", paths.join(", ")))
        })
        .collect();
    assert!(
        twice.is_empty(),
        "modules that share a name (rename one by what it is):\n{}",
        twice.join("\n")
    );
}

/// The toolkit's files relative to `broker/src/toolkit`, every depth.
fn toolkit_files() -> Vec<PathBuf> {
    let dir = root().join("broker/src/toolkit");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files
        .into_iter()
        .map(|f| f.strip_prefix(&dir).unwrap().to_path_buf())
        .collect()
}

/// The toolkit files out of place: a module directly under `toolkit/` (but
/// its `mod.rs`), a role directory without a `mod.rs`, or a module nested
/// deeper than a role directory.
fn loose_toolkit_modules(files: &[PathBuf]) -> Vec<String> {
    let roles: BTreeSet<&Path> = files
        .iter()
        .filter(|f| f.components().count() == 2 && f.ends_with("mod.rs"))
        .filter_map(|f| f.parent())
        .collect();
    files
        .iter()
        .filter(|f| match f.components().count() {
            1 => *f != Path::new("mod.rs"),
            2 => !f.parent().is_some_and(|role| roles.contains(role)),
            _ => true,
        })
        .map(|f| f.display().to_string())
        .collect()
}

/// Architecture invariant (ARCHITECTURE.md, the `toolkit/` table): the
/// toolkit is grouped by role. Every module lives in one role directory
/// (`call/`, `schemas/`, `target/`, `seed/`, `libtmux/`, `acting/`,
/// `records/`, `events/`, `typing/`, `shell/`), none loose beside them and
/// none nested deeper, so a module's path says what it is for.
#[test]
fn toolkit_modules_are_grouped_by_role() {
    let files = toolkit_files();
    assert!(files.len() > 30, "found only {} toolkit files", files.len());
    let loose = loose_toolkit_modules(&files);
    assert!(
        loose.is_empty(),
        "toolkit modules outside a role directory (move each into the role \
         it serves, and name it in ARCHITECTURE.md's toolkit table): {loose:?}"
    );
}

/// The check sees a planted loose module, one in a directory that is no
/// role (no `mod.rs`), and one nested a level deeper (so the test above can
/// fail).
#[test]
fn the_grouping_check_sees_a_loose_module() {
    let mut files = toolkit_files();
    assert!(loose_toolkit_modules(&files).is_empty());
    files.push(PathBuf::from("refs.rs"));
    files.push(PathBuf::from("misc/helpers.rs"));
    files.push(PathBuf::from("target/deeper/x.rs"));
    assert_eq!(
        loose_toolkit_modules(&files),
        ["refs.rs", "misc/helpers.rs", "target/deeper/x.rs"]
    );
}

/// The names of the paths a type spells (`Result<Target, ToolOutput>`:
/// `Result`, `Target`, `ToolOutput`).
#[derive(Default)]
struct TypeNames(Vec<String>);

impl<'ast> Visit<'ast> for TypeNames {
    fn visit_path_segment(&mut self, s: &'ast syn::PathSegment) {
        self.0.push(s.ident.to_string());
        syn::visit::visit_path_segment(self, s);
    }
}

/// The toolkit's public functions that build a tool's answer (their return
/// type names `ToolOutput`), by name: the modules each is defined in,
/// tests left out.
fn result_builders(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut by_name: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in files {
        let ast: syn::File = syn::parse_str(code).unwrap_or_else(|e| panic!("{module}: {e}"));
        for item in &ast.items {
            let syn::Item::Fn(f) = item else { continue };
            if !matches!(f.vis, syn::Visibility::Public(_)) || is_test_item(item) {
                continue;
            }
            let syn::ReturnType::Type(_, ty) = &f.sig.output else {
                continue;
            };
            let mut names = TypeNames::default();
            names.visit_type(ty);
            if names.0.iter().any(|n| n == "ToolOutput") {
                by_name
                    .entry(f.sig.ident.to_string())
                    .or_default()
                    .insert(module.clone());
            }
        }
    }
    by_name
}

/// The names two toolkit modules both give a builder of a tool's answer,
/// but the family-edge words each family has once: the one target resolver
/// (`target`), its refusals (`refused`) and a tmux command's failure
/// (`failed`), in `seed::mutation` and `libtmux::wording`.
fn shared_result_builders(by_name: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let edges: BTreeSet<String> = ["seed::mutation", "libtmux::wording"]
        .map(String::from)
        .into();
    by_name
        .iter()
        .filter(|(name, modules)| {
            modules.len() > 1
                && !(["target", "refused", "failed"].contains(&name.as_str()) && **modules == edges)
        })
        .map(|(name, modules)| {
            format!(
                "{name}: {}",
                modules.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

fn toolkit_sources() -> Vec<(String, String)> {
    let dir = root().join("broker/src/toolkit");
    toolkit_files()
        .into_iter()
        .map(|rel| {
            let module = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| s != "mod")
                .collect::<Vec<_>>()
                .join("::");
            (module, std::fs::read_to_string(dir.join(&rel)).unwrap())
        })
        .collect()
}

/// Architecture invariant (issue 51): one constructor per result kind per
/// family, one target resolver worded at each family's edge. No two toolkit
/// modules give a builder of a tool's answer the same name (the seed
/// family's `envelope::error` beside a libtmux `error`, two `fail`s, four
/// `resolve`s read as one thing and did different ones), but the edge words
/// each family has once, in `seed::mutation` and `libtmux::wording`.
#[test]
fn each_result_builder_has_one_name() {
    let by_name = result_builders(&toolkit_sources());
    assert!(
        by_name.len() > 15,
        "found only {} result builders",
        by_name.len()
    );
    let shared = shared_result_builders(&by_name);
    assert!(
        shared.is_empty(),
        "toolkit modules that give a builder of a tool's answer the same name \
         (name each by what it builds, or word the one resolver at the \
         family's edge): {shared:#?}"
    );
}

/// The check sees a second `error` and a third `target` planted beside the
/// families' own (so the test above can fail).
#[test]
fn the_builder_name_check_sees_a_planted_twin() {
    let mut files = toolkit_sources();
    files.push((
        "libtmux::action_words".into(),
        "pub fn error(m: &str) -> ToolOutput { todo!() }\n\
         pub async fn target(s: &Session) -> Result<Target, ToolOutput> { todo!() }"
            .into(),
    ));
    let shared = shared_result_builders(&result_builders(&files));
    assert_eq!(shared.len(), 2, "{shared:#?}");
    assert!(
        shared[0].starts_with("error: ") && shared[1].starts_with("target: "),
        "{shared:#?}"
    );
}
