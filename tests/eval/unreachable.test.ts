// An endpoint nobody listens at is a wrong --endpoint, not a hiccup: the hosted source's failure is classified fatal
// (the run stops at once, exit 2) and names the address, through the real @huggingface/inference client and fetch.
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { hostedSource } from '../../eval/sources/hosted.ts';
import { RequestFailure, toFailure } from '../../eval/retry.ts';
import type { Query } from '../../eval/types.ts';

/** A port that was free a moment ago and has nobody listening now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

async function failureAt(endpointUrl: string): Promise<RequestFailure> {
  const source = hostedSource({
    model: 'm',
    endpointUrl,
    sampling: { temperature: 0, maxTokens: 8 },
    toChat: async () => [{ role: 'user', content: 'hi' }],
  });
  try {
    await source.complete({} as Query, new AbortController().signal);
  } catch (error) {
    return toFailure(error);
  }
  throw new Error('the request succeeded');
}

describe('an unreachable endpoint', () => {
  it('connection refused is fatal and names the address', async () => {
    const port = await closedPort();
    const failure = await failureAt(`http://127.0.0.1:${port}/v1`);
    expect(failure.kind).toBe('fatal');
    expect(failure.message).toContain(`127.0.0.1:${port} (ECONNREFUSED)`);
  });

  it('a port fetch refuses to use is fatal', async () => {
    const failure = await failureAt('http://127.0.0.1:9/v1');
    expect(failure.kind).toBe('fatal');
    expect(failure.message).toMatch(/bad port/);
  });
});
