"""Harness for tests that run real agent CLIs against a scripted fake model
server on loopback, with `tmux-mcp attach` as their MCP server
(test_agents_codex.py, test_agents_claude.py, test_agents_gemini.py).

- fake_model.py: the fake model server, one `Wire` class per API format
  (OpenAI Responses for Codex CLI, Anthropic Messages for Claude Code, Gemini's
  generateContent for Gemini CLI), and wire-neutral scripts.
- npm_tools.py: pinned npm installs (`npm ci` of a package.json + lock) into a
  cache directory outside the repository; no npm: fail in CI, skip elsewhere.
- runner.py: one run of a CLI in its own session, with a timeout, and the
  processes it left behind.
- scene.py: the tmux side (this test's server with the plugin loaded, a pane
  with a marker, what the broker publishes, the MCP server command).
- codex.py, claude.py, gemini.py (+ codex/, claude/, gemini/: the pins):
  install, private home and config, one non-interactive run.
- mcp_rewrite.py: a stdio relay that rewrites one tool's annotations in
  tools/list (to show that a client acts on them).
"""
