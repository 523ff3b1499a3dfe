// A small local OpenAI-compatible upstream for the harness tests, on 127.0.0.1: it solves shell-game prompts, reading
// image actions from their pixels (the green labels), so scoring and the images the harness sends can both be
// checked; it answers the perception probe the same way. A script decides per request whether to answer, fail with a status (429 with
// Retry-After, 500, 401, …) or answer slowly. It counts every request it receives and refuses to serve more than a
// bound, so a runaway retry loop fails the test instead of spinning.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodePng } from '../../core/image.ts';
import { LABEL_GREEN } from '../../envs/shell/render.ts';

export interface UpstreamRequest {
  index: number;
  at: number;
  authorization: string | null;
  body: {
    messages: Array<{ role: string; content: unknown }>;
    temperature?: number;
    max_tokens?: number;
    max_completion_tokens?: number;
    reasoning_effort?: string;
    model?: string;
  };
}

export type Behaviour =
  | { kind: 'answer'; delayMs?: number; text?: string; finishReason?: string }
  | { kind: 'status'; status: number; retryAfter?: string; delayMs?: number; json?: boolean };

export interface Upstream {
  url: string;
  requests: UpstreamRequest[];
  close(): Promise<void>;
}

type Part = { type: string; text?: string; image_url?: { url: string } };

/** Which two shells an image shows highlighted: the thirds of the width that hold the label green. */
async function readSwap(dataUrl: string): Promise<string> {
  const image = await decodePng(Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64'));
  const counts = [0, 0, 0];
  for (let i = 0; i < image.width * image.height; i++) {
    const [r, g, b] = [image.data[i * 3], image.data[i * 3 + 1], image.data[i * 3 + 2]];
    if (Math.abs(r - LABEL_GREEN[0]) + Math.abs(g - LABEL_GREEN[1]) + Math.abs(b - LABEL_GREEN[2]) < 30)
      counts[Math.min(2, Math.floor(((i % image.width) * 3) / image.width))]++;
  }
  const [a, b] = [0, 1, 2]
    .sort((x, y) => counts[y] - counts[x])
    .slice(0, 2)
    .sort();
  return `${a + 1} swap ${b + 1}`;
}

/** The last message as text, each image replaced by the swap it shows, on its own line. */
async function promptText(body: UpstreamRequest['body']): Promise<string> {
  const last = body.messages[body.messages.length - 1];
  if (typeof last.content === 'string') return last.content;
  let text = '';
  for (const part of last.content as Part[])
    text += part.type === 'image_url' ? `\n${await readSwap(part.image_url!.url)}\n` : (part.text ?? '');
  return text;
}

/** Solve a shell-game prompt from its text (initial state, then "x swap y" lines). */
function solveShell(text: string): string {
  const start = /The initial state is: ([123])/.exec(text);
  if (!start) return '2';
  let ball = Number(start[1]);
  for (const m of text.slice(start.index).matchAll(/^([123]) swap ([123])$/gm)) {
    const [a, b] = [Number(m[1]), Number(m[2])];
    if (ball === a) ball = b;
    else if (ball === b) ball = a;
  }
  return String(ball);
}

/** What a perfect model would answer: the perception probe's swap, or the ball's final shell. */
async function perfectAnswer(body: UpstreamRequest['body']): Promise<string> {
  const text = await promptText(body);
  if (/which shells are being swapped/.test(text)) return (/^([123] swap [123])$/m.exec(text) ?? ['', '1 swap 2'])[1];
  return `FINAL ANSWER: ${solveShell(text)}`;
}

export async function startUpstream(script: (req: UpstreamRequest) => Behaviour, maxRequests = 500): Promise<Upstream> {
  const requests: UpstreamRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // The model list evaluate's preflight asks for (eval/endpoint-preflight.ts): not a request of the harness.
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'test', object: 'model' }] }));
        return;
      }
      if (requests.length >= maxRequests) {
        res.writeHead(599, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'test upstream: request bound exceeded' }));
        return;
      }
      const record: UpstreamRequest = {
        index: requests.length,
        at: performance.now(),
        authorization: req.headers.authorization ?? null,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      requests.push(record);
      const behaviour = script(record);
      const send = async () => {
        if (res.destroyed) return;
        if (behaviour.kind === 'status') {
          const headers: Record<string, string> = {
            'content-type': behaviour.json === false ? 'text/plain; charset=utf-8' : 'application/json',
          };
          if (behaviour.retryAfter !== undefined) headers['retry-after'] = behaviour.retryAfter;
          res.writeHead(behaviour.status, headers);
          res.end(
            behaviour.json === false
              ? `status ${behaviour.status}`
              : JSON.stringify({ error: { message: `scripted ${behaviour.status}`, type: 'test' } }),
          );
          return;
        }
        const text = behaviour.text ?? (await perfectAnswer(record.body));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: `t-${record.index}`,
            object: 'chat.completion',
            created: 0,
            model: record.body.model ?? 'test',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: text },
                finish_reason: behaviour.finishReason ?? 'stop',
              },
            ],
            usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
          }),
        );
      };
      const delay = behaviour.delayMs ?? 0;
      if (delay > 0) setTimeout(() => void send(), delay);
      else void send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
