// `kite serve` as the official `openai` npm client (pinned in tools/openai_client) sees it, over
// TCP and over the Unix socket (undici's fetch with a dispatcher bound to the socket):
//   node tests/openai_client/openai_client_test.mjs KITE_BINARY MODEL
// Exits 0 when every check passes, 1 on a failure, 77 (ctest's skip) when the client is not
// installed (`make openai-client`).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "../../tools/openai_client/node_modules");
let OpenAI, undici;
try {
  OpenAI = (await import(path.join(modules, "openai/index.mjs"))).default;
  undici = await import(path.join(modules, "undici/index.js"));
} catch (error) {
  console.log(`skipped: the openai client is not installed (make openai-client): ${error.message}`);
  process.exit(77);
}

const [kite, model, firstTokenLimit] = process.argv.slice(2);
// The slowest first token of the 16 concurrent streams below (ms); CMake gives a sanitizer build more.
const firstTokenLimitMs = Number(firstTokenLimit ?? 2000);
const dir = mkdtempSync(path.join(os.tmpdir(), "kite-openai-"));
const socketPath = path.join(dir, "kite.sock");
const apiKey = "test-key";

// --- the service -----------------------------------------------------------------------------
const server = spawn(kite, ["serve", "-m", model, "--port", "0", "--unix", socketPath, "--parallel", "8",
                            "--ctx", "2048", "--threads", "2", "--api-key", apiKey],
                     { stdio: ["ignore", "inherit", "pipe"] });
let log = "";
const port = await new Promise((resolve, reject) => {
  let port = 0;
  server.stderr.on("data", (data) => {
    log += data;
    process.stderr.write(data);
    const listening = /listening on 127\.0\.0\.1:(\d+)/.exec(log);
    if (listening) port = Number(listening[1]);
    if (port && log.includes("kite serve: ready")) resolve(port);
  });
  server.on("exit", (code) => reject(new Error(`kite serve exited with ${code}: ${log}`)));
  setTimeout(() => reject(new Error(`kite serve not ready in 30 s: ${log}`)), 30000);
});

const unixAgent = new undici.Agent({ connect: { socketPath } });
const tcp = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
const unix = new OpenAI({ apiKey, baseURL: "http://localhost/v1", maxRetries: 0, fetch: undici.fetch,
                          fetchOptions: { dispatcher: unixAgent } });
const transports = { tcp, unix };

async function status() {
  const response = await fetch(`http://127.0.0.1:${port}/status`, { headers: { Authorization: `Bearer ${apiKey}` } });
  return response.json();
}
async function idleWithin(ms) {
  const start = performance.now();
  for (;;) {
    const s = await status();
    const elapsed = performance.now() - start;
    if (s.active === 0 && s.queued === 0) return elapsed;
    if (elapsed > ms) throw new Error(`not idle after ${ms} ms: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const chat = (content, extra = {}) => ({ model: "demo", messages: [{ role: "user", content }], temperature: 0,
                                        max_tokens: 24, ...extra });

// --- the checks ------------------------------------------------------------------------------
const checks = [];
const check = (name, body) => checks.push({ name, body });
const figures = {};

for (const [name, client] of Object.entries(transports)) {
  check(`${name}: chat`, async () => {
    const completion = await client.chat.completions.create(chat("Tell me a fortune"));
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.choices[0].message.role, "assistant");
    assert.ok(completion.choices[0].message.content.length > 0);
    assert.ok(["stop", "length"].includes(completion.choices[0].finish_reason));
    assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + completion.usage.completion_tokens);
  });
  check(`${name}: completions`, async () => {
    const completion = await client.completions.create({ model: "demo", prompt: "Once upon a time", max_tokens: 8,
                                                         temperature: 0 });
    assert.equal(completion.object, "text_completion");
    assert.ok(completion.choices[0].text.length > 0);
  });
  check(`${name}: streaming with and without usage, and the stream() helper's final completion`, async () => {
    const whole = (await client.chat.completions.create(chat("A fortune about cats"))).choices[0].message.content;
    for (const include_usage of [false, true]) {
      const stream = await client.chat.completions.create(chat("A fortune about cats", {
        stream: true, stream_options: { include_usage } }));
      let text = "", usage = 0, finish = 0, ids = new Set(), first = true;
      for await (const chunk of stream) {
        ids.add(chunk.id);
        if (chunk.usage) ++usage;
        if (chunk.choices.length === 0) continue;
        if (first) assert.equal(chunk.choices[0].delta.role, "assistant");
        first = false;
        text += chunk.choices[0].delta.content ?? "";
        if (chunk.choices[0].finish_reason) ++finish;
      }
      assert.equal(text, whole);
      assert.equal(ids.size, 1);
      assert.equal(finish, 1);
      assert.equal(usage, include_usage ? 1 : 0);
    }
    const runner = client.chat.completions.stream(chat("A fortune about cats"));
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.content, whole);
  });
}

check("typed errors", async () => {
  await assert.rejects(tcp.chat.completions.create(chat("x", { top_p: 2 })), (error) =>
    error instanceof OpenAI.BadRequestError && error.status === 400 && error.param === "top_p");
  await assert.rejects(unix.models.retrieve("nothing"), (error) => error instanceof OpenAI.NotFoundError);
  const stranger = new OpenAI({ apiKey: "wrong", baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  await assert.rejects(stranger.chat.completions.create(chat("x")), (error) => error instanceof OpenAI.AuthenticationError);
  const models = await unix.models.list();
  assert.equal(models.data.length, 1);
});

check("16 concurrent clients (8 per transport) each equal to the request alone", async () => {
  // Completions of different prompts (the demo model writes fortunes), greedy.
  const openings = ["Once upon a time", "You will", "A friend", "Never", "The best", "Today", "Love", "Money"];
  const request = (i) => ({ model: "demo", prompt: `${openings[i % 8]}${i >= 8 ? " again" : ""}`, max_tokens: 32,
                            temperature: 0 });
  const alone = [];
  for (let i = 0; i < 16; ++i) alone.push((await tcp.completions.create(request(i))).choices[0].text);
  const firstTokens = [];
  const together = await Promise.all(alone.map(async (_, i) => {
    const client = i % 2 ? unix : tcp;
    const start = performance.now();
    const stream = await client.completions.create({ ...request(i), stream: true });
    let text = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.text ?? "";
      if (delta && text === "") firstTokens.push(performance.now() - start);
      text += delta;
    }
    return text;
  }));
  assert.deepEqual(together, alone);
  assert.ok(new Set(alone).size > 1, "the prompts should give different texts");
  firstTokens.sort((a, b) => a - b);
  figures.first_token_ms = { min: Number(firstTokens[0].toFixed(1)), max: Number(firstTokens.at(-1).toFixed(1)) };
  assert.ok(firstTokens.at(-1) < firstTokenLimitMs, `first token after ${firstTokens.at(-1)} ms`);
});

check("32 simultaneous connects on the Unix socket, none refused", async () => {
  const sockets = await Promise.all(Array.from({ length: 32 }, () => new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    socket.on("connect", () => resolve(socket));
    socket.on("error", reject);
  })));
  const answers = await Promise.all(sockets.map((socket) => new Promise((resolve) => {
    let text = "";
    socket.on("data", (data) => (text += data));
    socket.on("end", () => resolve(text));
    socket.write("GET /health HTTP/1.0\r\n\r\n");
  })));
  for (const answer of answers) assert.match(answer, /^HTTP\/1\.\d 200/);
});

check("abort mid-generation: idle within 250 ms", async () => {
  const cancelled = (await status()).requests.cancelled;
  const controller = new AbortController();
  const stream = await unix.completions.create({ model: "demo", prompt: "Once", max_tokens: 100000, stream: true,
                                                 temperature: 0 }, { signal: controller.signal });
  try {
    for await (const chunk of stream) if (chunk.choices[0]?.text) break;  // generating
  } catch {}
  controller.abort();
  const elapsed = await idleWithin(250);
  figures.idle_after_abort_ms = elapsed.toFixed(1);
  assert.equal((await status()).requests.cancelled, cancelled + 1);
});

// The service checks for a cancel before every prefill chunk (128 tokens), so an abort ends the
// request within one chunk's compute. The bound is 1 s, or three chunks where one chunk takes
// longer than a third of that (a sanitizer build computes a chunk in about a second); the whole
// prompt is eight chunks, so a cancel that waited for the prompt still fails it.
async function tokensOf(prefix, count) {
  const words = Array.from({ length: count + count / 5 }, (_, i) => `${prefix}${i % 97}`).join(" ");
  const tokens = (await (await fetch(`http://127.0.0.1:${port}/tokenize`, {
    method: "POST", headers: { Authorization: `Bearer ${apiKey}` }, body: JSON.stringify({ content: words }) })).json()).tokens;
  assert.ok(tokens.length >= count, `${tokens.length} tokens, ${count} wanted`);
  return tokens.slice(0, count);
}

check("abort during a 1,000-token prompt: idle within 1 s (or three prefill chunks' time)", async () => {
  const chunkStart = performance.now();
  await tcp.completions.create({ model: "demo", prompt: await tokensOf("v", 128), max_tokens: 1 });
  const chunkMs = performance.now() - chunkStart;
  const prompt = await tokensOf("w", 1000);
  const cancelled = (await status()).requests.cancelled;
  const controller = new AbortController();
  const pending = tcp.completions.create({ model: "demo", prompt, max_tokens: 16, stream: true },
                                         { signal: controller.signal }).catch(() => {});
  await new Promise((r) => setTimeout(r, 30));  // the prompt is being computed
  controller.abort();
  await pending;
  const elapsed = await idleWithin(Math.max(1000, 3 * chunkMs));
  figures.idle_after_prefill_abort_ms = elapsed.toFixed(1);
  figures.prefill_chunk_ms = chunkMs.toFixed(1);
  assert.equal((await status()).requests.cancelled, cancelled + 1);  // cut, not finished
});

// --- run --------------------------------------------------------------------------------------
let failed = 0;
for (const { name, body } of checks) {
  const start = performance.now();
  try {
    await body();
    console.log(`ok   ${name} (${(performance.now() - start).toFixed(0)} ms)`);
  } catch (error) {
    ++failed;
    console.log(`FAIL ${name}: ${error.stack ?? error}`);
  }
}
console.log(`figures: ${JSON.stringify(figures)}`);
server.kill("SIGTERM");
await new Promise((resolve) => server.on("exit", resolve));
await unixAgent.close();
rmSync(dir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
