// The llama.cpp side of bench/compare.sh: llama-bench's two tests driven through node-llama-cpp's
// prebuilt CPU binaries, printing the JSON `kite bench --json` prints (same field names).
//
//   node llama_bench.mjs -m MODEL.gguf [-p 512] [-n 128] [-t 2] [-r 5]
//
// As llama-bench does (tools/llama-bench/llama-bench.cpp in ggml-org/llama.cpp):
//   - ppP: P random token ids (BOS first when the model adds BOS) evaluated at once into an
//     empty KV cache, in batches of at most 512 (llama-bench's default n_ubatch);
//   - tgN: N one-token evaluations from an empty cache, BOS then random ids, each computing the
//     logits of its token (node-llama-cpp computes logits only when asked for a next token, so
//     each step asks for one, greedy; llama-bench computes them and ignores them);
//   - one untimed warm-up (a whole ppP; one tg step), then -r timed repetitions, each after
//     clearing the sequence's cache (outside the timed span); a fresh context per test;
//   - avg_ts / stddev_ts: mean and sample standard deviation of tokens * 1e9 / ns per repetition.
// Differences from llama-bench: each evaluation is an async call from JavaScript into the addon
// (a few microseconds per tg step), and threads are node-llama-cpp's (one pool of -t threads).
// model_size is llama_model_size (model.size); model_n_params sums the elements of every tensor
// in the file, which is what llama_model_n_params sums.
import fs from "node:fs";
import process from "node:process";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const kUbatch = 512;

function usage(message) {
    process.stderr.write(`llama_bench.mjs: ${message}\n` +
        "usage: node llama_bench.mjs -m MODEL.gguf [-p 512] [-n 128] [-t 2] [-r 5]\n");
    process.exit(2);
}

function parseList(flag, text) {
    const values = String(text).split(",").map((part) => {
        if (!/^\d+$/.test(part)) usage(`${flag} ${text}: expected comma-separated counts >= 0`);
        return Number(part);
    });
    return values;
}

function parseArgs(argv) {
    const options = {model: "", nPrompt: [512], nGen: [128], threads: 2, reps: 5};
    for (let i = 0; i < argv.length; i++) {
        const flag = argv[i];
        const value = argv[i + 1];
        if (value === undefined) usage(`${flag} needs a value`);
        i++;
        if (flag === "-m" || flag === "--model") options.model = value;
        else if (flag === "-p" || flag === "--n-prompt") options.nPrompt = parseList(flag, value);
        else if (flag === "-n" || flag === "--n-gen") options.nGen = parseList(flag, value);
        else if (flag === "-t" || flag === "--threads") options.threads = parseList(flag, value)[0];
        else if (flag === "-r" || flag === "--repetitions") options.reps = parseList(flag, value)[0];
        else usage(`unknown flag ${flag}`);
    }
    if (options.model === "") usage("-m MODEL.gguf is required");
    if (!fs.existsSync(options.model)) usage(`${options.model}: no such file`);
    if (options.threads < 1 || options.reps < 1) usage("-t and -r must be >= 1");
    return options;
}

// Which of the prebuilt libggml-cpu-<variant>.so files ggml's backend loader chose (it scores
// every variant against the CPU's features and loads the best).
function loadedCpuVariant() {
    const maps = fs.readFileSync("/proc/self/maps", "utf8");
    const match = maps.match(/libggml-cpu-([\w-]+)\.so/);
    return match ? match[1] : "unknown";
}

function mean(values) {
    return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

function stddev(values) {
    if (values.length < 2) return 0;
    const m = mean(values);
    return Math.sqrt(values.reduce((a, x) => a + (x - m) * (x - m), 0) / (values.length - 1));
}

// A fixed-seed generator (mulberry32), so every run feeds the same ids.
function makeRandom(seed) {
    let state = seed >>> 0;
    return () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

async function main() {
    const options = parseArgs(process.argv.slice(2));
    const loadStart = process.hrtime.bigint();
    const llama = await getLlama({gpu: false, maxThreads: options.threads, logLevel: LlamaLogLevel.error,
        build: "never"});
    const model = await llama.loadModel({modelPath: options.model, gpuLayers: 0});
    const loadNs = Number(process.hrtime.bigint() - loadStart);

    let nParams = 0;
    for (const tensor of model.fileInfo.fullTensorInfo ?? []) {
        nParams += tensor.dimensions.reduce((a, d) => a * Number(d), 1);
    }
    let vocab = 0;
    for (const _ of model.iterateAllTokens()) vocab++;
    const bos = model.shouldPrependBosToken ? model.tokens.bos : null;
    const random = makeRandom(1234);
    const randomId = () => Math.floor(random() * vocab);
    const firstId = () => (bos != null ? bos : randomId());

    const tests = [];
    for (const p of options.nPrompt) if (p > 0) tests.push({nPrompt: p, nGen: 0});
    for (const n of options.nGen) if (n > 0) tests.push({nPrompt: 0, nGen: n});
    if (tests.length === 0) usage("nothing to measure: every -p and -n value is 0");

    const results = [];
    for (const test of tests) {
        const tokens = test.nPrompt + test.nGen;
        const context = await model.createContext({
            contextSize: tokens,
            batchSize: Math.min(Math.max(test.nPrompt, 1), kUbatch),
            threads: {ideal: options.threads, min: options.threads},
            sequences: 1,
        });
        const sequence = context.getSequence();
        const timeOnce = async (nPrompt, nGen) => {
            await sequence.clearHistory();
            const prompt = [];
            if (nPrompt > 0) prompt.push(firstId());
            while (prompt.length < nPrompt) prompt.push(randomId());
            const gen = [];
            if (nGen > 0) gen.push(firstId());
            while (gen.length < nGen) gen.push(randomId());
            const start = process.hrtime.bigint();
            if (prompt.length > 0) await sequence.evaluateWithoutGeneratingNewTokens(prompt);
            for (const id of gen) {
                await sequence.controlledEvaluate([[id, {generateNext: {token: true,
                    options: {temperature: 0}}}]]);
            }
            return Number(process.hrtime.bigint() - start);
        };
        if (test.nPrompt > 0) await timeOnce(test.nPrompt, 0);  // warm-up
        if (test.nGen > 0) await timeOnce(0, 1);
        const samplesNs = [];
        for (let rep = 0; rep < options.reps; rep++) samplesNs.push(await timeOnce(test.nPrompt, test.nGen));
        const samplesTs = samplesNs.map((ns) => tokens * 1e9 / ns);
        results.push({
            model_filename: options.model,
            model_type: model.typeDescription,
            model_size: model.size,
            model_n_params: nParams,
            backends: "CPU",
            n_threads: options.threads,
            n_prompt: test.nPrompt,
            n_gen: test.nGen,
            avg_ns: Math.trunc(mean(samplesNs)),
            stddev_ns: Math.trunc(stddev(samplesNs)),
            avg_ts: mean(samplesTs),
            stddev_ts: stddev(samplesTs),
            samples_ns: samplesNs,
            samples_ts: samplesTs,
            load_ns: loadNs,
            peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
            cpu_variant: loadedCpuVariant(),
            llama_cpp_release: llama.llamaCppRelease?.release ?? "unknown",
        });
        await context.dispose();
    }
    process.stdout.write(JSON.stringify(results, null, 2) + "\n");
    await model.dispose();
    await llama.dispose();
}

main().catch((error) => {
    process.stderr.write(`llama_bench.mjs: ${error?.stack ?? error}\n`);
    process.exit(1);
});
