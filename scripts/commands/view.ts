// `metrl view RUN… [--port N]`: a local web page over training runs and evaluation folders: live learning curves and
// every sampled completion beside its prompt's images, its reward and its parsed answer. Served on 127.0.0.1 only.
// Wiring only: eval/view/ holds the server and the page.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { handler } from '../command.ts';

const schema = z.object({
  runs: z.array(z.string().min(1)).min(1, 'name at least one run or evaluation folder'),
  port: z.coerce.number().int().min(0).max(65535),
});

const command: CommandModule = {
  command: 'view <runs..>',
  describe:
    'Serve a local page over run folders: live learning curves and the sampled completions with their images, rewards and parsed answers',
  builder: (y) =>
    y
      .positional('runs', {
        type: 'string',
        array: true,
        describe: 'training runs (metrl train) and evaluation folders (metrl evaluate)',
      })
      .option('port', { type: 'number', default: 8080, describe: 'port on 127.0.0.1 (0 picks a free one)' })
      .example(
        '$0 view runs/shell-image-20261128-1753',
        'then open the printed address (http://127.0.0.1:8080/) in a browser',
      ),
  handler: handler(schema, async ({ runs, port }) =>
    (await import('../../eval/view/view.ts')).view({ folders: runs, port }),
  ),
};

export default command;
