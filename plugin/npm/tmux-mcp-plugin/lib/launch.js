"use strict";
// The npm launcher of tmux-mcp-plugin: runs the platform package's binary
// (an optional dependency, installed only on its own OS and CPU, the pattern
// esbuild and biome use) with this process's stdin, stdout and stderr
// (inherited: node passes no byte through itself), forwards SIGINT, SIGTERM
// and SIGHUP to it, and ends as it ended: with its exit status, or killed by
// the same signal.
const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");

const PACKAGES = {
  "linux x64": "tmux-mcp-plugin-linux-x64",
  "linux arm64": "tmux-mcp-plugin-linux-arm64",
  "darwin x64": "tmux-mcp-plugin-darwin-x64",
  "darwin arm64": "tmux-mcp-plugin-darwin-arm64",
};
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"];

function fail(message) {
  process.stderr.write(`tmux-mcp-plugin: ${message}\n`);
  process.exit(1);
}

function binary(name) {
  const pkg = PACKAGES[`${process.platform} ${process.arch}`];
  if (!pkg) {
    fail(`no binaries for ${process.platform}/${process.arch}: tmux-mcp runs on Linux and macOS (x64, arm64)`);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    fail(`its platform package ${pkg} is not installed (npm leaves optional dependencies out with ` +
      `--omit=optional or --no-optional): install tmux-mcp-plugin again without that option`);
  }
  return path.join(dir, "bin", name);
}

module.exports = function launch(name) {
  const file = binary(name);
  // The handlers first: a signal that comes while spawn() runs (the binary
  // may be up before it returns) is then forwarded, never node's default
  // (which would end node and leave the binary running). They run on the
  // event loop, after `child` is set below.
  let child = null;
  const handlers = FORWARDED.map((signal) => {
    const handler = () => {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    };
    process.on(signal, handler);
    return [signal, handler];
  });
  child = spawn(file, process.argv.slice(2), { stdio: "inherit" });
  child.on("error", (err) => fail(`cannot run ${file}: ${err.message}`));
  child.on("exit", (code, signal) => {
    if (signal === null) {
      process.exit(code === null ? 1 : code);
    }
    // Killed by a signal: die of the same one (our handlers removed first);
    // for one node ignores (SIGPIPE), exit as a shell reports it.
    for (const [s, handler] of handlers) process.removeListener(s, handler);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 100).unref();
  });
};
