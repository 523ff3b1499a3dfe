// metrl serve's HTTP side with its real decoding rounds (decode-scheduler.ts) over a scripted sampler: a client that
// hangs up, in the middle of a streamed answer or while its plain answer is being decoded, stops being decoded at the
// next round (its rows leave the batch; nothing is decoded for it to the end), and the server goes on answering; a
// request asking for more work than the bound (n × max_tokens) gets a 400 naming the bound.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import type { Policy } from '../../../models/policy.ts';
import { DecodeScheduler } from '../../../eval/serve/decode-scheduler.ts';
import { policyEngine } from '../../../eval/serve/policy-engine.ts';
import { startServer, type RunningServer } from '../../../eval/serve/server.ts';
import { scriptedSampler, type ScriptedSampler } from '../../helpers/scripted-sampler.ts';

const PROMPT = { tokens: [1, 2, 3], images: [] };
// Long enough that its end is many rounds away: 9,000 tokens at 64 a round.
const SCRIPT = `${'0123456789'.repeat(900)}$`;
const policy = { contextLimit: 100_000, chatPrompt: async () => PROMPT } as unknown as Policy;

let running: RunningServer | null = null;
afterEach(async () => {
  running?.server.closeAllConnections();
  await running?.close();
  running = null;
});

async function start(
  maxRequestTokens = 200_000,
): Promise<{ port: number; scheduler: DecodeScheduler; sampler: ScriptedSampler }> {
  // Each round yields to the event loop; a short pause per call keeps rounds from racing past the hang-up.
  const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length, () => {
    const until = performance.now() + 5;
    while (performance.now() < until);
  });
  const scheduler = new DecodeScheduler(() => sampler, 0);
  const engine = { ...policyEngine(policy, 'scripted', scheduler), maxTokensLimit: 100_000 };
  running = await startServer(engine, { host: '127.0.0.1', port: 0, maxRequestTokens });
  return { port: Number(new URL(running.url).port), scheduler, sampler };
}

/** A chat request on a raw socket; `until` says, from what has arrived, when to hang up. */
function hangUp(port: number, body: object, until: (received: string) => boolean): Promise<string> {
  const text = JSON.stringify(body);
  return new Promise((done, fail) => {
    const socket: Socket = connect(port, '127.0.0.1', () =>
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      ),
    );
    let received = '';
    const check = () => {
      if (!until(received)) return false;
      socket.destroy();
      done(received);
      return true;
    };
    socket.on('data', (d) => {
      received += d.toString('utf8');
      check();
    });
    socket.on('error', fail);
    // The plain answer sends nothing until it is done: hang up once decoding has begun.
    const poll = setInterval(() => check() && clearInterval(poll), 2);
  });
}

async function settled(scheduler: DecodeScheduler): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (scheduler.inFlight > 0) {
    if (Date.now() > deadline) throw new Error('the request was still decoding 10 s after its client left');
    await new Promise((done) => setTimeout(done, 5));
  }
}

const chat = (port: number, body: object) =>
  fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('metrl serve and clients that hang up', () => {
  const messages = [{ role: 'user', content: 'x' }];

  it('stops decoding a streamed answer whose client left after its first words', async () => {
    const { port, scheduler, sampler } = await start();
    const received = await hangUp(port, { messages, max_tokens: 9000, n: 4, stream: true }, (r) =>
      r.includes('"content":"0123'),
    );
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    await settled(scheduler);
    // 9,000 tokens are 143 rounds; it left after a few.
    expect(sampler.calls.length).toBeLessThan(20);
    const after = await chat(port, { messages, max_tokens: 5 });
    expect((await after.json()).choices[0].message.content).toBe('01234');
  });

  it('stops decoding a plain answer whose client left while it was being decoded', async () => {
    const { port, scheduler, sampler } = await start();
    await hangUp(port, { messages, max_tokens: 9000, n: 16 }, () => sampler.calls.length > 0);
    await settled(scheduler);
    expect(sampler.calls.length).toBeLessThan(20);
    expect((await chat(port, { messages, max_tokens: 3 })).status).toBe(200);
  });

  it('refuses a request for more work than the bound with a 400 naming it', async () => {
    const { port } = await start(16_384);
    const over = await chat(port, { messages, n: 16, max_tokens: 3000 });
    expect(over.status).toBe(400);
    expect((await over.json()).error.message).toMatch(
      /^max_tokens: n × max_tokens is 48000 tokens, more than one request may ask of this server \(16384\)/,
    );
    const overCompletion = await chat(port, { messages, n: 16, max_completion_tokens: 3000 });
    expect((await overCompletion.json()).error.param).toBe('max_completion_tokens');
    expect((await chat(port, { messages, n: 16, max_tokens: 1024 })).status).toBe(200);
  });
});
