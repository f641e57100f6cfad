//! The string patterns and bounds input schemas share: tmux arguments are C
//! strings (no NUL), names hold no control character, a command line none but
//! line feed, and a tmux integer fits 2³¹−1.

/// Largest tmux integer argument the schemas accept (2³¹−1).
pub const INT_MAX: i64 = 2_147_483_647;

/// The string pattern that refuses NUL (tmux arguments are C strings).
pub const NO_NUL: &str = "^[^\\x00]*$";

/// The pattern of a name (session, window): no control characters (C0, DEL,
/// C1). tmux 3.7c refuses them, 3.3a keeps them in window names, where a raw
/// ESC would then reach every terminal that lists windows.
pub const NO_CONTROL: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*$";

/// A command line: no control character but line feed (a shell's line editor
/// would act on it: Tab completes, CR submits).
pub const NO_CONTROL_BUT_LF: &str = "^[^\\x00-\\x09\\x0b-\\x1f\\x7f]*$";
