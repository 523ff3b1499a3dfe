// Headless Chromium for the browser tests, driven over the DevTools protocol through a pipe (--remote-debugging-pipe:
// JSON messages ended by a NUL byte on file descriptors 3 and 4), so no WebSocket client and no npm package is needed.
// The browser is Debian's `chromium` (apt-get install -y chromium) at /usr/bin/chromium, or $CHROMIUM; when it is
// missing, launching fails with a message saying how to install it (the tests fail, they do not skip).
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { killGroup, spawnTracked } from './tracked-children.ts';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  method: string;
}

export interface Page {
  /** Evaluate an expression in the page (promises awaited); its value, which must be JSON. */
  evaluate<T = unknown>(expression: string): Promise<T>;
  /** Wait until `expression` is truthy in the page; fails after `timeoutMs` with `what` in the message. */
  waitFor(expression: string, what: string, timeoutMs?: number): Promise<void>;
  navigate(url: string): Promise<void>;
  /** PNG of the whole page (its full height at the window's width). */
  screenshot(): Promise<Buffer>;
  /** Exceptions and console errors the page raised so far. */
  errors: string[];
}

export interface Browser {
  newPage(width?: number, height?: number): Promise<Page>;
  close(): void;
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: the browser tests need it (Debian: apt-get install -y chromium; elsewhere set CHROMIUM=/path/to/chrome)`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), 'metrl-chromium-'));
  const args = [
    '--headless',
    '--remote-debugging-pipe',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-extensions',
    '--mute-audio',
    `--user-data-dir=${profile}`,
    'about:blank',
  ];
  const child: ChildProcess = spawnTracked(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  let nextId = 1;
  const pending = new Map<number, Pending>();
  const listeners: Array<(message: { method: string; params: Record<string, unknown>; sessionId?: string }) => void> =
    [];
  let buffered = '';
  fromBrowser.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let end: number;
    while ((end = buffered.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) {
        const p = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) p?.reject(new Error(`${p.method}: ${message.error.message}`));
        else p?.resolve(message.result);
      } else for (const l of listeners) l(message);
    }
  });
  const exited = new Promise<never>((_, fail) =>
    child.on('exit', (code) => fail(new Error(`chromium exited (${code}): ${stderr}`))),
  );
  exited.catch(() => {});
  toBrowser.on('error', () => {}); // EPIPE once the browser has gone: the pending call fails through `exited`
  const send = (method: string, params: object = {}, sessionId?: string): Promise<any> => {
    const id = nextId++;
    const reply = new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
    toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    return Promise.race([reply, exited]);
  };
  await send('Browser.getVersion');

  return {
    async newPage(width = 1400, height = 1000): Promise<Page> {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      const call = (method: string, params: object = {}) => send(method, params, sessionId);
      const errors: string[] = [];
      listeners.push((m) => {
        if (m.sessionId !== sessionId) return;
        if (m.method === 'Runtime.exceptionThrown')
          errors.push(JSON.stringify((m.params as any).exceptionDetails?.exception?.description ?? m.params));
        if (m.method === 'Runtime.consoleAPICalled' && (m.params as any).type === 'error')
          errors.push(JSON.stringify((m.params as any).args?.map((a: any) => a.value ?? a.description)));
      });
      await call('Runtime.enable');
      await call('Page.enable');
      await call('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
      const evaluate = async <T>(expression: string): Promise<T> => {
        const { result, exceptionDetails } = await call('Runtime.evaluate', {
          expression,
          awaitPromise: true,
          returnByValue: true,
        });
        if (exceptionDetails)
          throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
        return result.value as T;
      };
      return {
        errors,
        evaluate,
        async waitFor(expression, what, timeoutMs = 20_000) {
          const until = Date.now() + timeoutMs;
          for (;;) {
            if (await evaluate<boolean>(`Boolean(${expression})`).catch(() => false)) return;
            if (Date.now() > until)
              throw new Error(
                `timed out after ${timeoutMs} ms waiting for ${what}; page errors: ${errors.join('; ') || 'none'}`,
              );
            await new Promise((r) => setTimeout(r, 100));
          }
        },
        async navigate(url) {
          await call('Page.navigate', { url });
          const until = Date.now() + 20_000;
          while ((await evaluate<string>('document.readyState').catch(() => 'loading')) !== 'complete') {
            if (Date.now() > until) throw new Error(`${url}: did not load in 20 s`);
            await new Promise((r) => setTimeout(r, 50));
          }
        },
        async screenshot() {
          const full = await evaluate<number>('Math.ceil(document.documentElement.scrollHeight)');
          await call('Emulation.setDeviceMetricsOverride', {
            width,
            height: Math.min(full, 8000),
            deviceScaleFactor: 1,
            mobile: false,
          });
          const { data } = await call('Page.captureScreenshot', { format: 'png' });
          await call('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
          return Buffer.from(data, 'base64');
        },
      };
    },
    close() {
      killGroup(child);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
