// The `metrl` command line: one yargs command per file in scripts/commands, wiring only (the work lives in envs/,
// rewards/, models/, trainer/ and eval/).
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { reportAndExit } from './command.ts';

const commands = [
  // each entry: await import('./commands/<name>.ts') — keep alphabetical
] as const;

await yargs(hideBin(process.argv))
  .scriptName('metrl')
  .command(commands.map((c: { command: unknown }) => c.command) as never)
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
