// `npx metrl …` must print nothing of npm's own: the project's npm configuration (package.json, .npmrc) holds only keys
// that npm knows. npm ≥ 11.19 runs a dependency's install script only where package.json's `allowScripts` allows it
// and warns on every install about each one it does not cover: every package of the lock file that has an install
// script (and is installed by `npm ci`: optional ones are installed by hand) is decided there, onnxruntime-node's
// (a CUDA download from NuGet, outside the npm registry) denied.
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

  it('decides every install script npm ci meets, so that it warns about none', () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    const lock = JSON.parse(readFileSync(join(PROJECT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean; optional?: boolean }>;
    };
    const withScripts = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true && p.optional !== true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    const undecided = withScripts.filter((name) => typeof pkg.allowScripts?.[name] !== 'boolean');
    expect(undecided).toEqual([]);
  });
});
