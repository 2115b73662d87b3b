import { describe, expect, it } from 'vitest';
import { AgtypeSyntaxError, parseAgtype } from './agtype.js';

describe('parseAgtype', () => {
  it.each([
    ['1', 1],
    ['-7', -7],
    ['9007199254740993', '9007199254740993'],
    ['-9223372036854775808', '-9223372036854775808'],
    ['2.5', 2.5],
    ['3.0', 3],
    ['1e+300', 1e300],
    ['NaN', NaN],
    ['-Infinity', -Infinity],
    ['1::numeric', 1],
    ['1.5::numeric', 1.5],
    ['12345678901234567890.123::numeric', '12345678901234567890.123'],
    ['"a\\"b\\\\c\\n\\u0001é"', 'a"b\\c\n\u0001é'],
    ['true', true],
    ['null', null],
    ['[1, "two", [], {}]', [1, 'two', [], {}]],
    ['{"k": "v", "we ird": {"x": [1.5, null]}}', { k: 'v', 'we ird': { x: [1.5, null] } }],
    ['{"numberText": "not a number"}', { numberText: 'not a number' }],
  ])('reads %s', (text, value) => {
    expect(parseAgtype(text)).toEqual(value);
  });

  it('reads vertices, edges and paths into the plain shapes, ids as text', () => {
    const vertex = '{"id": 844424930131969, "label": "Person", "properties": {"name": "x::vertex", "n": 1}}::vertex';
    const unlabelled = '{"id": 12384898975268866, "label": "", "properties": {}}::vertex';
    const edge = '{"id": 1125899906842625, "label": "KNOWS", "end_id": 12384898975268866, "start_id": 844424930131969, "properties": {"w": 1.5}}::edge';
    const person = { id: '844424930131969', labels: ['Person'], properties: { name: 'x::vertex', n: 1 } };
    const other = { id: '12384898975268866', labels: [], properties: {} };
    const knows = { id: '1125899906842625', type: 'KNOWS', start: '844424930131969', end: '12384898975268866', properties: { w: 1.5 } };
    expect(parseAgtype(vertex)).toEqual(person);
    expect(parseAgtype(edge)).toEqual(knows);
    expect(parseAgtype(`[${vertex}, ${edge}, ${unlabelled}]::path`)).toEqual({ nodes: [person, other], relationships: [knows] });
    expect(parseAgtype(`{"node": ${vertex}, "list": [${unlabelled}]}`)).toEqual({ node: person, list: [other] });
  });

  it('keeps a key named __proto__ as a key', () => {
    const value = parseAgtype('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it.each(['{"a" 1}', '[1, 2', '"open', 'nope', '1 2', '{"id": "x", "label": "L", "properties": {}}::vertex'])('refuses %s', (text) => {
    expect(() => parseAgtype(text)).toThrow(AgtypeSyntaxError);
  });
});
