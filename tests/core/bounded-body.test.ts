// Answers from outside read within a size bound: core/bounded-body.ts's limitBody against a server that streams a 200
// answer without end fails the read at the bound and cuts the connection; the hosted chat source (an --endpoint)
// reads a reply that never ends only that far and fails the item in one line; the Hub fetch (envs/metbench) stops a
// download past its bound with HubTooLarge.
import { afterEach, describe, expect, it } from 'vitest';
import { limitBody } from '../../core/bounded-body.ts';
import { hostedSource } from '../../eval/sources/hosted.ts';
import { RequestFailure } from '../../eval/retry.ts';
import type { Query } from '../../eval/types.ts';
import { boundedFetch, HubTooLarge } from '../../envs/metbench/bounded-fetch.ts';
import { endlessServer, type EndlessServer } from '../helpers/endless-server.ts';

let server: EndlessServer | null = null;
afterEach(() => {
  server?.close();
  server = null;
});

const settle = () => new Promise((done) => setTimeout(done, 200));

describe('answers read within a size bound', () => {
  it('limitBody fails the read at the bound and cuts the connection', async () => {
    server = await endlessServer();
    const response = limitBody(await fetch(server.url), 1024 * 1024, () => new Error('too large'));
    await expect(response.text()).rejects.toThrow('too large');
    await settle();
    expect(server.closed()).toBe(true);
    expect(server.sent()).toBeLessThan(32 * 1024 * 1024);
  });

  it('the hosted chat source gives up a reply that never ends, failing the item', async () => {
    server = await endlessServer();
    const source = hostedSource({
      model: 'm',
      endpointUrl: `${server.url}/v1`,
      sampling: { temperature: 0, maxTokens: 8 },
      toChat: async () => [{ role: 'user', content: 'hi' }],
    });
    const error = await source.complete({} as Query, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestFailure);
    expect((error as RequestFailure).message).toBe('the reply is over 32 MB; read no further');
    expect((error as RequestFailure).kind).toBe('item');
    await settle();
    expect(server.closed()).toBe(true);
  });

  it('the Hub fetch stops a download past its bound', async () => {
    server = await endlessServer('application/octet-stream');
    const response = await boundedFetch(10_000, fetch, 2 * 1024 * 1024)(`${server.url}/datasets/x/resolve/main/a`);
    const error = await response.arrayBuffer().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HubTooLarge);
    expect((error as Error).message).toMatch(/^127\.0\.0\.1:\d+ sent more than 2 MB for one file$/);
  });
});
