// A `metrl train` run killed hard mid-way, the first half of every "a killed run resumes" test (tests/cli/train,
// engine and hf-checkpoint): the real binary is started and SIGKILLed as soon as its checkpoints/latest names a step,
// so that the resume that follows starts from exactly that checkpoint. If the test ends first (say by its timeout)
// the run is killed then (tests/helpers/tracked-children.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT } from '../cli/helpers.ts';
import { spawnTracked } from './tracked-children.ts';

/** Start `metrl train` and SIGKILL it as soon as `checkpoints/latest` names step `step`. */
export function trainAndKill(args: string[], latest: string, step: number): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), ...args], {
      cwd: PROJECT,
      stdio: 'ignore',
    });
    const timer = setInterval(() => {
      if (existsSync(latest) && readFileSync(latest, 'utf8').trim() === `step-${step}`) {
        clearInterval(timer);
        child.kill('SIGKILL');
      }
    }, 20);
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      if (signal === 'SIGKILL') done();
      else fail(new Error(`train ended by itself (code ${code}) before it could be killed`));
    });
  });
}
