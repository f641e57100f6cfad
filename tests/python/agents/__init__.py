"""Harness for tests that run real agent CLIs (Codex CLI, later Claude Code and
Gemini CLI) against a scripted fake model server on loopback, with
`tmux-mcp attach` as their MCP server.

- fake_model.py: the fake model server (one `Wire` class per API format) and scripts.
- npm_tools.py: pinned npm installs into a cache directory outside the repository.
- codex.py: the pinned Codex CLI (codex/package.json + lock), its private
  CODEX_HOME and config, `codex exec` runs.
- mcp_rewrite.py: a stdio relay that rewrites a tool's published annotations
  (to show that a client acts on them).
"""
