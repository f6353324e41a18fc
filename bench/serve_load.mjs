// Load on any OpenAI-compatible server: S streams at once, each a greedy /v1/completions of N
// tokens (ignore_eos, so every stream generates all N). Prints one JSON line: aggregate
// generated tokens/s (all streams' tokens / wall time from the first request to the last
// token) and time to first token p50/p99 in ms. Used by bench/serve_compare.sh.
//
//   node bench/serve_load.mjs --url http://127.0.0.1:8080 --streams 4 [--tokens 128] [--rounds 1]
const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const url = option("url", "http://127.0.0.1:8080");
const streams = Number(option("streams", 1));
const tokens = Number(option("tokens", 128));
const openings = ["Once upon a time", "You will", "A friend", "Never", "The best", "Today", "Love", "Money"];

async function one(i) {
  const start = performance.now();
  const response = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: "m", prompt: `${openings[i % 8]} (${i})`, max_tokens: tokens, temperature: 0,
                           ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
  });
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  let first = 0, generated = 0, chunks = 0, buffer = "";
  const decoder = new TextDecoder();
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end; (end = buffer.indexOf("\n\n")) >= 0; buffer = buffer.slice(end + 2)) {
      const line = buffer.slice(0, end);
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const event = JSON.parse(line.slice(6));
      if (event.usage) generated = event.usage.completion_tokens;
      if (event.choices?.[0]?.text) {
        if (!first) first = performance.now() - start;
        ++chunks;
      }
    }
  }
  return { first, generated: generated || chunks, end: performance.now() };
}

const start = performance.now();
const results = await Promise.all(Array.from({ length: streams }, (_, i) => one(i)));
const wall = (Math.max(...results.map((r) => r.end)) - start) / 1000;
const firsts = results.map((r) => r.first).sort((a, b) => a - b);
const quantile = (q) => firsts[Math.min(firsts.length - 1, Math.floor(q * firsts.length))];
console.log(JSON.stringify({
  streams,
  tokens_per_second: results.reduce((s, r) => s + r.generated, 0) / wall,
  ttft_p50_ms: quantile(0.5),
  ttft_p99_ms: quantile(0.99),
}));
