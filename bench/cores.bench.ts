// The ONNX Runtime engine on one core and on two (docs/engines.md "Threads", docs/performance.md "One core and two"):
// one GRPO step's three ORT phases
// (bench/cores-workload.ts: the default configuration from the shipped base, completions forced to 376 tokens for
// chess image and 101 for shell text) on one session (--threads 1), on two one-thread sessions (--threads 2: the main
// thread and a worker), and, as the machine's ceiling, split between two separate processes of one thread each
// (bench/cores-half.ts: half the prompts each, started together per phase; the slower one's wall time), interleaved,
// METRL_BENCH_REPS times (default 2) after a warm-up.
// Per phase: wall seconds, process CPU seconds, and the CPU seconds of the busiest thread (read from
// /proc/self/task/*/stat). Why the last: on a machine shared with other jobs Linux's autogroup scheduler gives this
// process one share of the cores however many threads it runs, so two threads show their speed-up in wall time only on
// a quiet machine; the busiest thread's CPU time is what the phase's wall time is bounded by when the cores are free.
// Why the ceiling: when two cores of a shared virtual machine both work, each can run slower than one alone (caches
// and memory bandwidth shared with the host's other tenants); two processes that share nothing but the machine show
// how much of --threads 2's shortfall from 2× is the machine's.
//   npm run bench -- cores
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './table.ts';
import { initBackend } from '../models/backend.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { CORES_DOMAINS, CORES_PHASES, coresWorkload, type CoresPhase } from './cores-workload.ts';

/** CPU seconds of each thread of this process. */
function threadCpu(): Map<string, number> {
  return new Map(
    readdirSync('/proc/self/task').map((t) => {
      try {
        const f = readFileSync(`/proc/self/task/${t}/stat`, 'utf8').split(') ')[1].split(' ');
        return [t, (Number(f[11]) + Number(f[12])) / 100] as [string, number];
      } catch {
        return [t, 0] as [string, number];
      }
    }),
  );
}
const processCpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The two half-work processes of a domain, ready for phases. */
class Halves {
  private constructor(private readonly children: ChildProcess[]) {}

  static async start(domain: string): Promise<Halves> {
    const runTs = fileURLToPath(new URL('../bin/run-ts.js', import.meta.url));
    const half = fileURLToPath(new URL('./cores-half.ts', import.meta.url));
    const children = [0, 1].map((k) =>
      fork(runTs, [half, domain, String(k)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
    await Promise.all(children.map((c) => Halves.reply(c)));
    return new Halves(children);
  }

  private static reply(child: ChildProcess): Promise<{ wall?: number }> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`cores bench: a half-work process exited (status ${code})`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as { wall?: number });
      });
    });
  }

  /** Both halves run `phase` at once; the slower one's wall seconds. */
  async phase(phase: CoresPhase, rep: number): Promise<number> {
    const replies = this.children.map((c) => Halves.reply(c));
    for (const c of this.children) c.send({ phase, rep });
    return Math.max(...(await Promise.all(replies)).map((r) => r.wall!));
  }

  stop(): void {
    for (const c of this.children) c.send({ exit: true });
  }
}

export async function run(): Promise<BenchRow[]> {
  await initBackend('wasm', null);
  const reps = Number(process.env.METRL_BENCH_REPS ?? 2);
  const rows: BenchRow[] = [];
  for (const [domain] of CORES_DOMAINS) {
    const work = await coresWorkload(domain);
    const setups = [1, 2].map((threads) => ({
      threads,
      sampler: new BuiltinOrtSampler(work.policy, { threads }),
      learner: new BuiltinOrtLearner(work.policy, { threads }),
      m: {} as Record<string, { wall: number[]; cpu: number[]; busiest: number[] }>,
    }));
    const halves = await Halves.start(domain);
    const ceiling: Record<string, number[]> = {};
    try {
      for (let rep = 0; rep <= reps; rep++) {
        for (const s of setups) {
          for (const phase of CORES_PHASES) {
            const [th0, c0, t0] = [threadCpu(), processCpu(), performance.now()];
            work.phase(phase, rep, s.sampler, s.learner);
            const [wall, cpu, th1] = [(performance.now() - t0) / 1000, processCpu() - c0, threadCpu()];
            const busiest = Math.max(...[...th1].map(([t, v]) => v - (th0.get(t) ?? 0)));
            if (rep === 0) continue;
            const m = (s.m[phase] ??= { wall: [], cpu: [], busiest: [] });
            m.wall.push(wall);
            m.cpu.push(cpu);
            m.busiest.push(busiest);
          }
        }
        for (const phase of CORES_PHASES) {
          const wall = await halves.phase(phase, rep);
          if (rep > 0) (ceiling[phase] ??= []).push(wall);
        }
      }
    } finally {
      halves.stop();
    }
    const load = loadavg()[0].toFixed(1);
    for (const s of setups) {
      for (const [phase, m] of Object.entries(s.m)) {
        const note = `${s.threads === 1 ? 'one session' : `${s.sampler.executors} one-thread sessions`}; medians of ${reps}; load ${load}`;
        rows.push({
          group: `cores ${domain}`,
          name: `${phase}, --threads ${s.threads}: wall`,
          value: median(m.wall),
          unit: 's',
          note,
        });
        rows.push({
          group: `cores ${domain}`,
          name: `${phase}, --threads ${s.threads}: CPU, all threads`,
          value: median(m.cpu),
          unit: 's',
          note,
        });
        rows.push({
          group: `cores ${domain}`,
          name: `${phase}, --threads ${s.threads}: CPU, busiest thread`,
          value: median(m.busiest),
          unit: 's',
          note,
        });
      }
      s.sampler.dispose();
      s.learner.dispose();
    }
    const one = (phase: string) => median(setups[0].m[phase].wall);
    for (const phase of CORES_PHASES) {
      const note = `two processes of one thread, half the prompts each, the slower's wall; ${(one(phase) / median(ceiling[phase])).toFixed(2)}× --threads 1; medians of ${reps}; load ${load}`;
      rows.push({
        group: `cores ${domain}`,
        name: `${phase}, machine ceiling: wall`,
        value: median(ceiling[phase]),
        unit: 's',
        note,
      });
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const total = (f: (phase: CoresPhase) => number) => sum(CORES_PHASES.map(f));
    const [t1, t2, tc] = [total(one), total((p) => median(setups[1].m[p].wall)), total((p) => median(ceiling[p]))];
    rows.push({
      group: `cores ${domain}`,
      name: 'three phases, --threads 2 against 1',
      value: t1 / t2,
      unit: '×',
      note: `sum of the phases' median walls: ${t1.toFixed(2)} s / ${t2.toFixed(2)} s`,
    });
    rows.push({
      group: `cores ${domain}`,
      name: 'three phases, machine ceiling against 1',
      value: t1 / tc,
      unit: '×',
      note: `${t1.toFixed(2)} s / ${tc.toFixed(2)} s`,
    });
    work.policy.dispose();
  }
  return rows;
}
