//! How `tools/list` publishes a tool: its enforced input schema (every
//! integer bounded), the lean one it lists, its annotations and tier.

use crate::toolkit::call::spec::{Family, ToolSpec, Toolset};
use crate::toolkit::schemas::derived;
use crate::toolkit::target::qualified;
use serde_json::{json, Value};

/// The `_meta` key of a tool's safety tier in `tools/list`.
pub const TIER_META: &str = "tmux-mcp/tier";

/// Tools whose input schema is a seed contract, published byte for byte.
const CONTRACT_INPUTS: &[&str] = &["tmux_capture", "capture_pane", "snapshot_pane"];

impl ToolSpec {
    /// The input schema as enforced, with every argument's whole description:
    /// every integer bounded by what the broker can hold, a contract's too
    /// (so `start: 2^63` is refused naming `start` and its maximum, not by a
    /// decoder that cannot say which field). The tool's reference shows this one.
    pub fn full_input_schema(&self) -> Value {
        let mut schema = (self.input_schema)();
        derived::bound_integers(&mut schema);
        schema
    }

    /// The input schema as published in `tools/list`: the enforced one made
    /// lean ([`derived::lean_input`]: first paragraphs of descriptions, none of
    /// the bounds that only say how the broker stores a value). It accepts
    /// everything the enforced one does, so it stays true; what it leaves out
    /// is still refused by name. A contract is published as it is.
    ///
    /// `additionalProperties: false` and defaults of `false`/`[]`/`{}` are
    /// left out too ([`derived::open_objects`]: every tool refuses an argument
    /// it does not know, naming it, so saying so costs each agent's context
    /// and tells its model nothing it acts on). The Python toolset keeps
    /// them: it publishes tmux-python/libtmux-mcp's shape, and so declares
    /// the `server` every tool takes (`route::server_schema`).
    pub fn published_input_schema(&self, toolset: Toolset) -> Value {
        if CONTRACT_INPUTS.contains(&self.name) {
            // Byte for byte: only the bounds the broker adds are left out.
            return (self.input_schema)();
        }
        let mut schema = self.full_input_schema();
        derived::lean_input(&mut schema);
        match toolset {
            Toolset::Default => derived::open_objects(&mut schema),
            // Closed objects: `server` (B.7) is declared, so a client that
            // checks arguments itself lets it through.
            Toolset::Python => declare_server(
                &mut schema,
                &crate::toolkit::call::route::server_schema(self.across_servers),
            ),
        }
        schema
    }
}

/// Adds `server` to an object schema's properties: the root's, or, where the
/// root is variants (`anyOf`/`oneOf` of closed objects), each variant's.
fn declare_server(schema: &mut Value, server: &Value) {
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    let mut variants = false;
    for key in ["anyOf", "oneOf"] {
        for v in root
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
                props.insert("server".into(), server.clone());
                variants = true;
            }
        }
    }
    if !variants && root.get("type") == Some(&json!("object")) {
        let props = root.entry("properties").or_insert_with(|| json!({}));
        props["server"] = server.clone();
    }
}

impl ToolSpec {
    /// The output schema as published: the libtmux family's ids may be
    /// another server's, qualified (`work:%3`, `target::qualified`), so its
    /// bare id patterns are published qualifiable; a contract's are bare
    /// (its results keep bare ids).
    pub fn published_output_schema(&self) -> Value {
        match self.family {
            Family::Libtmux if self.across_servers => {
                crate::toolkit::call::route::across_schema(qualified::qualifiable((self
                    .output_schema)(
                )))
            }
            Family::Libtmux => qualified::qualifiable((self.output_schema)()),
            Family::Seed => (self.output_schema)(),
        }
    }
}

/// The `tools/list` entry of one tool, as `toolset` publishes it.
pub fn describe(t: &ToolSpec, toolset: Toolset) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": t.published_input_schema(toolset),
        "outputSchema": t.published_output_schema(),
        "annotations": t.published_annotations(),
        // The tier the broker enforces (from the honest annotations), so a
        // client can tell it even where the annotations are a seed's verbatim.
        "_meta": { TIER_META: t.tier().as_str() },
    })
}

#[cfg(test)]
mod tests {

    /// Nothing published uses a non-standard `format` (schemars writes
    /// `uint64`, `int32`, `double` …) or a bare boolean subschema.
    #[test]
    fn published_schemas_use_standard_keywords_only() {
        fn walk(tool: &str, path: &str, v: &serde_json::Value, bad: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(f) = m.get("format").and_then(serde_json::Value::as_str) {
                        if !crate::toolkit::schemas::derived::STANDARD_FORMATS.contains(&f) {
                            bad.push(format!("{tool} {path}/format = {f}"));
                        }
                    }
                    for key in ["properties", "patternProperties", "$defs"] {
                        for (name, sub) in m
                            .get(key)
                            .and_then(serde_json::Value::as_object)
                            .into_iter()
                            .flatten()
                        {
                            if sub.is_boolean() {
                                bad.push(format!(
                                    "{tool} {path}/{key}/{name} is the boolean schema {sub}"
                                ));
                            }
                        }
                    }
                    for (k, sub) in m {
                        walk(tool, &format!("{path}/{k}"), sub, bad);
                    }
                }
                serde_json::Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, sub)| walk(tool, &format!("{path}/{i}"), sub, bad)),
                _ => {}
            }
        }
        let mut bad = Vec::new();
        for set in [
            crate::toolkit::call::spec::Toolset::Default,
            crate::toolkit::call::spec::Toolset::Python,
        ] {
            for t in crate::tools::catalog(set) {
                let listed = super::describe(t, set);
                walk(t.name, "inputSchema", &listed["inputSchema"], &mut bad);
                walk(t.name, "outputSchema", &listed["outputSchema"], &mut bad);
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// A client that checks arguments against the Python toolset's closed
    /// objects lets `server` through on every tool but the contracts
    /// published byte for byte, and the declared rule is the enforced one.
    #[test]
    fn the_python_toolset_declares_server_where_its_objects_are_closed() {
        use super::CONTRACT_INPUTS;
        use crate::toolkit::call::spec::{Sample, Toolset};
        use serde_json::json;
        let at = Sample {
            pane: "%0",
            generation: "0123456789abcdef0123456789abcdef",
        };
        let mut checked = 0;
        for t in crate::tools::catalog(Toolset::Python) {
            if CONTRACT_INPUTS.contains(&t.name) {
                continue;
            }
            let schema = t.published_input_schema(Toolset::Python);
            assert!(
                schema.to_string().contains("\"server\":{"),
                "{}: no server",
                t.name
            );
            let v = jsonschema::validator_for(&schema).unwrap();
            let mut args = t.sample.map(|f| f(&at)).unwrap_or_else(|| json!({}));
            let base = v.is_valid(&args);
            args["server"] = json!("work");
            assert_eq!(v.is_valid(&args), base, "{}: {schema:#}", t.name);
            args["server"] = json!("");
            assert!(!v.is_valid(&args), "{}: an empty key", t.name);
            args["server"] = json!(["work", "ssh:devbox"]);
            assert_eq!(v.is_valid(&args), base && t.across_servers, "{}", t.name);
            checked += 1;
        }
        assert!(checked > 30, "{checked}");
    }
}
