// The `metrl` command line: one yargs command per file in scripts/commands (each default-exports a yargs
// CommandModule), wiring only — the work lives in envs/, rewards/, models/, trainer/ and eval/.
import yargs, { type CommandModule } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { reportAndExit } from './command.ts';

// One line per command, alphabetical. Only the command named on the command line is loaded (each pulls in tfjs,
// sharp or an HTTP stack of its own), so `metrl score` starts fast; `metrl --help` and unknown names load them all.
const commandFiles: Record<string, () => Promise<{ default: CommandModule }>> = {
  evaluate: () => import('./commands/evaluate.ts'),
  generate: () => import('./commands/generate.ts'),
  'install-cuda': () => import('./commands/install-cuda.ts'),
  plot: () => import('./commands/plot.ts'),
  pretrain: () => import('./commands/pretrain.ts'),
  score: () => import('./commands/score.ts'),
  serve: () => import('./commands/serve.ts'),
  train: () => import('./commands/train.ts'),
  view: () => import('./commands/view.ts'),
};

const args = hideBin(process.argv);
const named =
  args[0] !== undefined && Object.hasOwn(commandFiles, args[0]) ? [commandFiles[args[0]]] : Object.values(commandFiles);
const commands = await Promise.all(named.map(async (load) => (await load()).default));

await yargs(args)
  .scriptName('metrl')
  .command(commands)
  .demandCommand(1, 'name a command (see metrl --help)')
  .strict()
  .recommendCommands()
  .fail((message, error) => {
    if (error) reportAndExit(error);
    process.stderr.write(`metrl: error: ${message}\n`);
    process.exit(2);
  })
  .help()
  .version()
  .wrap(Math.min(120, process.stdout.columns ?? 100))
  .parseAsync();
