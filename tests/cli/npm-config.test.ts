// `npx metrl …` must print nothing of npm's own: the project's npm configuration (package.json, .npmrc) holds only keys
// that npm knows. onnxruntime-node's install script (a CUDA download from NuGet, outside the npm registry) is denied
// through package.json's `allowScripts`, which npm ≥ 11.19 honours, instead of an .npmrc key npm warns about.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT, scratchDir } from './helpers.ts';

describe('npm configuration of the project', () => {
  it('npx metrl --version prints the version and no npm warning', async () => {
    // A user config of our own (empty), so that the machine's ~/.npmrc does not speak in this test; npm's weekly
    // "new version available" notice is about npm, not about the project's configuration.
    const userConfig = join(scratchDir('npmrc'), 'npmrc');
    writeFileSync(userConfig, '');
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
    const result = await new Promise<{ stdout: string; stderr: string }>((done, fail) =>
      execFile(
        'npx',
        ['--no-install', 'metrl', '--version'],
        { cwd: PROJECT, env: { ...env, npm_config_userconfig: userConfig, npm_config_update_notifier: 'false' } },
        (error, stdout, stderr) => (error ? fail(new Error(`${error.message}\n${stderr}`)) : done({ stdout, stderr })),
      ),
    );
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8')).version);
  });

  it('denies onnxruntime-node its install script', () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    expect(pkg.allowScripts?.['onnxruntime-node']).toBe(false);
  });
});
