// ONNX Runtime as the oracle for Kite's ONNX import (tests/onnx_import_test.cpp):
//
//   node run_onnx.mjs MODEL.onnx IDS OUT.f32 [--steps N --kv KV_HEADS,HEAD_DIM]
//
// runs MODEL on the comma-separated token ids IDS (batch 1) on ONNX Runtime's CPU provider and
// writes the logits of every position, [tokens, vocab] little-endian float32, to OUT.f32.
// A model with past_key_values inputs is run as a generator would: the prompt (all but the last
// N ids) with an empty past, then each of the last N ids alone with the presents fed back, so the
// cache path is what produces those rows (--kv gives the cache's fixed sizes: this release's
// session does not report input shapes). A model without them sees all ids at once.
import fs from "node:fs";
import ort from "onnxruntime-node";

const [model, idsText, out, ...rest] = process.argv.slice(2);
if (!model || !idsText || !out) {
  console.error("usage: node run_onnx.mjs MODEL.onnx IDS OUT.f32 [--steps N]");
  process.exit(2);
}
const flag = (name) => (rest.indexOf(name) >= 0 ? rest[rest.indexOf(name) + 1] : undefined);
const steps = Number(flag("--steps") ?? 0);
const kv = (flag("--kv") ?? "").split(",").map(Number);
const ids = idsText.split(",").map((s) => BigInt(s));

const session = await ort.InferenceSession.create(model, { executionProviders: ["cpu"],
  graphOptimizationLevel: "disabled", logSeverityLevel: 3 });
const pastNames = session.inputNames.filter((n) => n.startsWith("past_key_values."));
const rows = [];

function int64(values, dims) {
  return new ort.Tensor("int64", BigInt64Array.from(values), dims);
}

async function run(chunk, past, start) {
  const feeds = { input_ids: int64(chunk, [1, chunk.length]) };
  if (session.inputNames.includes("attention_mask")) {
    feeds.attention_mask = int64(new Array(start + chunk.length).fill(1n), [1, start + chunk.length]);
  }
  if (session.inputNames.includes("position_ids")) {
    feeds.position_ids = int64(chunk.map((_, i) => BigInt(start + i)), [1, chunk.length]);
  }
  Object.assign(feeds, past);
  const result = await session.run(feeds);
  const logits = result.logits;
  const vocab = logits.dims[2];
  for (let t = 0; t < chunk.length; ++t) rows.push(logits.data.slice(t * vocab, (t + 1) * vocab));
  const present = {};
  for (const name of pastNames) present[name] = result[name.replace("past_key_values.", "present.")];
  return present;
}

if (pastNames.length === 0) {
  await run(ids, {}, 0);
} else {
  // An empty past: [batch, kv_heads, 0, head_dim].
  if (kv.length !== 2 || !kv.every((n) => n > 0)) throw new Error("a model with a KV cache needs --kv KV_HEADS,HEAD_DIM");
  let past = {};
  for (const name of pastNames) {
    past[name] = new ort.Tensor("float32", new Float32Array(0), [1, kv[0], 0, kv[1]]);
  }
  const prompt = ids.length - steps;
  past = await run(ids.slice(0, prompt), past, 0);
  for (let i = prompt; i < ids.length; ++i) past = await run(ids.slice(i, i + 1), past, i);
}
const all = new Float32Array(rows.reduce((n, r) => n + r.length, 0));
let offset = 0;
for (const r of rows) {
  all.set(r, offset);
  offset += r.length;
}
fs.writeFileSync(out, Buffer.from(all.buffer));
