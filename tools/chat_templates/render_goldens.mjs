// Renders every testdata/chat_templates/*.jinja on a fixed set of conversations, and every feature
// snippet in features.mjs, with the reference @huggingface/jinja (pinned in package.json), into
// testdata/chat_templates/goldens.json. Kite's C++ tests render the same inputs and compare byte
// for byte; where the reference raised, Kite must raise too (the messages are not compared).
//
//   cd tools/chat_templates && npm ci && node render_goldens.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';
import { FEATURES } from './features.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.join(here, '..', '..', 'testdata', 'chat_templates');
const version = JSON.parse(
  fs.readFileSync(path.join(here, 'node_modules', '@huggingface', 'jinja', 'package.json'), 'utf8'),
).version;

// Special tokens as each model family's tokenizer_config.json names them.
const TOKENS = {
  llama2: ['<s>', '</s>'],
  llama3: ['<|begin_of_text|>', '<|eot_id|>'],
  'llama3-base': ['<|begin_of_text|>', '<|end_of_text|>'],
  'llama3.1': ['<|begin_of_text|>', '<|eot_id|>'],
  'llama3.2': ['<|begin_of_text|>', '<|eot_id|>'],
  mistral: ['<s>', '</s>'],
  'mistral-system': ['<s>', '</s>'],
  mixtral: ['<s>', '</s>'],
  phi3: ['<s>', '<|endoftext|>'],
  'phi3.5': ['<s>', '<|endoftext|>'],
  gemma: ['<bos>', '<eos>'],
  qwen2: ['', '<|im_end|>'],
  'qwen2.5': ['', '<|im_end|>'],
  smollm2: ['<|im_start|>', '<|im_end|>'],
  zephyr: ['<s>', '</s>'],
  chatml: ['<s>', '</s>'],
};

const m = (role, content) => ({ role, content });
const CONVERSATIONS = {
  user: [m('user', 'Hello!')],
  system_user: [m('system', 'You are a helpful assistant.'), m('user', 'What is 2+2?')],
  multi_turn: [
    m('system', 'You are a concise assistant.'),
    m('user', 'Hello'),
    m('assistant', 'Hi there'),
    m('user', 'Who are you?'),
    m('assistant', '   I am an assistant   '),
    m('user', 'Another question'),
  ],
  no_system_multi_turn: [m('user', 'Hi'), m('assistant', 'Hello! How can I help?'), m('user', 'Tell me a joke.')],
  ends_with_assistant: [m('user', 'Say hi'), m('assistant', 'hi')],
  bad_order: [m('user', 'one'), m('user', 'two')],
  assistant_first: [m('assistant', 'I speak first'), m('user', 'ok')],
  unknown_role: [m('user', 'hi'), m('tool', '{"temperature": 21}')],
  unicode: [
    m('system', '  \u00a0Réponds en français, s\u2019il te plaît.\u3000 '),
    m('user', '高通NPU大模型推理 🚀 café naïve — emoji 👩‍💻 and \u2028 line separator\t\n'),
    m('assistant', 'Ελληνικά και русский текст. ½ ² ﬁ'),
    m('user', '\ufeffBOM and \u0085 NEL and zero\u200bwidth'),
  ],
  jinja_lookalike: [
    m('system', "{{ raise_exception('not me') }}"),
    m('user', "{{ x }} {% if true %}yes{% endif %} {# comment #} {%- raw -%}"),
    m('assistant', "'quoted' \"double\" \\backslash\\n not-a-newline"),
    m('user', '<|im_end|><|eot_id|>[INST] </s>'),
  ],
  empty_content: [m('system', ''), m('user', ''), m('assistant', ''), m('user', ' ')],
  empty: [],
};

const DATE_STRING = '26 Jul 2024';

function render(source, vars) {
  let template;
  try {
    template = new Template(source);
  } catch (e) {
    return { error: String(e.message ?? e), phase: 'parse' };
  }
  try {
    return { output: template.render(vars) };
  } catch (e) {
    return { error: String(e.message ?? e), phase: 'render' };
  }
}

const templates = fs
  .readdirSync(dataDir)
  .filter((f) => f.endsWith('.jinja'))
  .map((f) => f.slice(0, -'.jinja'.length))
  .sort();

const cases = [];
for (const name of templates) {
  const source = fs.readFileSync(path.join(dataDir, `${name}.jinja`), 'utf8');
  const [bos, eos] = TOKENS[name] ?? ['<s>', '</s>'];
  for (const [conversation, messages] of Object.entries(CONVERSATIONS)) {
    for (const addGenerationPrompt of [true, false]) {
      const vars = {
        messages,
        add_generation_prompt: addGenerationPrompt,
        bos_token: bos,
        eos_token: eos,
        date_string: DATE_STRING,
      };
      cases.push({
        template: name,
        conversation,
        add_generation_prompt: addGenerationPrompt,
        bos_token: bos,
        eos_token: eos,
        extra_vars: { date_string: DATE_STRING },
        ...render(source, vars),
      });
    }
  }
}

// Tool calling: the templates that support it, on a conversation with tools and a tool call.
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'City name, e.g. "Paris"' }, days: { type: 'integer' } },
        required: ['city'],
      },
    },
  },
];
const TOOL_CONVERSATION = [
  m('system', 'You can call tools.'),
  m('user', 'Weather in Paris?'),
  { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris', days: 2 } } }] },
  { role: 'tool', content: '{"temperature": 21.5, "sky": "clear"}' },
  { role: 'tool', content: '{"note": "ünïcode"}' },
];
const TOOL_FEATURES = ['llama3.1', 'llama3.2', 'qwen2.5'].map((name) => [
  `tools_${name}`,
  fs.readFileSync(path.join(dataDir, `${name}.jinja`), 'utf8'),
  {
    messages: TOOL_CONVERSATION,
    tools: TOOLS,
    add_generation_prompt: true,
    bos_token: TOKENS[name][0],
    eos_token: TOKENS[name][1],
    date_string: DATE_STRING,
  },
]);

const features = [...FEATURES, ...TOOL_FEATURES].map(([name, source, vars = {}]) => ({
  name,
  source,
  vars,
  ...render(source, vars),
}));

const goldens = {
  generator: `tools/chat_templates/render_goldens.mjs with @huggingface/jinja ${version}`,
  conversations: CONVERSATIONS,
  cases,
  features,
};
fs.writeFileSync(path.join(dataDir, 'goldens.json'), JSON.stringify(goldens, null, 1) + '\n');
const raised = cases.filter((c) => c.error).length;
const featureErrors = features.filter((c) => c.error).length;
console.log(
  `${cases.length} template cases (${raised} raised), ${features.length} feature cases ` +
    `(${featureErrors} raised) -> testdata/chat_templates/goldens.json`,
);
