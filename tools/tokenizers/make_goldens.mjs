// What Hugging Face tokenizers (its Rust core, npm `tokenizers`) makes of each line of a corpus:
//   node make_goldens.mjs TOKENIZER_JSON CORPUS_JSONL > golden.jsonl
// CORPUS_JSONL has one {"id", "text"} per line; each output line is
//   {"id", "ids", "ids_with_special", "tokens", "decoded"}
// ids: encode(text, add_special_tokens=false); ids_with_special: with them; tokens: the token
// strings of ids; decoded: decode(ids, skip_special_tokens=false). The tests run this on the
// real tokenizer.json files this folder's package.json pins, so no golden file is committed.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');

const [tokenizerPath, corpusPath] = process.argv.slice(2);
if (!tokenizerPath || !corpusPath) {
  console.error('usage: node make_goldens.mjs TOKENIZER_JSON CORPUS_JSONL');
  process.exit(2);
}
const tokenizer = Tokenizer.fromFile(tokenizerPath);
const lines = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((line) => line.length > 0);
const out = [];
for (const line of lines) {
  const { id, text } = JSON.parse(line);
  const plain = await tokenizer.encode(text, null, { addSpecialTokens: false });
  const special = await tokenizer.encode(text, null, { addSpecialTokens: true });
  const ids = Array.from(plain.getIds());
  out.push(JSON.stringify({
    id,
    ids,
    ids_with_special: Array.from(special.getIds()),
    tokens: plain.getTokens(),
    decoded: await tokenizer.decode(ids, false),
  }));
}
process.stdout.write(out.join('\n') + '\n');
