"""The real opencode (npm opencode-ai, pinned in opencode/package.json and its
lock), against a fake model server speaking the OpenAI Chat Completions API
(`fake_model.OpenAIChat`).

`install()` returns npm's `node_modules/.bin/opencode` link to the native
binary at `node_modules/opencode-ai/bin/opencode.exe`, where a real install
puts it: the package's postinstall (allowed in package.json's `allowScripts`)
hard-links the platform package's binary (`opencode-linux-x64`, or
`-baseline` on a CPU without AVX2) over the placeholder there. The binary
sits inside the `opencode-ai` package, whose package.json carries the version
list_agents reports. The registry reachable here serves only the
`opencode-linux-x64` and `opencode-linux-x64-baseline` platform packages of
opencode-ai's twelve optional ones (the others answer 404), so the lock holds
only those two and `npm ci` refuses it as out of sync; the install is `npm
install` of the same pins (npm_tools, `ci=False`): what the lock holds is
installed as locked, and the missing optional packages are skipped.

`OpencodeHome` is a private HOME with XDG directories (config in
XDG_CONFIG_HOME/opencode/opencode.json) and TMPDIR. The config names one
provider, `fake`: the bundled `@ai-sdk/openai-compatible` package (opencode
1.18 downloads no provider package for it) with `options.baseURL` at the fake
server and its one model; `enabled_providers` keeps every other provider out.
Its bash tool asks before it runs (`permission.bash = "ask"`: 1.18's default
lets every tool run). Auto-update, sharing and the models.dev catalog fetch
are off; proxies point at the fake server, which refuses anything beyond
loopback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import npm_tools
from .fake_model import FakeModelServer
from .runner import hermetic_env

PINS = Path(__file__).resolve().parent / "opencode"
VERSION = json.loads((PINS / "package.json").read_text())["dependencies"]["opencode-ai"]
PROVIDER = "fake"
MODEL = "fake-model"
API_KEY = "sk-fake-opencode-not-a-secret"


def install() -> Path:
    """npm's `opencode` link (node_modules/.bin/opencode, what a person's PATH
    finds), which points at the native binary in opencode-ai/bin."""
    root = npm_tools.npm_install(PINS, f"opencode (opencode-ai {VERSION})", npm_args=(), ci=False)
    binary = root / "node_modules" / "opencode-ai" / "bin" / "opencode.exe"
    assert binary.is_file() and os.access(binary, os.X_OK) and binary.stat().st_size > 1_000_000, (
        f"npm installed no native opencode binary at {binary} (did opencode-ai's postinstall run, "
        "and did npm install a platform package, opencode-linux-x64 or -baseline?)")
    link = root / "node_modules" / ".bin" / "opencode"
    assert link.resolve() == binary.resolve(), f"{link} does not point at {binary}"
    return link


class OpencodeHome:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.work = directory / "work"  # the agent's working directory (not a git repo)
        self.tmp = directory / "tmp"
        self.config_dir = directory / ".config" / "opencode"
        self.dirs = {"XDG_CONFIG_HOME": directory / ".config", "XDG_DATA_HOME": directory / ".local" / "share",
                     "XDG_STATE_HOME": directory / ".local" / "state", "XDG_CACHE_HOME": directory / ".cache"}
        for d in (self.work, self.tmp, self.config_dir, *self.dirs.values()):
            d.mkdir(parents=True, exist_ok=True)

    def write_config(self, fake: FakeModelServer, extra: dict | None = None) -> Path:
        """opencode.json: the fake provider and model, bash asks first; `extra`'s keys merged in."""
        config: dict = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"{PROVIDER}/{MODEL}",
            "small_model": f"{PROVIDER}/{MODEL}",
            "enabled_providers": [PROVIDER],
            "provider": {PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake model server (tests)",
                "options": {"baseURL": fake.base_url + "/v1", "apiKey": API_KEY},
                "models": {MODEL: {"name": "Fake model", "tool_call": True,
                                   "limit": {"context": 128000, "output": 8192}}},
            }},
            "permission": {"bash": "ask"},
            "autoupdate": False,
            "share": "disabled",
        }
        config.update(extra or {})
        path = self.config_dir / "opencode.json"
        path.write_text(json.dumps(config, indent=2))
        return path

    def env(self, fake: FakeModelServer) -> dict[str, str]:
        env = hermetic_env(("OPENCODE", "OPENAI_", "ANTHROPIC_"), HOME=str(self.dir), TMPDIR=str(self.tmp),
                           OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1",
                           OPENCODE_DISABLE_SHARE="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1",
                           **{k: str(v) for k, v in self.dirs.items()})
        env.update(fake.proxy_env())
        return env
