// The metrl checkout's modules for the peer benches: loaded from the working directory (the checkout, where
// hf-run.sh and vlm-run.sh run them), and tfjs as the same module instance metrl's own
// `import * as tf from '@tensorflow/tfjs'` resolves to (the package main; it has no exports map).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A module of the checkout, by its path from the checkout's root. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const imp = (path: string): Promise<any> => import(pathToFileURL(join(process.cwd(), path)).href);
export const tf = await imp('node_modules/@tensorflow/tfjs/dist/tf.node.js');
