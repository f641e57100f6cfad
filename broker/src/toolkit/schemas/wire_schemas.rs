//! The JSON Schemas of the `tmux_mcp_core` types that results publish:
//! `core` knows nothing of schemas (an MCP concern), so each is described
//! here by a twin with the same name, doc and variants, used through
//! `#[schemars(with = "…")]`. A test checks each twin serializes as its
//! original does.

#![allow(dead_code)] // The twins are only ever described, never built.

use schemars::JsonSchema;

/// How much a tool may change (from its annotations): read-only, mutating
/// (changes state, nothing is lost) or destructive (input typed into
/// programs, entities killed). Ordered: a session at a tier may use every tool
/// at or below it.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Readonly,
    Mutating,
    Destructive,
}

#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Session,
    Server,
}

/// A process-identity backend, by the name `tmux_capabilities` publishes.
#[derive(JsonSchema)]
pub enum IdentityBackend {
    #[serde(rename = "linux-pidfd")]
    LinuxPidfd,
    #[serde(rename = "darwin-kqueue")]
    DarwinKqueue,
}

#[cfg(test)]
mod tests {
    use tmux_mcp_core::wire;

    /// Each twin's schema admits exactly the values its original serializes to.
    #[test]
    fn twins_describe_their_originals() {
        let check = |schema: serde_json::Value, values: Vec<serde_json::Value>| {
            let listed: Vec<serde_json::Value> = schema["enum"].as_array().unwrap().clone();
            assert_eq!(listed, values);
        };
        check(
            serde_json::to_value(schemars::schema_for!(super::Tier)).unwrap(),
            wire::Tier::ALL
                .iter()
                .map(|t| serde_json::to_value(t).unwrap())
                .collect(),
        );
        check(
            serde_json::to_value(schemars::schema_for!(super::Scope)).unwrap(),
            [wire::Scope::Session, wire::Scope::Server]
                .iter()
                .map(|s| serde_json::to_value(s).unwrap())
                .collect(),
        );
        use tmux_mcp_core::platform::IdentityBackend as B;
        check(
            serde_json::to_value(schemars::schema_for!(super::IdentityBackend)).unwrap(),
            [B::LinuxPidfd, B::DarwinKqueue]
                .iter()
                .map(|b| serde_json::to_value(b).unwrap())
                .collect(),
        );
    }
}
