// `metrl install-cuda [--dir D] [--from F]`: install the ONNX Runtime build that `--device cuda` runs on (ORT 1.29.0
// with its CUDA 13 provider, from the npm registry) into a folder of its own, so that `npm ci` never downloads
// it for CPU users. Wiring only: models/onnx/cuda-install.ts does the work, models/onnx/cuda-runtime.ts finds it.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { handler } from '../command.ts';

const schema = z.object({
  dir: z.string().min(1).optional(),
  from: z.string().min(1).optional(),
  timeout: z.number().positive(),
});

const command: CommandModule = {
  command: 'install-cuda',
  describe: 'Install ONNX Runtime 1.29.0 and its CUDA 13 provider (290 MB, from the npm registry) for --device cuda',
  builder: (y) =>
    y
      .option('dir', {
        type: 'string',
        describe:
          'install folder (default: METRL_ORT_CUDA_DIR, else ~/.cache/metrl/onnxruntime-cuda-1.29.0); a non-default one is found through METRL_ORT_CUDA_DIR',
      })
      .option('from', {
        type: 'string',
        describe:
          'a folder holding the two tarballs already (`npm pack onnxruntime-node@1.29.0 com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9`): nothing is downloaded',
      })
      .option('timeout', { type: 'number', default: 1800, describe: 'seconds allowed for each download and unpack' })
      .example(
        '$0 install-cuda && $0 train --domain chess --modality image --checkpoint gemma-3-4b-it --device cuda',
        'then train on the GPU',
      ),
  handler: handler(schema, async ({ dir, from, timeout }) => {
    const { installCuda, InstallInterrupted } = await import('../../models/onnx/cuda-install.ts');
    const say = (line: string) => process.stderr.write(`metrl: ${line}\n`);
    // Ctrl-C or SIGTERM stop the download and leave the folder as it was (the install cleans up), then exit 130.
    const stop = new AbortController();
    const onSigint = () => stop.abort('SIGINT');
    const onSigterm = () => stop.abort('SIGTERM');
    process.once('SIGINT', onSigint);
    process.once('SIGTERM', onSigterm);
    let folder: string;
    try {
      folder = await installCuda({ dir, from, timeoutSeconds: timeout, say, signal: stop.signal });
    } catch (error) {
      if (!(error instanceof InstallInterrupted)) throw error;
      process.stderr.write(
        `metrl: install-cuda: ${error.reason}: stopped; nothing was installed, and the install folder is as it was\n`,
      );
      process.exit(130);
    } finally {
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigterm);
    }
    const hint =
      dir && dir !== process.env.METRL_ORT_CUDA_DIR ? ` (set METRL_ORT_CUDA_DIR=${folder} for metrl to find it)` : '';
    process.stdout.write(
      `ONNX Runtime 1.29.0 with its CUDA 13 provider is in ${folder}${hint}; --device cuda needs an NVIDIA driver and the CUDA 13 and cuDNN 9 libraries on the library path\n`,
    );
  }),
};

export default command;
