// `metrl install-cuda` when things go wrong, through the real binary with a stand-in `npm` first on the PATH (nothing
// is downloaded): an npm that exits 0 and writes nothing, and a download stopped by SIGINT or SIGTERM, are each one
// line; none leaves the --dir it made, nor a .staging-* folder in a --dir that was there (which stays as it was).
import { describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, PROJECT, scratchDir } from './helpers.ts';
import { spawnTracked } from '../helpers/tracked-children.ts';

/** A folder with an executable `npm` running `script` (sh). */
function fakeNpm(script: string): string {
  const bin = join(scratchDir('fake-npm'), 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\n${script}\n`);
  chmodSync(join(bin, 'npm'), 0o755);
  return bin;
}

const withNpm = (bin: string) => ({ PATH: `${bin}:${process.env.PATH ?? ''}` });

describe('metrl install-cuda cleans up on every failure', () => {
  it('an npm that exits 0 and writes nothing: one line naming it, the new --dir gone', async () => {
    const target = join(scratchDir('install-cuda'), 'new', 'cuda');
    const result = await metrl(['install-cuda', '--dir', target], { env: withNpm(fakeNpm('exit 0')) });
    // A progress line, then the error.
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      'metrl: downloading onnxruntime-node@1.29.0 (112 MB) from the npm registry',
      'metrl: error: install-cuda: `npm pack onnxruntime-node@1.29.0` exited 0 but wrote no onnxruntime-node-1.29.0.tgz (is `npm` on the PATH the npm client? `npm pack` it by hand and give its folder with --from)',
    ]);
    expect(existsSync(join(target, '..'))).toBe(false);
  }, 60_000);

  it('--from without the tarballs: the new --dir gone; a --dir that was there stays as it was', async () => {
    const from = scratchDir('install-cuda-from');
    const target = join(scratchDir('install-cuda'), 'cuda');
    expectUserError(await metrl(['install-cuda', '--from', from, '--dir', target]), /--from .* has no onnxruntime/);
    expect(existsSync(target)).toBe(false);
    const existing = scratchDir('install-cuda-existing');
    writeFileSync(join(existing, 'keep.txt'), 'mine');
    expectUserError(await metrl(['install-cuda', '--from', from, '--dir', existing]), /has no onnxruntime/);
    expect(readdirSync(existing)).toEqual(['keep.txt']);
  }, 60_000);

  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s during the download: one line, exit 130, nothing left',
    async (signal) => {
      const existing = scratchDir('install-cuda-signal');
      // The stand-in download writes part of its tarball, then takes its time.
      const bin = fakeNpm(
        'for a in "$@"; do last="$a"; done\necho partial > "$4/onnxruntime-node-1.29.0.tgz"\nsleep 30',
      );
      const child = spawnTracked(
        process.execPath,
        [join(PROJECT, 'bin', 'metrl.js'), 'install-cuda', '--dir', existing],
        {
          cwd: PROJECT,
          env: { ...process.env, ...withNpm(bin) },
        },
      );
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString('utf8');
        if (stderr.includes('downloading onnxruntime-node')) setTimeout(() => child.kill(signal), 300);
      });
      const code = await new Promise<number | null>((done) => child.on('close', (c) => done(c)));
      expect(code).toBe(130);
      const lines = stderr.split('\n').filter((l) => l !== '');
      expect(lines.at(-1)).toBe(
        `metrl: install-cuda: ${signal}: stopped; nothing was installed, and the install folder is as it was`,
      );
      expect(readdirSync(existing)).toEqual([]);
    },
    60_000,
  );
});
