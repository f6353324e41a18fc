// Soak test of `kite serve` (a benchmark, not a test: it takes minutes). Loopback only, bounded:
//
//   node bench/serve_soak.mjs [--kite build/kite] [--model models/demo] [--requests 10000] [--workers 16]
//
// Starts `kite serve` on a free port, then 16 workers send 10,000 requests between them. Of
// every 20: 4 are cut mid-stream (the client closes after the first text), 2 are cut before the
// first byte (closed right after sending), 1 has its socket killed mid-stream (a reset), the
// rest run to the end, streamed or whole, and must be well formed (a stream: one finish_reason,
// then [DONE]). Meanwhile /health is polled every 100 ms and must always answer 200. Reports
// unexpected failures, the service's RSS after warm-up (the first 10% of requests) and at the
// end with the slope per request, its descriptors and threads before and after, and whether
// nothing is active 2 s after the last client left. Exits 1 when a target is missed.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import net from "node:net";

const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const kite = option("kite", "build/kite");
const model = option("model", "models/demo");
const total = Number(option("requests", 10000));
const workers = Number(option("workers", 16));

const server = spawn(kite, ["serve", "-m", model, "--port", "0", "--parallel", "8", "--ctx", "512", "-t", "2",
                            "--max-queue", "256"], { stdio: ["ignore", "ignore", "pipe"] });
let log = "";
const port = await new Promise((resolve, reject) => {
  server.stderr.on("data", (data) => {
    log += data;
    const listening = /listening on 127\.0\.0\.1:(\d+)/.exec(log);
    if (listening && log.includes("ready")) resolve(Number(listening[1]));
  });
  server.on("exit", (code) => reject(new Error(`kite serve exited (${code}): ${log}`)));
});

const proc = (file) => readFileSync(`/proc/${server.pid}/${file}`, "utf8");
const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(proc("status"))[1]);
const fds = () => readdirSync(`/proc/${server.pid}/fd`).length;
const threads = () => readdirSync(`/proc/${server.pid}/task`).length;

const agent = new http.Agent({ keepAlive: true, maxSockets: workers });
function request(path, body, { onData, method = "POST", agentless = false } = {}) {
  return new Promise((resolve) => {
    const payload = body ? JSON.stringify(body) : undefined;
    const req = http.request({ host: "127.0.0.1", port, path, method, agent: agentless ? false : agent,
                               headers: payload ? { "Content-Type": "application/json",
                                                    "Content-Length": Buffer.byteLength(payload) } : {} });
    let text = "";
    req.on("response", (response) => {
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        text += chunk;
        onData?.(req, text);
      });
      response.on("end", () => resolve({ status: response.statusCode, text }));
      response.on("error", () => resolve({ status: -1, text }));
      response.on("aborted", () => resolve({ status: -1, text }));
    });
    req.on("error", () => resolve({ status: -1, text }));
    req.on("close", () => resolve({ status: -1, text }));
    req.end(payload);
    req.sentAt = performance.now();
  });
}

const prompts = ["Once upon a time", "The fortune says", "A wise person once", "Tomorrow you will"];
const counts = { complete: 0, mid_stream: 0, before_first_byte: 0, killed: 0 };
const failures = [];
let health_failures = 0, health_checks = 0;

async function one(i) {
  const kind = i % 20;
  const prompt = prompts[i % prompts.length] + ` (${i % 7})`;
  if (kind < 4) {  // cut mid-stream
    await request("/v1/completions", { prompt, max_tokens: 64, stream: true, temperature: 0, ignore_eos: true },
                  { agentless: true, onData: (req, text) => { if (text.includes('"text"')) req.destroy(); } });
    ++counts.mid_stream;
  } else if (kind < 6) {  // cut before the first byte
    const socket = net.connect(port, "127.0.0.1");
    const body = JSON.stringify({ prompt, max_tokens: 64, stream: kind === 4 });
    await new Promise((resolve) => {
      socket.on("connect", () => {
        socket.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
                     `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => { socket.destroy(); resolve(); });
      });
      socket.on("error", resolve);
    });
    ++counts.before_first_byte;
  } else if (kind === 6) {  // socket killed mid-stream: a reset
    await request("/v1/chat/completions", { messages: [{ role: "user", content: prompt }], max_tokens: 64,
                                           stream: true, ignore_eos: true },
                  { agentless: true, onData: (req, text) => { if (text.includes('"content"')) req.socket.resetAndDestroy(); } });
    ++counts.killed;
  } else {
    const stream = kind % 2 === 0;
    const answer = await request("/v1/chat/completions", { messages: [{ role: "user", content: prompt }],
                                                          max_tokens: 8, stream, temperature: 0 });
    const ok = answer.status === 200 && (stream
      ? answer.text.endsWith("data: [DONE]\n\n") && (answer.text.match(/"finish_reason":"(stop|length)"/g) ?? []).length === 1
      : JSON.parse(answer.text).choices?.[0]?.message?.content !== undefined);
    if (ok) ++counts.complete;
    else failures.push({ i, status: answer.status, text: answer.text.slice(-300) });
  }
}

const health = setInterval(async () => {
  ++health_checks;
  const answer = await request("/health", null, { method: "GET" });
  if (answer.status !== 200) ++health_failures;
}, 100);

const baseline = { fds: fds(), threads: threads() };
const warmup = Math.floor(total / 10);
const samples = [];
let next = 0;
const start = performance.now();
await Promise.all(Array.from({ length: workers }, async () => {
  while (next < total) {
    const i = next++;
    await one(i);
    if (i >= warmup && i % 250 === 0) samples.push([i, rssKiB()]);
  }
}));
const seconds = (performance.now() - start) / 1000;
clearInterval(health);
agent.destroy();
await new Promise((r) => setTimeout(r, 2000));
const status = JSON.parse((await request("/status", null, { method: "GET", agentless: true })).text);
samples.push([total, rssKiB()]);

// Least-squares slope of RSS over requests after warm-up.
const n = samples.length, mx = samples.reduce((s, [x]) => s + x, 0) / n, my = samples.reduce((s, [, y]) => s + y, 0) / n;
const slope = samples.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / samples.reduce((s, [x]) => s + (x - mx) ** 2, 0);
const report = {
  requests: total, workers, seconds: Number(seconds.toFixed(1)), ...counts,
  unexpected_failures: failures.length, health_checks, health_failures,
  rss_after_warmup_mib: Number((samples[0][1] / 1024).toFixed(1)),
  rss_end_mib: Number((samples.at(-1)[1] / 1024).toFixed(1)),
  rss_growth_mib: Number(((samples.at(-1)[1] - samples[0][1]) / 1024).toFixed(2)),
  rss_slope_kib_per_request: Number(slope.toFixed(4)),
  fds: `${baseline.fds} -> ${fds()}`, threads: `${baseline.threads} -> ${threads()}`,
  active_2s_after: status.active, queued_2s_after: status.queued,
};
console.log(JSON.stringify(report, null, 1));
for (const failure of failures.slice(0, 5)) console.log("failure:", JSON.stringify(failure));
server.kill("SIGTERM");
const missed = failures.length > 0 || health_failures > 0 || report.rss_growth_mib > 8 || slope >= 1 ||
               fds() > baseline.fds || report.active_2s_after !== 0 || counts.mid_stream < 1000 ||
               counts.before_first_byte < 300 || counts.killed < 200;
process.exit(missed ? 1 : 0);
