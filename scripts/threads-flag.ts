// `--threads N` (train, evaluate, serve): ONNX Runtime's threads, or one-thread sessions for the built-in model, each
// with its own copy of the weights. More than the machine's cores buys nothing and costs memory without bound
// (`--threads 999` climbed to 1,091 threads and 6.8 GB before it was killed), so such a value is refused with one line.
// Layer: scripts/.
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
