// `--threads N` (train, evaluate, serve): ONNX Runtime's threads, or one-thread sessions for the built-in model, each
// with its own copy of the weights. More than the machine's cores buys nothing and costs memory without bound
// (every thread holds its own buffers), so such a value is refused with one line.
import { availableParallelism } from 'node:os';
import { z } from 'zod';

/** The cores this process may use (cgroup and affinity limits included, as Node reports them). */
const MACHINE_CORES = availableParallelism();

/** The flag's schema; `coerce` for commands whose yargs spec leaves numbers as typed. */
export function threadsFlag(coerce: boolean) {
  return (coerce ? z.coerce.number() : z.number())
    .int()
    .positive()
    .max(
      MACHINE_CORES,
      `more than this machine's ${MACHINE_CORES} cores; give at most ${MACHINE_CORES}, or leave it out to use them all`,
    )
    .optional();
}
