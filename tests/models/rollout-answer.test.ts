// What the rollout client (models/remote/rollout-pool.ts, rollout-answer.ts) takes from a server, against stand-in
// vLLM servers on 127.0.0.1: a healthy answer gives the group; token ids past the vocabulary or negative, a positive
// log-prob, more tokens than max_tokens, and an answer that never ends are each one line naming the server (a
// UserError: the run stops after its last checkpoint), never an internal error in the learner; an answer that names
// another model than the adapter it loaded comes from a replica that lost it: set aside for the round.
import { afterAll, describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { RolloutPool } from '../../models/remote/rollout-pool.ts';
import { closeRolloutStubs, healthyCompletions, rolloutStub } from '../helpers/rollout-stub.ts';

afterAll(closeRolloutStubs);

const adapter = { version: 0, path: '/shared/adapters/v0' };
const sampling = { temperature: 1, topP: 1, maxNewTokens: 2 };
const sample = (url: string) =>
  new RolloutPool([url], 'vllm', 10_000, 101).sampleGroups([{ tokens: [1, 40, 41] }], 2, sampling, [7], adapter);

/** A stub whose completions answer is the healthy one changed by `change`. */
const changed = (change: (body: any) => void) =>
  rolloutStub({
    '/v1/completions': (request) => {
      const answer = healthyCompletions(request) as { status: number; body: any };
      change(answer.body);
      return answer;
    },
  });

describe('the rollout client checks what a server answers', () => {
  it('takes a healthy answer', async () => {
    const { groups } = await sample(await changed(() => {}));
    expect(groups[0].map((c) => c.tokens)).toEqual([
      [50, 51],
      [50, 51],
    ]);
  });

  it.each([
    [
      'an id past the vocabulary',
      (b: any) => (b.choices[1].token_ids = [50, 4096]),
      /choice 1, token 1: id 4096 is outside the model's vocabulary \(0 to 100\)/,
    ],
    ['a negative id', (b: any) => (b.choices[0].token_ids = [-1, 50]), /choice 0, token 0: id -1 is outside/],
    [
      'a positive log-prob',
      (b: any) => (b.choices[0].logprobs.token_logprobs = [-0.5, 2]),
      /token 1: log-prob 2 \(a log-prob is finite and at most 0\)/,
    ],
    [
      'more tokens than max_tokens',
      (b: any) => {
        b.choices[0].token_ids = [50, 51, 52, 53, 54];
        b.choices[0].logprobs.token_logprobs = [-1, -1, -1, -1, -1];
      },
      /choice 0 has 5 tokens, more than the max_tokens 2 asked for/,
    ],
  ])('refuses %s in one line naming the server', async (_, change, pattern) => {
    const error = await sample(await changed(change)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(
      /^rollout server http:\/\/127\.0\.0\.1:\d+: the answer to .*\/v1\/completions cannot be trained on: /,
    );
    expect((error as Error).message).toMatch(pattern);
  });

  it('gives up an answer that never ends, in one line', async () => {
    const url = await rolloutStub({ '/v1/completions': () => 'hang-up' });
    // The stub that hangs up is ServerDown; one that streams without end is over the bound instead:
    const { createServer } = await import('node:http');
    const endless = createServer((req, res) => {
      req.resume();
      if (req.url?.endsWith('load_lora_adapter')) return void res.end('Success');
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    }).listen(0, '127.0.0.1');
    await new Promise((done) => endless.once('listening', done));
    const { port } = endless.address() as { port: number };
    const error = await sample(`http://127.0.0.1:${port}`).catch((e: unknown) => e);
    endless.closeAllConnections();
    endless.close();
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(
      /^rollout server http:\/\/127\.0\.0\.1:\d+\/v1\/completions: the answer is over 1 MB, more than this request can need$/,
    );
    await expect(sample(url)).rejects.toThrow(/^no rollout server answered/);
  });

  it('sets aside a replica that answers as another model than the adapter it loaded', async () => {
    const lost = await changed((b) => (b.model = 'base'));
    await expect(sample(lost)).rejects.toThrow(
      /^no rollout server answered \(http:\/\/127\.0\.0\.1:\d+: answered as model 'base', not the adapter 'metrl-policy' it had loaded \(restarted\?\)\)/,
    );
  });
});
