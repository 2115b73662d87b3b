/** The part of a list request that pages it. */
export interface PageRequest {
  readonly pageSize: number;
  readonly pageToken: string;
}

/** How many items the CLI asks for in one page. */
export const PAGE_SIZE = 1000;

/** Yields every page of a list call, from the first, following `nextPageToken` until a page has none. */
export async function* pages<Page extends { readonly nextPageToken: string }>(fetchPage: (request: PageRequest) => Promise<Page>): AsyncGenerator<Page> {
  let pageToken = '';
  do {
    const page = await fetchPage({ pageSize: PAGE_SIZE, pageToken });
    yield page;
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
}
