// ONNX forms of a few computations that every execution provider metrl uses runs on the device (models/ layer, ONNX
// Runtime engine). ORT's WebGPU provider has no kernel for com.microsoft FusedMatMul, LogSoftmax, OneHot or
// ConstantOfShape, so each such node ran on the CPU with its operands copied down and its result copied back up; and
// its ReduceLogSumExp overflows to infinity past logits of about 88 (it does not subtract the maximum). These forms use
// only ops every provider has, and the CPU loses nothing by them: ORT's CPU optimizer fuses Transpose + MatMul back
// into FusedMatMul (MatmulTransposeFusion), and the others are the same number of passes over the data. The placement
// check (session-placement.ts) holds the graphs to it.
import type { GraphBuilder } from './graph-builder.ts';

/**
 * x (ᵀ) · w (ᵀ) over the last two axes of rank-`rank` operands (either transposed where asked): Transpose + MatMul.
 */
export function matMulTransposed(
  b: GraphBuilder,
  x: string,
  w: string,
  options: { transA?: boolean; transB?: boolean; rank: number },
): string {
  const { rank } = options;
  const last2 = Array.from({ length: rank }, (_, i) => (i < rank - 2 ? i : 2 * rank - 3 - i)); // […, 1, 0] swapped
  return b.op1('MatMul', [
    options.transA ? b.op1('Transpose', [x], { perm: last2 }) : x,
    options.transB ? b.op1('Transpose', [w], { perm: last2 }) : w,
  ]);
}

/** log Σ exp(z) over the last axis, kept [.., 1]: m + log Σ exp(z − m) with m the row's maximum (no overflow). */
export function logSumExp(b: GraphBuilder, z: string): string {
  const m = b.op1('ReduceMax', [z], { axes: [-1], keepdims: 1 });
  const sum = b.op1('ReduceSum', [b.op1('Exp', [b.op1('Sub', [z, m])]), b.ints([-1])], { keepdims: 1 });
  return b.op1('Add', [m, b.op1('Log', [sum])]);
}

/** log_softmax(z) over the last axis: z − logSumExp(z). */
export function logSoftmax(b: GraphBuilder, z: string, name?: string): string {
  return b.op1('Sub', [z, logSumExp(b, z)], {}, name);
}

/**
 * (onehot(targets) − p) ⊙ g for p [N, V], targets [N, 1] int64 and g [N, 1]: −p ⊙ g with g added at each row's target
 * (ScatterElements, reduction add), where a OneHot built the [N, V] one-hot on the CPU (16 MB a head chunk, uploaded).
 */
export function targetMinusSoftmax(b: GraphBuilder, p: string, targets: string, g: string): string {
  return b.op1('ScatterElements', [b.op1('Mul', [b.op1('Neg', [p]), g]), targets, g], { axis: 1, reduction: 'add' });
}
