// `scripts/bench --peers`, the official MCP TypeScript SDK driver (stdio client).
//
//     node driver.mjs NPM_DIR PLAN.json OUT.json
//
// The same plan, the same operations in the same interleaved order as driver.py
// (read that file's docstring), through @modelcontextprotocol/sdk's Client and
// StdioClientTransport, installed in NPM_DIR (the bench cache, outside the
// repository). Writes the raw figures to OUT.json; asserts nothing about speed.

import { execFile } from "node:child_process";
import { openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const [npmDir, planPath, outPath] = process.argv.slice(2);
const sdk = join(npmDir, "node_modules/@modelcontextprotocol/sdk");
const { Client } = await import(pathToFileURL(join(sdk, "dist/esm/client/index.js")));
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "dist/esm/client/stdio.js")));
const sdkVersion = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8")).version;
const run = promisify(execFile);
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The SDK's validator warns once per call about formats it does not know
// ("uint64" in libtmux-rs's schemas); those warnings say nothing about speed.
const warn = console.warn;
console.warn = (...a) => (String(a[0]).startsWith("unknown format") ? undefined : warn(...a));
let last = now();
function phase(name) {
  console.error(`    node driver: ${name} ${((now() - last) / 1000).toFixed(0)} s`);
  last = now();
}

const plan = JSON.parse(readFileSync(planPath, "utf8"));
const errlog = openSync(plan.errlog + ".node", "a");
const TIMEOUT = { timeout: 120000 };

// The plan's "{name}" placeholders, replaced (whole strings only).
function subst(v, names) {
  if (typeof v === "string" && v.startsWith("{") && v.endsWith("}") && v.slice(1, -1) in names) return names[v.slice(1, -1)];
  if (Array.isArray(v)) return v.map((x) => subst(x, names));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x, names)]));
  return v;
}
const dig = (v, path) => path.reduce((o, k) => (o && typeof o === "object" ? o[k] : undefined), v);

function cleanEnv() {
  const env = { ...process.env };
  delete env.TMUX;
  delete env.TMUX_PANE;
  return env;
}

// One stdio session of one system on one tmux server.
class Agent {
  constructor(system, server) {
    this.system = system;
    this.names = server ? { ...plan.servers[server] } : {};
  }
  async open() {
    const transport = new StdioClientTransport({
      command: this.system.command,
      args: subst(this.system.args, this.names),
      env: { ...cleanEnv(), ...subst(this.system.env || {}, this.names) },
      stderr: errlog,
    });
    this.client = new Client({ name: "tmux-mcp-bench-peers", version: "0" });
    await this.client.connect(transport, TIMEOUT); // initialize + notifications/initialized
    await this.client.listTools(undefined, TIMEOUT); // the SDK checks structured results against these schemas
    for (const [name, how] of Object.entries(this.system.vars || {})) {
      const r = await this.client.callTool({ name: how.tool, arguments: how.args || {} }, undefined, TIMEOUT);
      this.names[name] = String(dig(r.structuredContent, how.path));
    }
  }
  async call(c, extra = {}) {
    const args = subst(c.args, { ...this.names, ...extra });
    const t = now();
    const r = await this.client.callTool({ name: c.tool, arguments: args }, undefined, TIMEOUT);
    const took = now() - t;
    // The seed family's envelope says {ok:false} for a refusal (capacity …).
    if (r.isError || r.structuredContent?.ok === false) throw new Error(`${c.tool}: ${JSON.stringify(r).slice(0, 300)}`);
    return [took, r];
  }
  async close() {
    await this.client?.close();
  }
}

class Row {
  constructor(system, tool) {
    Object.assign(this, { system, tool, ms: [], bytes: 0, failed: 0, error: "", rate: [] });
  }
  fail(e) {
    this.failed += 1;
    this.error ||= String(e?.message || e).slice(0, 300);
  }
  out() {
    const { system, tool, bytes, failed, error, rate } = this;
    return { system, tool, ms: [...this.ms].sort((a, b) => a - b), bytes, failed, error, rate };
  }
}

const agentFor = (agents, s, server) => agents.get(`${s.name}@${s.serverless ? "" : server}`);

// `n` rounds; in each, every system's `kind` calls once, in plan order.
async function sequential(agents, kind, server, n) {
  const rows = [];
  for (const s of plan.systems) {
    const calls = s.ops[kind];
    if (!calls) {
      rows.push([null, null, new Row(s.name, null)]);
      continue;
    }
    for (const c of calls) {
      const row = new Row(s.name, c.label ?? c.tool);
      const a = agentFor(agents, s, server);
      if (!a) row.error = `did not start on the ${server} server`;
      rows.push([a, c, row]);
    }
  }
  for (const [a, c, row] of rows) {
    if (a) await a.call(c).catch((e) => row.fail(e)); // warm: first-call work is not measured
  }
  for (let i = 0; i < n; i++) {
    for (const [a, c, row] of rows) {
      if (!a || row.failed > 3) continue;
      try {
        const [took, r] = await a.call(c);
        row.ms.push(took);
        row.bytes = JSON.stringify(r).length;
      } catch (e) {
        row.fail(e);
      }
    }
  }
  return rows.map(([, , row]) => row.out());
}

async function tmuxCapture(sock, pane) {
  const { stdout } = await run("tmux", ["-S", sock, "capture-pane", "-p", "-t", pane], { env: cleanEnv() });
  return stdout;
}

// Each round: one line appended to the pane (and seen there), then every system
// reads what is new since its cursor.
async function delta(agents, n) {
  const srv = plan.servers.one;
  const rows = [];
  for (const s of plan.systems) {
    if (!s.ops.delta) {
      rows.push([null, null, new Row(s.name, null), null]);
      continue;
    }
    for (const c of s.ops.delta) {
      const a = agentFor(agents, s, "one");
      const row = new Row(s.name, c.label ?? c.tool);
      row.missing = 0;
      const state = { cursor: null };
      if (!a) {
        row.error = "did not start on the one server";
        rows.push([null, c, row, state]);
        continue;
      }
      try {
        const [, r] = await a.call(c.first);
        state.cursor = c.cursor ? String(dig(r.structuredContent, c.cursor)) : "";
      } catch (e) {
        row.fail(e);
      }
      rows.push([a, c, row, state]);
    }
  }
  for (let i = 0; i < n; i++) {
    const line = `appended ${i} ${process.pid} of the delta bench`;
    writeFileSync(srv.fifo, line + "\n");
    const deadline = now() + 10000;
    while (!(await tmuxCapture(srv.sock, srv.pane)).includes(line)) {
      if (now() > deadline) throw new Error(`the pane never showed ${line}`);
      await sleep(2);
    }
    for (const [a, c, row, state] of rows) {
      if (!a || state.cursor === null || row.failed > 3) continue;
      try {
        const [took, r] = await a.call(c.next, { cursor: state.cursor });
        const text = JSON.stringify(r);
        row.ms.push(took);
        row.bytes = Math.max(row.bytes, text.length);
        if (c.cursor && !text.includes(line)) row.missing += 1;
        if (c.cursor) state.cursor = String(dig(r.structuredContent, c.cursor));
      } catch (e) {
        row.fail(e);
      }
    }
  }
  return rows.map(([, , row]) => ({ ...row.out(), missing: row.missing || 0 }));
}

// For N in plan.agents: N agents of each system capturing the same pane in a
// loop for plan.window_s seconds, against N loops of a tmux capture-pane
// fork+exec. Agents are opened once per system (the largest N) and reused.
async function concurrency() {
  const srv = plan.servers.one;
  const most = Math.max(...plan.agents);
  const rows = new Map();
  const row = (system, tool, n) => {
    const k = `${system}|${tool}|${n}`;
    if (!rows.has(k)) rows.set(k, Object.assign(new Row(system, tool), { agents: n }));
    return rows.get(k);
  };
  const pools = [];
  const opened = [];
  try {
    for (const s of plan.systems) {
      if (s.serverless || !s.ops.capture) continue;
      const pool = [];
      // Four starts at a time: the Python servers' start-up is CPU-bound.
      for (let i = 0; i < most; i += 4) {
        const batch = Array.from({ length: Math.min(4, most - i) }, () => new Agent(s, "one"));
        opened.push(...batch);
        await Promise.all(
          batch.map((a) =>
            a.open().then(
              () => pool.push(a),
              (e) => console.error(`${s.name}: an agent did not start: ${e}`),
            ),
          ),
        );
      }
      for (const c of s.ops.capture) pools.push([s, c, pool]);
    }
    for (let round = 0; round < plan.concurrency_rounds; round++) {
      for (const n of plan.agents) {
        const fork = row("tmux capture-pane", "fork+exec", n);
        let count = 0;
        let end = now() + plan.window_s * 1000;
        const forkLoop = async () => {
          while (now() < end) {
            try {
              await run("tmux", ["-S", srv.sock, "capture-pane", "-p", "-t", srv.pane], { env: cleanEnv() });
              count++;
            } catch (e) {
              fork.fail(e);
            }
          }
        };
        let t = now();
        await Promise.all(Array.from({ length: n }, forkLoop));
        fork.rate.push(count / ((now() - t) / 1000));
        for (const [s, c, pool] of pools) {
          const r = row(s.name, c.tool, n);
          if (pool.length < n) {
            r.error = `only ${pool.length} agents started`;
            continue;
          }
          count = 0;
          end = now() + plan.window_s * 1000;
          const loop = async (a) => {
            while (now() < end) {
              try {
                await a.call(c);
                count++;
              } catch (e) {
                r.fail(e);
              }
            }
          };
          t = now();
          await Promise.all(pool.slice(0, n).map(loop));
          r.rate.push(count / ((now() - t) / 1000));
        }
      }
    }
  } finally {
    await Promise.all(opened.map((a) => a.close().catch(() => {})));
  }
  return [...rows.values()].map((r) => ({ ...r.out(), agents: r.agents, ms: [] }));
}

// Spawn the server command, `initialize`, `tools/list` answered; then close.
async function cold(n) {
  const rows = plan.systems.map((s) => [s, new Row(s.name, "initialize + tools/list")]);
  for (let i = 0; i < n; i++) {
    for (const [s, row] of rows) {
      const a = new Agent({ ...s, vars: {} }, s.serverless ? "" : "one");
      try {
        const t = now();
        await a.open();
        row.ms.push(now() - t);
      } catch (e) {
        row.fail(e);
      } finally {
        await a.close().catch(() => {});
      }
    }
  }
  return rows.map(([, row]) => row.out());
}

const out = { driver: "TypeScript SDK", sdk: `@modelcontextprotocol/sdk ${sdkVersion}`, ops: {}, vars: {} };
const agents = new Map();
for (const s of plan.systems) {
  for (const server of s.serverless ? [""] : Object.keys(plan.servers)) {
    const a = new Agent(s, server);
    try {
      await a.open();
    } catch (e) {
      (out.start_errors ||= {})[`${s.name}@${server}`] = String(e?.message || e).slice(0, 300);
      await a.close().catch(() => {});
      continue;
    }
    agents.set(`${s.name}@${server}`, a);
    out.vars[`${s.name}@${server}`] = Object.fromEntries(Object.keys(s.vars || {}).map((k) => [k, a.names[k]]));
  }
}
phase("sessions");
const live = new Set([...agents.keys()].map((k) => k.split("@")[0]));
plan.systems = plan.systems.filter((s) => live.has(s.name));
out.ops.capture_one = await sequential(agents, "capture", "one", plan.rounds);
for (const server of Object.keys(plan.servers)) {
  if (server.startsWith("panes")) out.ops[`capture_${server}`] = await sequential(agents, "capture", server, plan.rounds_big);
}
out.ops.capture_big = await sequential(agents, "capture", "big", plan.rounds_big);
phase("captures");
out.ops.list_big = await sequential(agents, "list", "big", plan.rounds_big);
phase("listing");
out.ops.delta = await delta(agents, plan.rounds);
phase("delta");
await Promise.all([...agents.values()].map((a) => a.close().catch(() => {})));
out.ops.concurrency = await concurrency();
phase("concurrency");
out.ops.cold = await cold(plan.rounds_cold);
phase("cold starts");
writeFileSync(outPath, JSON.stringify(out));
process.exit(0);
