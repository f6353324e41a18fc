// Loads a GGUF file in llama.cpp (node-llama-cpp's prebuilt CPU binary), tokenizes a prompt and
// generates greedily, printing one JSON object: the oracle for files `kite convert` and
// `kite synth` write.
//   node tools/llamacpp/check_gguf.mjs FILE.gguf [PROMPT] [N_TOKENS]
import {getLlama} from "node-llama-cpp";

const [modelPath, prompt = "The secret of life is", count = "16"] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node check_gguf.mjs FILE.gguf [PROMPT] [N_TOKENS]");
  process.exit(2);
}

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const promptIds = model.tokenize(prompt, false);
const input = model.tokens.shouldPrependBosToken && model.tokens.bos != null
  ? [model.tokens.bos, ...promptIds]
  : promptIds;
const context = await model.createContext({contextSize: 256, threads: 1});
const sequence = context.getSequence();
const generated = [];
for await (const token of sequence.evaluate(input, {temperature: 0})) {
  if (model.isEogToken(token) || generated.length >= Number(count)) break;
  generated.push(token);
}
console.log(JSON.stringify({
  file: modelPath,
  bos: model.tokens.bos,
  eos: model.tokens.eos,
  add_bos: model.tokens.shouldPrependBosToken,
  prompt,
  prompt_ids: input,
  generated_ids: generated,
  text: model.detokenize(generated),
}));
await context.dispose();
await model.dispose();
await llama.dispose();
