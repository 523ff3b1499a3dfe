// Progress of an evaluation on stderr: a live bar on a terminal, plain lines (at most every few seconds) otherwise,
// so logs of background runs stay readable. Retries and errors are counted, not printed one by one.
import cliProgress from 'cli-progress';

export interface Progress {
  start(total: number, reused: number): void;
  tick(ok: boolean): void;
  retry(): void;
  stop(): void;
}

export function stderrProgress(label: string, quiet = false): Progress {
  const tty = process.stderr.isTTY === true;
  let bar: cliProgress.SingleBar | null = null;
  let total = 0;
  let done = 0;
  let errors = 0;
  let retries = 0;
  let started = 0;
  let lastLine = 0;
  const rate = () => done / Math.max(1e-3, (performance.now() - started) / 1000);
  const line = () => {
    const eta = rate() > 0 ? Math.round((total - done) / rate()) : 0;
    return `${label}: ${done}/${total} items, ${errors} errors, ${retries} retries, ${rate().toFixed(2)} items/s, eta ${eta}s`;
  };
  return {
    start(t, reused) {
      total = t;
      started = performance.now();
      if (quiet) return;
      if (reused > 0) process.stderr.write(`${label}: reusing ${reused} finished items\n`);
      if (tty) {
        bar = new cliProgress.SingleBar(
          {
            format: `${label} [{bar}] {value}/{total} | errors {errors} | retries {retries} | {rate} items/s | eta {eta}s`,
            stream: process.stderr,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, 0, { errors: 0, retries: 0, rate: '0.00' });
      } else process.stderr.write(`${label}: ${total} items to evaluate\n`);
    },
    tick(ok) {
      done++;
      if (!ok) errors++;
      if (quiet) return;
      if (bar) bar.update(done, { errors, retries, rate: rate().toFixed(2) });
      else if (performance.now() - lastLine > 5000 || done === total) {
        lastLine = performance.now();
        process.stderr.write(line() + '\n');
      }
    },
    retry() {
      retries++;
      bar?.update(done, { errors, retries, rate: rate().toFixed(2) });
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
