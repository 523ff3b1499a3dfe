// The rollout servers' preflight (models/remote/preflight.ts) against stand-in servers on 127.0.0.1: a healthy vLLM
// passes; a port where nothing listens, a port fetch refuses, a server with no model list, one without the LoRA
// routes, and one whose probe answer holds an id past the vocabulary or a positive log-prob are each one line naming
// the server, within seconds; so is an --rollout-adapter-dir the run cannot write, and nothing is left there.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { preflightRolloutServers } from '../../models/remote/preflight.ts';
import { closeRolloutStubs, healthyCompletions, rolloutStub } from '../helpers/rollout-stub.ts';

afterAll(closeRolloutStubs);

const check = (urls: string[], extra: { adapterDir?: string; api?: 'vllm' | 'sglang' } = {}) =>
  preflightRolloutServers({ urls, api: extra.api ?? 'vllm', vocabSize: 101, probe: [1, 40, 41], ...extra });

async function closedPort(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((done) => server.once('listening', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return `http://127.0.0.1:${port}`;
}

describe('preflightRolloutServers', () => {
  it('passes a healthy server, and names each broken one in one line', async () => {
    const good = await rolloutStub();
    await expect(check([good])).resolves.toBeUndefined();
    const closed = await closedPort();
    const started = Date.now();
    await expect(check([good, closed])).rejects.toThrow(
      new RegExp(
        `^--rollout-server ${closed}: nothing answers there \\(ECONNREFUSED\\); start the server, or give the address it listens on$`,
      ),
    );
    await expect(check(['http://127.0.0.1:9'])).rejects.toThrow(
      /^--rollout-server http:\/\/127\.0\.0\.1:9: port 9 is one that fetch refuses to connect to/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses a server without a model list or without the LoRA routes', async () => {
    const noModels = await rolloutStub({ '/v1/models': () => ({ status: 404, body: 'no such page' }) });
    await expect(check([noModels])).rejects.toThrow(
      /: GET \/v1\/models answered status 404 \(no such page\); is it vLLM, SGLang or metrl serve \(--rollout-api vllm\)\?$/,
    );
    const empty = await rolloutStub({ '/v1/models': () => ({ status: 200, body: { data: [] } }) });
    await expect(check([empty])).rejects.toThrow(/: GET \/v1\/models lists no model/);
    const noLora = await rolloutStub({ load_lora_adapter: () => ({ status: 404, body: { detail: 'Not Found' } }) });
    await expect(check([noLora])).rejects.toThrow(
      /^rollout server http:\/\/127\.0\.0\.1:\d+: no \/v1\/load_lora_adapter, LoRA is not enabled/,
    );
  });

  it('refuses a server whose probe answer the learner could not take', async () => {
    const withIds = (ids: number[], logprob = -0.5) =>
      rolloutStub({
        '/v1/completions': (request) => {
          const answer = healthyCompletions(request) as { status: number; body: any };
          answer.body.choices[0].token_ids = ids;
          answer.body.choices[0].logprobs.token_logprobs = ids.map(() => logprob);
          return answer;
        },
      });
    await expect(check([await withIds([50, 101])])).rejects.toThrow(
      /cannot be trained on: choice 0, token 1: id 101 is outside the model's vocabulary \(0 to 100\)/,
    );
    await expect(check([await withIds([-3])])).rejects.toThrow(/token 0: id -3 is outside the model's vocabulary/);
    await expect(check([await withIds([50], 0.7)])).rejects.toThrow(
      /token 0: log-prob 0\.7 \(a log-prob is finite and at most 0\)/,
    );
    await expect(check([await withIds([50, 51, 52, 53])])).rejects.toThrow(
      /choice 0 has 4 tokens, more than the max_tokens 2 asked for/,
    );
    const refused = await rolloutStub({
      '/v1/completions': () => ({ status: 404, body: { message: 'The model `stub` does not exist.' } }),
    });
    await expect(check([refused])).rejects.toThrow(
      /a 2-token probe on \/v1\/completions \(model 'stub'\) was refused with status 404: The model `stub` does not exist\./,
    );
  });

  it('refuses an adapter folder the run cannot write, and leaves nothing behind', async () => {
    const good = await rolloutStub();
    const file = join(mkdtempSync(join(tmpdir(), 'metrl-preflight-')), 'a-file');
    writeFileSync(file, 'x');
    await expect(check([good], { adapterDir: join(file, 'adapters') })).rejects.toThrow(
      /^--rollout-adapter-dir .*a-file\/adapters: .*a-file is a file, not a folder/,
    );
    await expect(check([good], { adapterDir: '/proc/metrl-adapters' })).rejects.toThrow(
      /^--rollout-adapter-dir \/proc\/metrl-adapters: cannot write in \/proc \(E[A-Z]+\)/,
    );
    const parent = mkdtempSync(join(tmpdir(), 'metrl-preflight-'));
    await check([good], { adapterDir: join(parent, 'shared', 'adapters') });
    expect(existsSync(join(parent, 'shared'))).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
  });
});
