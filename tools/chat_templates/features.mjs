// Small templates, one Jinja feature each, rendered by render_goldens.mjs. Each entry is
// [name, template source, variables]; variables must be plain JSON (Kite's test loads them).
const msgs = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi' },
];

export const FEATURES = [
  // Text, comments, whitespace control, trim_blocks / lstrip_blocks.
  ['text', 'plain text'],
  ['text_trailing_newline', 'one\n'],
  ['text_two_trailing_newlines', 'one\n\n'],
  ['comment', 'a{# note #}b'],
  ['comment_strip', 'a  {#- note -#}  b'],
  ['comment_trim_blocks', 'a{# note #}\nb'],
  ['expr_strip', 'a  {{- "x" -}}  \n b'],
  ['stmt_strip', 'a \n {%- if true -%} \n b \n {%- endif -%} \n c'],
  ['trim_blocks', '{% if true %}\nyes\n{% endif %}\nafter'],
  ['lstrip_blocks', 'line\n    {% if true %}\n    body\n    {% endif %}\nend'],
  ['lstrip_not_after_text', 'x {% if true %}y{% endif %}'],
  ['expr_no_trim', '{{ "a" }}\nb'],
  ['crlf', '{% if true %}\r\nyes\r\n{% endif %}\r\n'],
  ['unicode_whitespace_strip', 'a\u00a0\u3000 {{- "b" -}} \u2028c'],
  ['generation_tag', 'a {% generation %} b {% endgeneration %} c'],
  ['generation_tag_strip', 'a {%- generation -%} b {%- endgeneration -%} c'],

  // Literals and printing.
  ['ints', '{{ 1 }} {{ -2 }} {{ 10 // 3 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}'],
  ['floats', '{{ 1.5 }} {{ 2.0 }} {{ 1 / 2 }} {{ 4 / 2 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ -0.0 }} {{ 0 / 0 }} {{ 1 / 0 }}'],
  ['sci_notation_is_not_a_number', '{{ 1e3 }}'],
  ['big_numbers', '{{ 99999999999999999999 }} {{ 2 ** 70 }} {{ 10 ** 21 }} {{ 1 / 1000000 }} {{ 1 / 10000000 }}'],
  ['float_arith', '{{ 1.5 + 1 }} {{ 3 * 1.0 }} {{ 7.5 // 2 }} {{ 7.5 % 2 }} {{ 2 ** -1 }} {{ 2.5 ** 2 }}'],
  ['bools_none', '[{{ true }}][{{ false }}][{{ none }}][{{ True }}][{{ None }}]'],
  ['strings', "{{ 'single' }} {{ \"double\" }} {{ 'a' 'b' }} {{ 'esc\\t\\\\\\'' }} {{ '\\u00e9\\x41' }}"],
  ['list_print', "{{ [1, 'a', true, none, 1.0, [2]] }}"],
  ['dict_print', "{{ {'a': 1, 'b': 'x', 'c': [1, 2], 'd': {'e': none}} }}"],
  ['tuple_literal_len', '{{ (1, 2, 3) | length }}'],
  ['undefined_print', '[{{ nothing }}][{{ nothing.attr }}][{{ messages.nope }}]', { messages: msgs }],

  // Operators.
  ['concat', "{{ 'a' ~ 1 ~ 1.0 ~ true ~ 2.5 }} {{ 'a' + 'b' }} {{ 'n' + 1 }} {{ 1 + 'n' }}"],
  ['concat_list', "{{ 'x' ~ [1, 'a'] }}|{{ [1, 2] + [3] }}"],
  ['compare', '{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ "a" == "a" }}'],
  ['loose_equality', '{{ 1 == "1" }} {{ true == 1 }} {{ none == nothing }} {{ "" == 0 }} {{ [1] == [1] }}'],
  ['logic', '{{ true and "x" }} {{ false or "y" }} {{ not 0 }} {{ [] or "empty" }} {{ "" and 1 }}'],
  ['in', "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} {{ 1 in nothing }}"],
  ['ternary', "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'only' if false }}]"],
  ['unary', '{{ -(3) }} {{ +4 }} {{ - 2.5 }} {{ -true }}'],

  // Statements.
  ['if_elif_else', '{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}{% endfor %}'],
  [
    'for_loop_vars',
    '{% for x in ["a", "b", "c"] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}' +
      '{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}',
  ],
  ['for_else', '{% for x in [] %}{{ x }}{% else %}none{% endfor %}'],
  ['for_dict', "{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"],
  ['for_items', "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"],
  ['for_items_filter', "{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }};{% endfor %}"],
  ['for_if_filter', '{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }};{% endfor %}'],
  ['break_continue', '{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}'],
  ['for_scope', '{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}'],
  ['for_scope_persists', '{% for i in [1, 2] %}{% if loop.first %}{% set y = 5 %}{% endif %}{{ y }};{% endfor %}'],
  ['if_scope', '{% if true %}{% set x = 3 %}{% endif %}{{ x }}'],
  ['namespace', '{% set ns = namespace(n=0, s="") %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}'],
  ['namespace_print', '{% set ns = namespace(a=1) %}{{ ns }} {{ ns.a }} {{ ns.b }}'],
  ['set_tuple', '{% set a, b = 1, 2 %}{{ a }}{{ b }}'],
  ['set_block', '{% set x %}  inner {{ 1 + 1 }}  {% endset %}[{{ x }}]'],
  ['macro', "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}"],
  ['macro_kwargs_varargs', '{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }}'],
  ['macro_too_many_args', '{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}'],
  ['filter_block', '{% filter upper %}shout {{ "this" }}{% endfilter %}'],
  ['raise', "{{ raise_exception('boom') }}"],

  // Member access, indexing, slicing.
  ['index', '{{ messages[0].role }} {{ messages[-1]["content"] }} {{ messages[5] }} {{ messages.length }}', { messages: msgs }],
  ['slice_list', '{{ [1, 2, 3, 4, 5][1:3] }} {{ [1, 2, 3, 4][::-1] }} {{ [1, 2, 3][-2:] }} {{ [1, 2, 3, 4, 5][::2] }} {{ [1, 2][5:] }}'],
  ['slice_messages', '{% for m in messages[1:] %}{{ m.role }};{% endfor %}', { messages: msgs }],
  ['slice_string', "{{ 'héllo wörld'[1:4] }} {{ 'abc'[::-1] }} {{ 'abc'[-1] }} {{ 'abc'[5] }} {{ '🚀x'[1:] }}"],
  ['dict_get', "{% set d = {'a': 1} %}{{ d.get('a') }} {{ d.get('b') }} {{ d.get('b', 2) }} {{ d['a'] }} {{ d.a }}"],
  ['dict_methods', "{% set d = {'b': 1, 'a': 2} %}{{ d.keys() }} {{ d.values() }} {{ d.items() }}"],

  // Tests.
  [
    'tests_types',
    "{{ 1 is number }} {{ 1.5 is integer }} {{ 'a' is string }} {{ none is none }} {{ x is defined }} " +
      "{{ x is undefined }} {{ [1] is iterable }} {{ {} is mapping }} {{ true is boolean }} {{ 'a' is sequence }}",
  ],
  ['tests_values', "{{ 3 is odd }} {{ 4 is even }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ true is true }} {{ 0 is false }} {{ 1 is not none }}"],
  ['test_callable', '{{ raise_exception is callable }} {{ 1 is callable }}'],
  ['test_odd_on_string', "{{ 'a' is odd }}"],
  ['test_unknown', '{{ 1 is prime }}'],

  // Filters.
  ['filter_string_case', "{{ 'hello world' | upper }} {{ 'MiXeD' | lower }} {{ 'hello wORLD o\\'neil' | title }} {{ 'hello World' | capitalize }}"],
  ['filter_trim', "[{{ '  \\n x y \\t ' | trim }}][{{ '\u00a0\u3000z\ufeff' | trim }}]"],
  ['filter_length', "{{ 'héllo🚀' | length }} {{ [1, 2] | length }} {{ {'a': 1} | length }}"],
  ['filter_first_last', "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }}"],
  ['filter_join', "{{ ['a', 'b', 1, 2.0, true] | join }} {{ ['a', 'b'] | join(', ') }} {{ 'abc' | join('-') }}"],
  ['filter_default', "{{ nothing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }}"],
  ['filter_default_no_args', '{{ nothing | default }}'],
  ['filter_reverse_sort', "{{ [3, 1, 2] | reverse }} {{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }}"],
  ['filter_sort_attribute', "{{ [{'n': 2}, {'n': 1}] | sort(attribute='n') }}"],
  ['filter_sort_mixed', "{{ [1, 'a'] | sort }}"],
  ['filter_unique', '{{ [1, 2, 1, 3, 2] | unique }}'],
  ['filter_numbers', "{{ '42' | int }} {{ '4.5' | float }} {{ 'x' | int }} {{ 3.7 | int }} {{ -3 | abs }} {{ 2 | float }} {{ '12abc' | int }}"],
  ['filter_string', '{{ 1.0 | string }} {{ true | string }} {{ [1, "a"] | string }}'],
  ['filter_indent', "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}"],
  ['filter_replace', "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc'.replace('', '-') }}"],
  ['filter_tojson', "{{ {'a': [1, 2.5, 'x\"\\n'], 'b': none, 'c': true} | tojson }}"],
  ['filter_tojson_indent', "{{ {'a': [1, {'b': []}], 'c': {}} | tojson(indent=2) }}"],
  ['filter_tojson_options', "{{ {'b': 'é', 'a': 1} | tojson(ensure_ascii=true, sort_keys=true, separators=(',', ':')) }}"],
  ['filter_tojson_unicode', "{{ 'café 🚀 \\u0001 \\u007f' | tojson }} {{ 'café 🚀' | tojson(ensure_ascii=true) }}"],
  ['filter_tojson_messages', '{{ messages | tojson }}', { messages: msgs }],
  ['filter_items_dictsort', "{{ {'b': 1, 'a': 2} | items }} {{ {'b': 1, 'A': 2, 'a': 0} | dictsort }}"],
  ['filter_selectattr', "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'equalto', 'user') | length }}", { messages: msgs }],
  ['filter_map', "{{ messages | map(attribute='role') | join(',') }}", { messages: msgs }],
  ['filter_safe_list', "{{ 'x' | safe }} {{ [1] | list }}"],
  ['filter_unknown', "{{ 'x' | frobnicate }}"],
  ['filter_on_undefined', '{{ nothing | length }}'],
  ['filter_chain', "{{ '  Hello  ' | trim | upper | length }}"],

  // String methods.
  ['method_strip', "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]"],
  ['method_startswith', "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }}"],
  ['method_split', "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.split(none, 1) }}"],
  ['method_case', "{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.capitalize() }}"],
  ['method_unicode_case', "{{ 'ÉCOLE Ελλάδα Москва straße' | lower }} {{ 'école ελλάδα москва' | upper }} {{ 'ΟΔΟΣ ΣΑΣ' | lower }} {{ 'ÿ ǅ ı' | upper }}"],
  ['method_replace_count', "{{ 'a-b-c'.replace('-', '+', 1) }} {{ 'a-b-c'.replace('-', '+', count=2) }}"],
  ['string_length_attr', "{{ 'abc'.length }}"],

  // Functions and globals.
  ['range', '{{ range(3) }} {{ range(1, 4) }} {{ range(5, 0, -2) }} {{ range(0) }}'],
  ['range_loop', '{% for i in range(messages | length) %}{{ i }}{% endfor %}', { messages: msgs }],
  ['call_non_function', '{{ messages() }}', { messages: msgs }],

  // Errors the reference raises.
  ['undefined_concat', "{{ nothing ~ 'x' }}"],
  ['undefined_plus', "{{ nothing + 'x' }}"],
  ['none_concat', "{{ none ~ 'x' }}"],
  ['string_compare', "{{ 'a' < 'b' }}"],
  ['index_undefined', '{{ nothing[0] }}'],
  ['dict_int_key', "{{ {'a': 1}[0] }}"],
  ['for_over_string', "{% for c in 'abc' %}{{ c }}{% endfor %}"],
  ['print_tuple', '{{ (1, 2) }}'],
  ['first_of_empty', '{{ [] | first }}'],

  // Syntax errors.
  ['unterminated_expr', 'a {{ b'],
  ['unterminated_stmt', 'a {% if x'],
  ['unterminated_block', '{% if true %}a'],
  ['unterminated_comment', 'a {# b'],
  ['unterminated_string', "{{ 'abc }}"],
  ['unknown_statement', '{% frob %}'],
  ['bad_char', '{{ 1 $ 2 }}'],
  ['bad_escape', "{{ '\\q' }}"],
  ['endfor_without_for', '{% endfor %}'],
  ['missing_endfor', '{% for x in y %}'],
  ['empty_expr', '{{ }}'],
];

// Every code point of the blocks whose case mapping Kite implements, upper- and lower-cased.
const block = (first, last) => {
  let s = '';
  for (let cp = first; cp <= last; ++cp) s += String.fromCodePoint(cp);
  return s;
};
const CASE_BLOCKS = [
  ['latin1', 0xc0, 0xff], ['latin_ext_a', 0x100, 0x17f], ['latin_ext_b', 0x1cd, 0x233],
  ['greek', 0x386, 0x3ce], ['cyrillic', 0x400, 0x52f], ['armenian', 0x531, 0x587],
  ['latin_ext_additional', 0x1e00, 0x1eff], ['fullwidth', 0xff21, 0xff5a],
];
for (const [name, first, last] of CASE_BLOCKS) {
  FEATURES.push([`case_${name}`, '{{ text | upper }}|{{ text | lower }}', { text: block(first, last) }]);
}
