//! The version of the CLI a process runs, read from the disk: the package
//! it is installed from (npm's `package.json`, aider's dist-info).

use std::path::Path;

use super::identify::Cli;

/// The version of the CLI a process runs: from the `package.json` of its npm
/// package (or of the platform package its native binary comes in, e.g.
/// `@openai/codex-linux-x64`), found above its executable or script with
/// symlinks resolved; for aider, from its `aider_chat-V.dist-info` in the
/// virtualenv its script is in.
pub fn version_of(cli: Cli, exe: Option<&Path>, argv: &[String]) -> Option<String> {
    let paths = exe
        .map(Path::to_path_buf)
        .into_iter()
        .chain(argv.iter().take(4).map(std::path::PathBuf::from))
        .filter_map(|p| std::fs::canonicalize(p).ok());
    for path in paths {
        for dir in path.ancestors().skip(1).take(6) {
            let found = match cli.npm_package() {
                Some(package) => npm_version(dir, package),
                None => dist_info_version(dir, "aider_chat"),
            };
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// `dir/package.json`'s version when it is `package`'s (or a platform
/// package of it), without a platform suffix (`0.171.0-linux-x64`).
fn npm_version(dir: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = json["name"].as_str()?;
    if name != package
        && !name
            .strip_prefix(package)
            .is_some_and(|r| r.starts_with('-'))
    {
        return None;
    }
    let version = json["version"].as_str()?;
    let platform = ["-linux", "-darwin", "-win32"];
    let cut = platform.iter().filter_map(|p| version.find(p)).min();
    Some(version[..cut.unwrap_or(version.len())].to_string())
}

/// The version of Python distribution `dist` installed in virtualenv `dir`.
fn dist_info_version(dir: &Path, dist: &str) -> Option<String> {
    let prefix = format!("{dist}-");
    for lib in std::fs::read_dir(dir.join("lib")).ok()?.flatten() {
        let Ok(entries) = std::fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if let Some(v) = name
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(".dist-info"))
            {
                return Some(v.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::identify::identify;
    use super::*;

    #[test]
    fn reads_the_version_from_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("node_modules/@google/gemini-cli");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "@google/gemini-cli", "version": "0.61.0"}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("dist/index.js"), "").unwrap();
        let script = pkg.join("dist/index.js").display().to_string();
        let args = vec!["node".to_string(), script];
        assert_eq!(
            identify(Some(Path::new("/usr/bin/node")), &args),
            Some(Cli::Gemini)
        );
        assert_eq!(
            version_of(Cli::Gemini, Some(Path::new("/usr/bin/node")), &args).as_deref(),
            Some("0.61.0")
        );
        assert_eq!(version_of(Cli::Aider, None, &args), None);
    }
}
