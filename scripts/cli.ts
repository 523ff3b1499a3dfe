// The `metrl` command line: one yargs command per file in scripts/commands (each default-exports a yargs
// CommandModule), wiring only — the work lives in envs/, rewards/, models/, trainer/ and eval/.
import yargs, { type CommandModule } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { reportAndExit } from './command.ts';

// One line per command, alphabetical. Commands load lazily so `metrl score` does not pay for tfjs start-up.
const commandFiles: Array<() => Promise<{ default: CommandModule }>> = [
  () => import('./commands/evaluate.ts'),
  () => import('./commands/generate.ts'),
  () => import('./commands/plot.ts'),
  () => import('./commands/pretrain.ts'),
  () => import('./commands/score.ts'),
  () => import('./commands/serve.ts'),
  () => import('./commands/train.ts'),
];

const commands = await Promise.all(commandFiles.map(async (load) => (await load()).default));

await yargs(hideBin(process.argv))
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
