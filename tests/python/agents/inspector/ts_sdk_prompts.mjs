// The official MCP TypeScript SDK's client (@modelcontextprotocol/client, as
// the pinned Inspector installs it) driving `tmux-mcp attach`: prompts/list,
// prompts/get and completion/complete, in the era named by argv[4] (`legacy`:
// initialize; or a pinned 2026 revision: server/discover). Prints one JSON
// object with what it got; tests/python/test_prompts.py asserts on it. Copied
// next to the install's node_modules before it runs, so the import resolves
// there.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [bin, sock, era, pane] = process.argv.slice(2);
const mode = era === "legacy" ? "legacy" : { pin: era };
const client = new Client(
  { name: "tmux-mcp-ts-sdk-test", version: "1.0.0" },
  { versionNegotiation: { mode } },
);
await client.connect(new StdioClientTransport({ command: bin, args: ["attach", "-S", sock] }));
const out = {};
out.prompts = (await client.listPrompts()).prompts;
out.get = await client.getPrompt({ name: "watch_run", arguments: { pane } });
out.promptPanes = (await client.complete({
  ref: { type: "ref/prompt", name: "watch_run" },
  argument: { name: "pane", value: "" },
})).completion;
out.templatePanes = (await client.complete({
  ref: { type: "ref/resource", uri: "tmux://pane/{pane_id}" },
  argument: { name: "pane_id", value: pane.slice(1) },
})).completion;
try {
  await client.getPrompt({ name: "watch_run", arguments: { pane: "%99999" } });
  out.refused = null;
} catch (e) {
  out.refused = { code: e.code, message: e.message };
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
