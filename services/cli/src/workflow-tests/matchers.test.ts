import { describe, expect, it } from 'vitest';
import { mismatches } from './matchers.js';

describe('workflow test matchers', () => {
  const body = { title: 'GRAPHS', words: 6, tags: ['a', 'b'], meta: { source: 'feed', n: 1 }, _keywords: [{ value: 'london', relevance: 0.8 }] };

  it('exact: the whole body, no field more or less', () => {
    expect(mismatches({ exact: { ...body } }, body)).toEqual([]);
    expect(mismatches({ exact: { title: 'GRAPHS', words: 6, tags: ['a', 'b'], meta: { source: 'feed', n: 1 } } }, body)).toEqual([
      'exact: fields not expected: _keywords',
    ]);
    expect(mismatches({ exact: { ...body, words: 7 } }, body)).toEqual(['exact: words: expected 7, got 6']);
  });

  it('subset: nested objects key by key, lists item by item and of the same length', () => {
    expect(mismatches({ subset: { meta: { source: 'feed' }, _keywords: [{ value: 'london' }] } }, body)).toEqual([]);
    expect(mismatches({ subset: { meta: { source: 'rss' }, tags: ['a'], missing: null } }, body)).toEqual([
      'subset: meta.source: expected "rss", got "feed"',
      'subset: tags: expected ["a"], got ["a","b"]',
      'subset: missing: expected null, got nothing',
    ]);
  });

  it('regex: a dotted path to a field; a value that is not a string is matched as JSON', () => {
    expect(mismatches({ regex: { title: '^GRA', '_keywords.0.value': 'lon', words: '^6$', meta: '"feed"' } }, body)).toEqual([]);
    expect(mismatches({ regex: { title: '^graphs$', 'meta.nope': '.' } }, body)).toEqual([
      'regex: title: "GRAPHS" does not match /^graphs$/',
      'regex: meta.nope: no such field',
    ]);
  });

  it('all matchers given must hold', () => {
    expect(mismatches({ subset: { words: 6 }, regex: { title: 'x' } }, body)).toEqual(['regex: title: "GRAPHS" does not match /x/']);
  });
});
