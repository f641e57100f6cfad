//! tmux version strings (`3.3a`, `3.4`, `next-3.6`): which features a server has.

/// `3.3a`, `3.4`, `next-3.6` → compares major.minor.
pub fn version_at_least(version: &str, major: u32, minor: u32) -> bool {
    let v = version.trim_start_matches("next-");
    let mut parts = v.split('.');
    let maj: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let min: u32 = parts
        .next()
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
        })
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (maj, min) >= (major, minor)
}

#[cfg(test)]
mod tests {
    use super::version_at_least;

    #[test]
    fn versions() {
        assert!(version_at_least("3.3a", 3, 3));
        assert!(version_at_least("next-3.6", 3, 3));
        assert!(version_at_least("3.4", 3, 3));
        assert!(!version_at_least("3.2a", 3, 3));
        assert!(!version_at_least("garbage", 3, 3));
    }
}
