// The SigLIP vision tower (Idefics3/SmolVLM's and Gemma 3's) as an ONNX graph,
// generated from the same definition the tfjs forward executes (models/vision/siglip.ts siglipTower): this file is that
// definition's ONNX executor, which emits each op as nodes through GraphBuilder.
//
// Input:  pixel_values [N, C, S, S]  (S = the config's image size; N images of any count)
// Output: last_hidden_state [N·L, D]  (L = (S/P)² patches, row-major, after post_layernorm; image 0's rows first)
// Position rows are the table's first L (0 … L-1: SigLIP, and Idefics3 on a full image, which is every image here:
// image splitting is not done). Weights are initializers, read from the tower's tfjs tensors when the graph is built.
import * as tf from '@tensorflow/tfjs';
import type { VisionConfig } from '../../vision/vision-config.ts';
import {
  siglipTower,
  type LayerNormWeights,
  type LinearWeights,
  type SiglipOps,
  type SiglipWeights,
} from '../../vision/siglip.ts';
import { GraphBuilder, MAX_INLINE_BYTES, type SerializedModel } from '../graph-builder.ts';
import type { SharedWeightFile } from '../weight-file.ts';

const values = (t: tf.Tensor): Float32Array => t.dataSync() as Float32Array;

class OnnxSiglipOps implements SiglipOps<string> {
  private count = 0;

  constructor(
    private readonly b: GraphBuilder,
    private readonly weights: SiglipWeights,
    private readonly config: VisionConfig,
  ) {}

  // Read only when the graph needs the bytes: a tower in a shared weight file is not read again (its projections may
  // be released from tfjs by then: releaseSiglipProjections).
  private tensor(t: tf.Tensor, what: string): string {
    return this.b.floats(`${what}.${this.count++}`, () => values(t), t.shape);
  }

  embed(): string {
    const b = this.b;
    const { numChannels: C, patchSize: P, imageSize: S, hiddenSize: D } = this.config;
    const n = S / P; // patches per side
    const L = n * n;
    const pixels = b.input('pixel_values', 'float32', ['images', C, S, S]);
    // [N, C, S, S] → [N, C, n, P, n, P] → [N, n, n, C, P, P]: each patch flattened as (channel, row, column), the
    // Conv2d kernel's order, patches row-major.
    const grid = b.op1('Transpose', [b.op1('Reshape', [pixels, b.ints([-1, C, n, P, n, P])])], {
      perm: [0, 2, 4, 1, 3, 5],
    });
    const patches = this.linear(b.op1('Reshape', [grid, b.ints([-1, C * P * P])]), this.weights.patch); // [N·L, D]
    const positions = this.tensor(this.weights.position, 'position'); // [L, D]: loadSiglipWeights reads (S/P)² rows
    return b.op1('Reshape', [
      b.op1('Add', [b.op1('Reshape', [patches, b.ints([-1, L, D])]), positions]),
      b.ints([-1, D]),
    ]); // [N·L, D]
  }

  layerNorm(x: string, w: LayerNormWeights, eps: number): string {
    return this.b.op1('LayerNormalization', [x, this.tensor(w.weight, 'ln.w'), this.tensor(w.bias, 'ln.b')], {
      axis: -1,
      epsilon: { float: eps },
    });
  }

  linear(x: string, w: LinearWeights): string {
    return this.b.op1('Add', [this.b.op1('MatMul', [x, this.tensor(w.weight, 'w')]), this.tensor(w.bias, 'b')]);
  }

  attention(q: string, k: string, v: string, heads: number, scale: number): string {
    const b = this.b;
    const { patchSize: P, imageSize: S, hiddenSize: D } = this.config;
    const L = (S / P) ** 2;
    const hd = D / heads;
    const split = (t: string, perm: number[]) =>
      b.op1('Transpose', [b.op1('Reshape', [t, b.ints([-1, L, heads, hd])])], { perm }); // [N, L, H, hd] → perm
    const scores = b.op1('Mul', [b.op1('MatMul', [split(q, [0, 2, 1, 3]), split(k, [0, 2, 3, 1])]), b.scalar(scale)]); // [N, H, L, L]
    const mixed = b.op1('MatMul', [b.op1('Softmax', [scores], { axis: -1 }), split(v, [0, 2, 1, 3])]); // [N, H, L, hd]
    return b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([-1, D])]); // [N·L, D]
  }

  gelu(x: string, kind: VisionConfig['hiddenAct']): string {
    const b = this.b;
    if (kind === 'gelu')
      return b.op1('Mul', [
        b.op1('Mul', [x, b.scalar(0.5)]),
        b.op1('Add', [b.op1('Erf', [b.op1('Mul', [x, b.scalar(Math.SQRT1_2)])]), b.scalar(1)]),
      ]);
    // The tanh approximation, as models/vision/siglip.ts gelu writes it.
    const cube = b.op1('Mul', [b.op1('Mul', [x, x]), x]);
    const inner = b.op1('Mul', [
      b.op1('Add', [x, b.op1('Mul', [cube, b.scalar(0.044715)])]),
      b.scalar(Math.sqrt(2 / Math.PI)),
    ]);
    return b.op1('Mul', [b.op1('Mul', [x, b.scalar(0.5)]), b.op1('Add', [b.op1('Tanh', [inner]), b.scalar(1)])]);
  }

  add(a: string, c: string): string {
    return this.b.op1('Add', [a, c]);
  }

  layer(x: string, f: (x: string) => string): string {
    return f(x);
  }
}

/**
 * The serialised model of a SigLIP tower (see the header for its input and output): its weights in `shared` when given
 * (weight-file.ts: ORT maps them), else inline, or external past `maxInlineBytes` (graph-builder.ts toModel).
 */
export function buildSiglipGraph(
  weights: SiglipWeights,
  config: VisionConfig,
  options: { maxInlineBytes?: number; shared?: SharedWeightFile } = {},
): SerializedModel {
  const b = new GraphBuilder('metrl-siglip');
  const hidden = siglipTower(new OnnxSiglipOps(b, weights, config), weights, config);
  b.op1('Identity', [hidden], {}, 'last_hidden_state');
  b.output('last_hidden_state', 'float32', ['rows', config.hiddenSize]);
  return b.toModel(undefined, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}
