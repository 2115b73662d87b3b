import { describe, expect, it } from 'vitest';
import { PAGE_SIZE, type PageRequest, pages } from './paging.js';

describe('pages', () => {
  it('follows nextPageToken from the first page until a page has none', async () => {
    const requests: PageRequest[] = [];
    const tokens: Record<string, string> = { '': 'b', b: 'c', c: '' };
    const seen: string[] = [];
    for await (const page of pages((request) => {
      requests.push(request);
      return Promise.resolve({ items: [`after '${request.pageToken}'`], nextPageToken: tokens[request.pageToken]! });
    })) {
      seen.push(...page.items);
    }
    expect(seen).toEqual(["after ''", "after 'b'", "after 'c'"]);
    expect(requests).toEqual([
      { pageSize: PAGE_SIZE, pageToken: '' },
      { pageSize: PAGE_SIZE, pageToken: 'b' },
      { pageSize: PAGE_SIZE, pageToken: 'c' },
    ]);
  });

  it('asks for no page after a failed one', async () => {
    let calls = 0;
    const failing = pages(() => {
      calls++;
      return Promise.reject(new Error('unavailable'));
    });
    await expect(failing.next()).rejects.toThrow('unavailable');
    expect(calls).toBe(1);
  });
});
