// `codeward mcp serve` driven by the official TypeScript SDK client (@modelcontextprotocol/sdk).
// Run by test_mcp_serve_clients.py: node serve_client.mjs '<json: command, args, env, sleepTag>'.
// Prints one JSON report on stdout; the test asserts on it.
import { readdirSync, readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const config = JSON.parse(process.argv[2]);
const report = { asked: [], progress: 0 };

function sleeping() {
  const needle = Buffer.from(`sleep\u000060\u0000${config.sleepTag}`);
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`).subarray(0, needle.length).equals(needle)) {
        found.push(Number(entry));
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function until(predicate, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return predicate();
}

const answers = ["accept", "decline"];
const client = new Client(
  { name: "codeward-ts-test", version: "0.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  report.asked.push(request.params.message);
  const action = answers.shift();
  return action === "accept" ? { action, content: { approve: true } } : { action };
});
const transport = new StdioClientTransport({
  command: config.command,
  args: config.args,
  env: config.env,
  stderr: "inherit",
});
await client.connect(transport);
report.server = client.getServerVersion();
report.tools = (await client.listTools()).tools;
const call = (name, args) => client.callTool({ name, arguments: args });
report.bash = await call("bash", {
  command: "cat /etc/shadow; echo x > /etc/codeward-probe; cat hello.txt",
});
report.denied = await call("read", { file_path: "secret.txt" });
report.accepted = await call("bash", { command: "touch asked-yes" });
report.declined = await call("bash", { command: "touch asked-no" });

const controller = new AbortController();
const long = client
  .callTool({ name: "bash", arguments: { command: config.sleepCommand } }, undefined, {
    signal: controller.signal,
    timeout: 120_000,
    onprogress: () => {
      report.progress += 1;
    },
  })
  .then(
    () => "finished",
    (error) => `rejected: ${error}`,
  );
report.sleep_seen = await until(() => sleeping().length > 0, 20_000);
await until(() => report.progress > 0, 10_000);
const started = performance.now();
controller.abort("the test cancels");
report.long = await long;
await until(() => sleeping().length === 0, 60_000);
report.cancel_ms = performance.now() - started;
report.after_cancel = await call("ls", {});
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
