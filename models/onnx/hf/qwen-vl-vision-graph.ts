// The Qwen2.5-VL and Qwen3-VL vision towers as ONNX graphs, generated from the same definitions tfjs runs
// (models/qwen2_5_vl/vision-tower.ts qwen25VisionTower, models/qwen3_vl/vision-tower.ts qwen3VisionTower): this file is
// their ONNX executor, which emits each op as nodes through GraphBuilder. Only plain ONNX ops (MatMul, Gather,
// Softmax, LayerNormalization, SimplifiedLayerNormalization like the decoder graphs, Erf, Tanh, Sigmoid …), nothing
// of com.microsoft, so that WebGPU runs every node.
//
// One graph serves every call: the call's VisionLayout (models/qwen-vl/vision-layout.ts) arrives as inputs, which the
// session (qwen-vl-vision-session.ts) computes on the host.
//   pixel_values        [N, C·T·P·P]  float   patch rows in the tower's order (Qwen2.5-VL: window order)
//   rotary_cos / _sin   [N, hd]       float   2-D rotary of each row
//   <scope>_gather      [S, L]        int64   attention segments padded to the longest (L rows): the row of each slot
//   <scope>_mask        [S, 1, 1, L]  float   0 on real slots, float32's lowest on padding (keys only)
//   <scope>_scatter     [N]           int64   each row's slot in the flattened [S·L] padded layout
//                                             (scope: `image` segments; Qwen2.5-VL's windowed blocks also `window`)
//   restore_index       [M]           int64   Qwen2.5-VL: merged rows back to image order
//   position_index      [4, N] int64, position_weight [4, N, 1] float   Qwen3-VL: the interpolated position taps
// Outputs: image_embeds [M, out_hidden] (M = N / merge², image order); Qwen3-VL also deepstack_embeds_{j}.
import type * as tf from '@tensorflow/tfjs';
import type { QwenVisionActivation } from '../../qwen-vl/config.ts';
import type { AttentionScope, QwenLayerNorm, QwenLinear, QwenVisionOps } from '../../qwen-vl/vision-ops.ts';
import type { Qwen25VisionConfig } from '../../qwen2_5_vl/config.ts';
import { qwen25VisionTower } from '../../qwen2_5_vl/vision-tower.ts';
import type { Qwen25VisionWeights } from '../../qwen2_5_vl/vision-weights.ts';
import type { Qwen3VisionConfig } from '../../qwen3_vl/config.ts';
import { qwen3VisionTower } from '../../qwen3_vl/vision-tower.ts';
import type { Qwen3VisionWeights } from '../../qwen3_vl/vision-weights.ts';
import { GraphBuilder, MAX_INLINE_BYTES, type SerializedModel } from '../graph-builder.ts';
import type { SharedWeightFile } from '../weight-file.ts';

const values = (t: tf.Tensor): Float32Array => t.dataSync() as Float32Array;

class OnnxQwenVisionOps implements QwenVisionOps<string> {
  private count = 0;
  private readonly declared = new Map<string, string>();

  constructor(
    private readonly b: GraphBuilder,
    private readonly rowWidth: number,
    private readonly headDim: number,
  ) {}

  /** A weight as an initializer, read only when the model needs its bytes (a shared weight file has them already). */
  private tensor(t: tf.Tensor, what: string): string {
    return this.b.floats(`${what}.${this.count++}`, () => values(t), t.shape);
  }

  /** A graph input, declared the first time an op needs it. */
  private input(name: string, type: 'float32' | 'int64', dims: (number | string)[]): string {
    if (!this.declared.has(name)) this.declared.set(name, this.b.input(name, type, dims));
    return this.declared.get(name)!;
  }

  patchEmbed(w: QwenLinear): string {
    return this.linear(this.input('pixel_values', 'float32', ['rows', this.rowWidth]), w);
  }

  positionEmbedding(table: tf.Tensor2D): string {
    const b = this.b;
    const index = this.input('position_index', 'int64', [4, 'rows']);
    const weight = this.input('position_weight', 'float32', [4, 'rows', 1]);
    const taps = b.op1('Mul', [b.op1('Gather', [this.tensor(table, 'pos_embed'), index], { axis: 0 }), weight]); // [4, N, D]
    // Σ_j tap j, summed in order (as transformers adds the four terms).
    const tap = (j: number) =>
      b.op1('Squeeze', [b.op1('Slice', [taps, b.ints([j]), b.ints([j + 1]), b.ints([0])]), b.ints([0])]);
    let sum = tap(0);
    for (let j = 1; j < 4; j++) sum = b.op1('Add', [sum, tap(j)]);
    return sum;
  }

  rmsNorm(x: string, weight: tf.Tensor1D, eps: number): string {
    return this.b.op1('SimplifiedLayerNormalization', [x, this.tensor(weight, 'rms.w')], {
      axis: -1,
      epsilon: { float: eps },
    });
  }

  layerNorm(x: string, w: QwenLayerNorm, eps: number): string {
    return this.b.op1('LayerNormalization', [x, this.tensor(w.weight, 'ln.w'), this.tensor(w.bias, 'ln.b')], {
      axis: -1,
      epsilon: { float: eps },
    });
  }

  linear(x: string, w: QwenLinear): string {
    const y = this.b.op1('MatMul', [x, this.tensor(w.weight, 'w')]);
    return w.bias ? this.b.op1('Add', [y, this.tensor(w.bias, 'b')]) : y;
  }

  columns(x: string, start: number, width: number): string {
    const b = this.b;
    return b.op1('Slice', [x, b.ints([start]), b.ints([start + width]), b.ints([1])]);
  }

  rotary(x: string, heads: number): string {
    const b = this.b;
    const hd = this.headDim;
    const [cos, sin] = ['rotary_cos', 'rotary_sin'].map((n) =>
      b.op1('Unsqueeze', [this.input(n, 'float32', ['rows', hd]), b.ints([1])]),
    ); // [N, 1, hd]
    const h = b.op1('Reshape', [x, b.ints([0, heads, hd])]); // [N, heads, hd]
    const half = (from: number) => b.op1('Slice', [h, b.ints([from]), b.ints([from + hd / 2]), b.ints([2])]);
    const rotated = b.op1('Concat', [b.op1('Neg', [half(hd / 2)]), half(0)], { axis: 2 });
    const out = b.op1('Add', [b.op1('Mul', [h, cos]), b.op1('Mul', [rotated, sin])]);
    return b.op1('Reshape', [out, b.ints([0, heads * hd])]);
  }

  attention(q: string, k: string, v: string, heads: number, scale: number, scope: AttentionScope): string {
    const b = this.b;
    const hd = this.headDim;
    const gather = this.input(`${scope}_gather`, 'int64', [`${scope}_segments`, `${scope}_length`]);
    const mask = this.input(`${scope}_mask`, 'float32', [`${scope}_segments`, 1, 1, `${scope}_length`]);
    const scatter = this.input(`${scope}_scatter`, 'int64', ['rows']);
    // [N, heads·hd] → padded segments [S, L, heads, hd] → [S, heads, L, hd] (keys: [S, heads, hd, L])
    const split = (t: string, perm: number[]) =>
      b.op1('Transpose', [b.op1('Reshape', [b.op1('Gather', [t, gather], { axis: 0 }), b.ints([0, 0, heads, hd])])], {
        perm,
      });
    const scores = b.op1('Add', [
      b.op1('Mul', [b.op1('MatMul', [split(q, [0, 2, 1, 3]), split(k, [0, 2, 3, 1])]), b.scalar(scale)]),
      mask,
    ]); // [S, heads, L, L]
    const mixed = b.op1('MatMul', [b.op1('Softmax', [scores], { axis: -1 }), split(v, [0, 2, 1, 3])]); // [S, heads, L, hd]
    const padded = b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([-1, heads * hd])]);
    return b.op1('Gather', [padded, scatter], { axis: 0 }); // [N, heads·hd]
  }

  activation(x: string, act: QwenVisionActivation): string {
    const b = this.b;
    if (act === 'silu') return b.op1('Mul', [x, b.op1('Sigmoid', [x])]);
    if (act === 'gelu')
      return b.op1('Mul', [
        b.op1('Mul', [x, b.scalar(0.5)]),
        b.op1('Add', [b.op1('Erf', [b.op1('Mul', [x, b.scalar(Math.SQRT1_2)])]), b.scalar(1)]),
      ]);
    const cube = b.op1('Mul', [b.op1('Mul', [x, x]), x]);
    const inner = b.op1('Mul', [
      b.op1('Add', [x, b.op1('Mul', [cube, b.scalar(0.044715)])]),
      b.scalar(Math.sqrt(2 / Math.PI)),
    ]);
    return b.op1('Mul', [b.op1('Mul', [x, b.scalar(0.5)]), b.op1('Add', [b.op1('Tanh', [inner]), b.scalar(1)])]);
  }

  mul(a: string, c: string): string {
    return this.b.op1('Mul', [a, c]);
  }

  add(a: string, c: string): string {
    return this.b.op1('Add', [a, c]);
  }

  mergeUnits(x: string, unit: number, width: number): string {
    return this.b.op1('Reshape', [x, this.b.ints([-1, unit * width])]);
  }

  imageOrder(x: string): string {
    return this.b.op1('Gather', [x, this.input('restore_index', 'int64', ['tokens'])], { axis: 0 });
  }

  layer(x: string, f: (x: string) => string): string {
    return f(x);
  }
}

interface GraphOptions {
  maxInlineBytes?: number;
  shared?: SharedWeightFile;
}

/** The serialised Qwen2.5-VL tower (see the header); its weights in `shared` when given, else inline. */
export function buildQwen25VisionGraph(
  weights: Qwen25VisionWeights,
  config: Qwen25VisionConfig,
  options: GraphOptions = {},
): SerializedModel {
  const b = new GraphBuilder('metrl-qwen2_5_vl-vision');
  const ops = new OnnxQwenVisionOps(b, rowWidth(config), config.hiddenSize / config.numHeads);
  const out = qwen25VisionTower(ops, weights, config);
  b.op1('Identity', [out], {}, 'image_embeds');
  b.output('image_embeds', 'float32', ['tokens', config.outHiddenSize]);
  return b.toModel(undefined, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}

/** The serialised Qwen3-VL tower (see the header): image_embeds and deepstack_embeds_{j}. */
export function buildQwen3VisionGraph(
  weights: Qwen3VisionWeights,
  config: Qwen3VisionConfig,
  options: GraphOptions = {},
): SerializedModel {
  const b = new GraphBuilder('metrl-qwen3_vl-vision');
  const ops = new OnnxQwenVisionOps(b, rowWidth(config), config.hiddenSize / config.numHeads);
  const out = qwen3VisionTower(ops, weights, config);
  b.op1('Identity', [out.features], {}, 'image_embeds');
  b.output('image_embeds', 'float32', ['tokens', config.outHiddenSize]);
  out.deepstack.forEach((d, j) => {
    b.op1('Identity', [d], {}, `deepstack_embeds_${j}`);
    b.output(`deepstack_embeds_${j}`, 'float32', ['tokens', config.outHiddenSize]);
  });
  return b.toModel(undefined, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}

/** C·T·P·P: one pixel row. */
function rowWidth(config: Qwen25VisionConfig | Qwen3VisionConfig): number {
  return config.inChannels * config.temporalPatchSize * config.patchSize ** 2;
}
