//! The published contracts (`broker/contracts/`), parsed once each: the seed
//! schemas three tools publish byte for byte (key order kept:
//! `preserve_order`).
//!
//! The files are copies of the project's shared originals (`../shared/`
//! beside the checkout). `tests/python/test_contracts.py` checks what the
//! tools publish against them, and them against the originals.

use serde_json::Value;
use std::sync::OnceLock;

macro_rules! contract {
    ($(#[$doc:meta])* $name:ident, $file:literal) => {
        $(#[$doc])*
        pub fn $name() -> Value {
            static S: OnceLock<Value> = OnceLock::new();
            S.get_or_init(|| {
                serde_json::from_str(include_str!(concat!("../../../contracts/", $file)))
                    .expect(concat!("broker/contracts/", $file, " parses"))
            })
            .clone()
        }
    };
}

contract!(tmux_capture_input, "tmux_capture.input.json");
contract!(tmux_capture_output, "tmux_capture.output.json");
contract!(capture_pane_input, "capture_pane.input.json");
contract!(capture_pane_output, "capture_pane.output.json");
contract!(snapshot_pane_input, "snapshot_pane.input.json");
contract!(snapshot_pane_output, "snapshot_pane.output.json");
