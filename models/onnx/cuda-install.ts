// `metrl install-cuda`: fill the folder `--device cuda` loads ONNX Runtime from (models/onnx/cuda-runtime.ts) with
// onnxruntime-node 1.29.0's binding and ORT library and the matching CUDA 13 provider. The two npm
// tarballs are fetched with `npm pack` (the user's registry, proxy and .npmrc apply; no install scripts run), or taken
// from a folder that already holds them (`--from`, for machines without the registry), checked against the pinned
// sha512 integrity, and only the four libraries are unpacked (system tar). Every wait is bounded; a failed or
// interrupted install (the caller's signal: SIGINT or SIGTERM in the CLI) leaves the folder as it was, since files
// move in only once all are unpacked and checked: the staging folder goes, and so do the folders the install made.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { systemErrorAsUserError, UserError } from '../../core/errors.ts';
import { CUDA_BUILD, cudaInstallDir } from './cuda-runtime.ts';
import { ortVersionOf } from './ort-binding.ts';

export interface InstallOptions {
  /** Target folder (default cudaInstallDir()). */
  dir?: string;
  /** A folder holding the tarballs already (as `npm pack` names them); nothing is downloaded. */
  from?: string;
  /** Bound on each `npm pack` and `tar`, in seconds. */
  timeoutSeconds: number;
  /** A progress line (stderr in the CLI). */
  say: (line: string) => void;
  /** Aborted to stop the install (the reason names the signal): the child is stopped, nothing is left. */
  signal?: AbortSignal;
}

/** installCuda stopped by its signal. */
export class InstallInterrupted extends Error {
  constructor(readonly reason: string) {
    super(`install-cuda: interrupted (${reason})`);
    this.name = 'InstallInterrupted';
  }
}

/**
 * Run a command to its end within `timeoutSeconds`; its stderr's last line is the reason when it fails. An abort of
 * `signal` stops it (SIGTERM) and rejects with InstallInterrupted once it has gone.
 */
function run(
  command: string,
  args: string[],
  cwd: string,
  timeoutSeconds: number,
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((done, failed) => {
    if (signal?.aborted) return failed(new InstallInterrupted(String(signal.reason)));
    // A group of its own, stopped whole: what npm starts (and what holds its stderr open) goes with it.
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    const kill = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        child.kill(signal); // already gone, or no group
      }
    };
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const timer = setTimeout(() => kill('SIGKILL'), timeoutSeconds * 1000);
    const stop = () => kill('SIGTERM');
    signal?.addEventListener('abort', stop, { once: true });
    child.on('error', (error) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      failed(
        new UserError(
          `install-cuda: cannot run ${command} (${(error as NodeJS.ErrnoException).code ?? error.message}) to ${what}`,
        ),
      );
    });
    child.on('close', (code, killedBy) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      if (signal?.aborted) return failed(new InstallInterrupted(String(signal.reason)));
      if (code === 0) return done();
      const last =
        stderr
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== '')
          .pop() ?? '';
      const why =
        killedBy === 'SIGKILL'
          ? `no answer within ${timeoutSeconds} s (--timeout)`
          : `${command} exited ${code}${last ? `: ${last}` : ''}`;
      failed(new UserError(`install-cuda: cannot ${what}: ${why}`));
    });
  });
}

async function sha512(file: string): Promise<string> {
  const hash = createHash('sha512');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha512-${hash.digest('base64')}`;
}

/** Install the CUDA build into the folder; returns the folder. */
export async function installCuda(options: InstallOptions): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new UserError(
      `install-cuda: the CUDA build metrl installs is for Linux x64 (this is ${process.platform} ${process.arch})`,
    );
  }
  const dir = options.dir ?? cudaInstallDir();
  const { signal } = options;
  // The highest folder of `dir` that is not there yet: what a failed install removes again.
  let made: string | null = null;
  for (let d = resolve(dir); !existsSync(d) && dirname(d) !== d; d = dirname(d)) made = d;
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw systemErrorAsUserError(error, dir, 'cannot create the install folder');
  }
  const staging = mkdtempSync(join(dir, '.staging-'));
  let installed = false;
  const interrupted = () => {
    if (signal?.aborted) throw new InstallInterrupted(String(signal.reason));
  };
  try {
    const unpacked: [string, string][] = [];
    for (const pkg of CUDA_BUILD.packages) {
      let tarball: string;
      if (options.from) {
        tarball = join(options.from, pkg.tarball);
        if (!existsSync(tarball))
          throw new UserError(
            `install-cuda: --from ${options.from} has no ${pkg.tarball} (get it with \`npm pack ${pkg.spec}\`)`,
          );
      } else {
        options.say(`downloading ${pkg.spec} (${pkg.megabytes} MB) from the npm registry`);
        await run(
          'npm',
          ['pack', pkg.spec, '--pack-destination', staging, '--silent'],
          staging,
          options.timeoutSeconds,
          `download ${pkg.spec}`,
          signal,
        );
        tarball = join(staging, pkg.tarball);
        if (!existsSync(tarball))
          throw new UserError(
            `install-cuda: \`npm pack ${pkg.spec}\` exited 0 but wrote no ${pkg.tarball} (is \`npm\` on the PATH the npm client? \`npm pack\` it by hand and give its folder with --from)`,
          );
      }
      interrupted();
      const integrity = await sha512(tarball);
      if (integrity !== pkg.integrity)
        throw new UserError(
          `install-cuda: ${tarball} is not ${pkg.spec} as published (sha512 differs); delete it and run again`,
        );
      options.say(`unpacking ${Object.values(pkg.files).join(', ')}`);
      await run(
        'tar',
        ['-xzf', tarball, '--no-same-owner', '-C', staging, ...Object.keys(pkg.files)],
        staging,
        options.timeoutSeconds,
        `unpack ${pkg.tarball}`,
        signal,
      );
      for (const [inside, name] of Object.entries(pkg.files)) unpacked.push([join(staging, inside), name]);
    }
    const versions = unpacked.map(([path, name]) => [name, ortVersionOf(path)] as const).filter(([, v]) => v !== null);
    const wrong = versions.find(([, v]) => v !== CUDA_BUILD.ort);
    if (wrong) throw new UserError(`install-cuda: ${wrong[0]} is ONNX Runtime ${wrong[1]}, not ${CUDA_BUILD.ort}`);
    interrupted();
    // From here on the install finishes: an interruption now would leave a half-moved folder.
    for (const [path, name] of unpacked) renameSync(path, join(dir, name));
    writeFileSync(
      join(dir, 'metrl-install.json'),
      `${JSON.stringify({ ort: CUDA_BUILD.ort, cuda: CUDA_BUILD.cuda, packages: CUDA_BUILD.packages.map((p) => p.spec) }, null, 2)}\n`,
    );
    installed = true;
    return dir;
  } catch (error) {
    if (error instanceof InstallInterrupted) throw error;
    throw systemErrorAsUserError(error, dir, 'cannot install');
  } finally {
    rmSync(staging, { recursive: true, force: true });
    if (!installed && made !== null) rmSync(made, { recursive: true, force: true });
  }
}
