// Reverse-mode automatic differentiation over the ONNX graph builder: a graph is
// written once with the ops below; each op emits its forward node(s) and, when one of its inputs depends on a
// differentiable input (a `param`), records its vector-Jacobian product. `backward` then walks the record in reverse
// and emits the gradient nodes into the same graph, so one ONNX Runtime run computes the forward pass and the
// gradients (ORT's inference build has no training operators; everything here is standard ONNX, so that every
// execution provider has a kernel for it: docs/engines.md, "Where the nodes run").
//
// Only what depends on a param is differentiated: constants (weights, embeddings, masks, RoPE tables) get no gradient
// nodes at all, which is what a LoRA learner wants (no base-weight gradients).
// Shapes are symbolic at build time, so the ops keep broadcasting out of the differentiable path: element-wise ops
// between two differentiated values take equal shapes, a broadcast operand must be a constant (`mulConst`), and
// `expand` says which axes it broadcasts. Reshape's VJP reshapes back to the runtime Shape of its input.
// Composite ops (attention, RMSNorm, RoPE, the GELU approximation) carry hand-written VJPs: fewer nodes than their
// primitives' and the same formulas as their tfjs gradients up to float rounding.
import { GraphBuilder } from './graph-builder.ts';
import { matMulTransposed } from './portable-ops.ts';

/** A value of the graph: its name, its rank (static) and whether it depends on a param. */
export interface Value {
  name: string;
  rank: number;
  diff: boolean;
}

type Vjp = (outputGrads: (string | null)[]) => (string | null)[];

interface TapeEntry {
  inputs: Value[];
  outputs: Value[];
  vjp: Vjp;
}

export class DiffGraph {
  readonly b: GraphBuilder;
  private readonly tape: TapeEntry[] = [];

  constructor(name: string) {
    this.b = new GraphBuilder(name);
  }

  /** A differentiable graph input (gradients are asked of these). */
  param(name: string, dims: (number | string)[]): Value {
    return { name: this.b.input(name, 'float32', dims), rank: dims.length, diff: true };
  }

  /**
   * An existing value made differentiable: the start of a segment whose gradient is asked of it (a layer's input
   * hidden state when the backward pass recomputes one layer at a time: hf/hf-train-graph.ts).
   */
  source(name: string, rank: number): Value {
    return { name, rank, diff: true };
  }

  /** Forget the recorded ops: the next backward() walks only what is written from now on (one segment). */
  resetTape(): void {
    this.tape.length = 0;
  }

  /** A non-differentiable value (input, initializer, or a node of constants only). */
  constant(name: string, rank: number): Value {
    return { name, rank, diff: false };
  }

  private record(inputs: Value[], outputs: Value[], vjp: Vjp): void {
    if (inputs.some((v) => v.diff)) this.tape.push({ inputs, outputs, vjp });
  }

  private out(name: string, rank: number, inputs: Value[]): Value {
    return { name, rank, diff: inputs.some((v) => v.diff) };
  }

  // ---- element-wise -------------------------------------------------------------------------------------------

  /** a + b, equal shapes (either may be constant). */
  add(a: Value, c: Value): Value {
    const y = this.out(this.b.op1('Add', [a.name, c.name]), Math.max(a.rank, c.rank), [a, c]);
    this.record([a, c], [y], ([dy]) => [dy, dy]);
    return y;
  }

  /** x · c with c constant (a scalar or a tensor broadcasting into x). */
  mulConst(x: Value, c: string): Value {
    const y = this.out(this.b.op1('Mul', [x.name, c]), x.rank, [x]);
    this.record([x], [y], ([dy]) => [dy ? this.b.op1('Mul', [dy, c]) : null]);
    return y;
  }

  /** a ⊙ b, equal shapes, both possibly differentiated (the gated MLP's act(gate) ⊙ up). VJP: [dy ⊙ b, dy ⊙ a]. */
  mul(a: Value, c: Value): Value {
    const y = this.out(this.b.op1('Mul', [a.name, c.name]), Math.max(a.rank, c.rank), [a, c]);
    this.record([a, c], [y], ([dy]) => [
      dy && a.diff ? this.b.op1('Mul', [dy, c.name]) : null,
      dy && c.diff ? this.b.op1('Mul', [dy, a.name]) : null,
    ]);
    return y;
  }

  /** Soft-capping y = cap · tanh(x / cap) (Gemma's logits). VJP: dy · (1 − tanh²(x / cap)). */
  softcap(x: Value, cap: number): Value {
    const b = this.b;
    const t = b.op1('Tanh', [b.op1('Div', [x.name, b.scalar(cap)])]);
    const y = this.out(b.op1('Mul', [t, b.scalar(cap)]), x.rank, [x]);
    this.record([x], [y], ([dy]) => [
      dy ? b.op1('Mul', [dy, b.op1('Sub', [b.scalar(1), b.op1('Mul', [t, t])])]) : null,
    ]);
    return y;
  }

  /**
   * GELU, tanh approximation (layers/mlp.ts geluTanh): y = ½ x (1 + t), t = tanh(u), u = √(2/π) (x + 0.044715 x³).
   * VJP: dy · (½ (1 + t) + ½ x (1 − t²) √(2/π) (1 + 3 · 0.044715 x²)).
   */
  geluTanh(x: Value): Value {
    const b = this.b;
    const c = Math.sqrt(2 / Math.PI);
    const x2 = b.op1('Mul', [x.name, x.name]);
    const inner = b.op1('Mul', [
      b.op1('Add', [x.name, b.op1('Mul', [b.op1('Mul', [x2, x.name]), b.scalar(0.044715)])]),
      b.scalar(c),
    ]);
    const t = b.op1('Tanh', [inner]);
    const onePlusT = b.op1('Add', [t, b.scalar(1)]);
    const y = this.out(b.op1('Mul', [b.op1('Mul', [x.name, b.scalar(0.5)]), onePlusT]), x.rank, [x]);
    this.record([x], [y], ([dy]) => {
      if (!dy) return [null];
      const du = b.op1('Mul', [b.op1('Add', [b.scalar(1), b.op1('Mul', [x2, b.scalar(3 * 0.044715)])]), b.scalar(c)]);
      const dt = b.op1('Mul', [
        b.op1('Mul', [b.op1('Mul', [x.name, b.scalar(0.5)]), b.op1('Sub', [b.scalar(1), b.op1('Mul', [t, t])])]),
        du,
      ]);
      return [b.op1('Mul', [dy, b.op1('Add', [b.op1('Mul', [onePlusT, b.scalar(0.5)]), dt])])];
    });
    return y;
  }

  // ---- products --------------------------------------------------------------------------------------------------

  /** a @ b for 2-D a and b (the row-wise products: projections, adapters, head); gradients are Gemm nodes. */
  matmul(a: Value, c: Value): Value {
    if (a.rank !== 2 || c.rank !== 2)
      throw new Error(`matmul: 2-D operands only (ranks ${a.rank}, ${c.rank}); attention has its own op`);
    const y = this.out(this.b.op1('MatMul', [a.name, c.name]), 2, [a, c]);
    // y = a b:  da = dy bᵀ,  db = aᵀ dy.
    this.record([a, c], [y], ([dy]) => [
      dy && a.diff ? this.b.op1('Gemm', [dy, c.name], { transB: 1 }) : null,
      dy && c.diff ? this.b.op1('Gemm', [a.name, dy], { transA: 1 }) : null,
    ]);
    return y;
  }

  // ---- shape ------------------------------------------------------------------------------------------------------

  /** Reshape to `shape` (an int64 tensor name; 0 keeps a dim, -1 infers one). */
  reshape(x: Value, shape: string, rank: number): Value {
    const y = this.out(this.b.op1('Reshape', [x.name, shape]), rank, [x]);
    this.record([x], [y], ([dy]) => [dy ? this.b.op1('Reshape', [dy, this.b.op1('Shape', [x.name])]) : null]);
    return y;
  }

  transpose(x: Value, perm: number[]): Value {
    const y = this.out(this.b.op1('Transpose', [x.name], { perm }), x.rank, [x]);
    const inverse = perm.map((_, i) => perm.indexOf(i));
    this.record([x], [y], ([dy]) => [dy ? this.b.op1('Transpose', [dy], { perm: inverse }) : null]);
    return y;
  }

  /** Split along `axis` into parts of the sizes in `sizes` (an int64 [n] tensor name). */
  split(x: Value, axis: number, sizes: string, n: number): Value[] {
    const names = this.b.op('Split', [x.name, sizes], { axis }, n);
    const ys = names.map((name) => this.out(name, x.rank, [x]));
    this.record([x], ys, (dys) => {
      if (dys.every((d) => d === null)) return [null];
      // A part without gradient contributes zeros of its shape.
      const parts = dys.map((d, i) => d ?? this.b.op1('Mul', [ys[i].name, this.b.scalar(0)]));
      return [this.b.op1('Concat', parts, { axis })];
    });
    return ys;
  }

  /** Concatenate along `axis`; `sizes` (int64 [n]) gives the parts' sizes there, for the VJP's Split. */
  concat(xs: Value[], axis: number, sizes: string): Value {
    const y = this.out(
      this.b.op1(
        'Concat',
        xs.map((x) => x.name),
        { axis },
      ),
      xs[0].rank,
      xs,
    );
    this.record(xs, [y], ([dy]) => (dy ? this.b.op('Split', [dy, sizes], { axis }, xs.length) : xs.map(() => null)));
    return y;
  }

  /**
   * Expand (ONNX broadcasting) along axes where x has size 1: `shape` an int64 tensor name, `axes` those axes. VJP:
   * the sum over them.
   */
  expand(x: Value, shape: string, axes: number[]): Value {
    const y = this.out(this.b.op1('Expand', [x.name, shape]), x.rank, [x]);
    this.record([x], [y], ([dy]) => [dy ? this.b.op1('ReduceSum', [dy, this.b.ints(axes)], { keepdims: 1 }) : null]);
    return y;
  }

  /**
   * Rows of a 2-D x (`rows` an int64 [R] tensor name; a row may repeat). VJP: the rows' gradients added back into
   * zeros of x's shape (ScatterND with reduction add, which sums repeated rows).
   */
  gatherRows(x: Value, rows: string): Value {
    const b = this.b;
    const y = this.out(b.op1('Gather', [x.name, rows], { axis: 0 }), x.rank, [x]);
    this.record([x], [y], ([dy]) => {
      if (!dy) return [null];
      // Zeros of x's shape by Expand of a scalar, not ConstantOfShape: ORT's WebGPU provider has no ConstantOfShape
      // kernel, so the CPU made the [N, H] zeros and uploaded them.
      const zeros = b.op1('Expand', [b.scalar(0), b.op1('Shape', [x.name])]);
      return [b.op1('ScatterND', [zeros, b.op1('Unsqueeze', [rows, b.ints([1])]), dy], { reduction: 'add' })];
    });
    return y;
  }

  // ---- composites -------------------------------------------------------------------------------------------------

  /**
   * Attention O = softmax(q Kᵀ + mask) V over the last two axes (q [.., C, dh], K and V [.., K, dh], same rank; mask
   * constant, broadcasting into the scores). Its VJP uses rowsum(dP ⊙ P) = rowsum(dO ⊙ O) (as FlashAttention's
   * backward does), which reads [.., C, dh] instead of the [.., C, K] score matrix:
   *   dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − rowsum(dO ⊙ O)),  dq = dS K,  dK = dSᵀ q.
   */
  attention(q: Value, keys: Value, values: Value, mask: string): Value {
    const b = this.b;
    // Transpose + MatMul (portable-ops.ts: WebGPU has no FusedMatMul; ORT's CPU optimizer fuses the pair again).
    const ms = (x: string, w: string, transA: number, transB: number) =>
      matMulTransposed(b, x, w, { transA: transA === 1, transB: transB === 1, rank: q.rank });
    const probs = b.op1('Softmax', [b.op1('Add', [ms(q.name, keys.name, 0, 1), mask])], { axis: -1 });
    const y = this.out(b.op1('MatMul', [probs, values.name]), q.rank, [q, keys, values]);
    this.record([q, keys, values], [y], ([dy]) => {
      if (!dy) return [null, null, null];
      const dv = values.diff ? ms(probs, dy, 1, 0) : null;
      const rowDot = b.op1('ReduceSum', [b.op1('Mul', [dy, y.name]), b.ints([-1])], { keepdims: 1 });
      const ds = b.op1('Mul', [probs, b.op1('Sub', [ms(dy, values.name, 0, 1), rowDot])]);
      return [q.diff ? b.op1('MatMul', [ds, keys.name]) : null, keys.diff ? ms(ds, q.name, 1, 0) : null, dv];
    });
    return y;
  }

  /**
   * RMSNorm over the last axis with a constant gain: y = x · r · g, r = 1 / sqrt(mean(x²) + eps) (transformer.ts
   * rmsNorm). VJP with u = dy · g: dx = r · (u − x · r² · mean(x · u)).
   */
  rmsNorm(x: Value, gain: string, eps: number): Value {
    const b = this.b;
    const ms = b.op1('ReduceMean', [b.op1('Mul', [x.name, x.name])], { axes: [-1], keepdims: 1 });
    const r = b.op1('Reciprocal', [b.op1('Sqrt', [b.op1('Add', [ms, b.scalar(eps)])])]);
    const y = this.out(b.op1('Mul', [b.op1('Mul', [x.name, r]), gain]), x.rank, [x]);
    this.record([x], [y], ([dy]) => {
      if (!dy) return [null];
      const u = b.op1('Mul', [dy, gain]);
      const m = b.op1('ReduceMean', [b.op1('Mul', [x.name, u])], { axes: [-1], keepdims: 1 });
      const coef = b.op1('Mul', [b.op1('Mul', [r, r]), m]);
      return [b.op1('Mul', [r, b.op1('Sub', [u, b.op1('Mul', [x.name, coef])])])];
    });
    return y;
  }

  /**
   * Rotary embedding x ⊙ cos + rotate_half(x) ⊙ sin on x [N, d] (cos, sin constant), rotate_half(x) = x R per head:
   * (−x₂, x₁) of its two halves (transformer.ts rotationMatrix). R = swap · diag(s) with swap exchanging the halves
   * and s = −1 on first halves, +1 on second ones, so with `signedSin` = s ⊙ sin (given, computed once):
   *   y = x ⊙ cos + swap(x) ⊙ signedSin,   VJP: dy ⊙ cos + (dy ⊙ sin) Rᵀ = dy ⊙ cos + swap(dy ⊙ signedSin).
   * swap is a gather of half-head blocks (x viewed [N·H, 2, dh/2]), a copy instead of a d × d product.
   */
  rope(x: Value, cos: string, signedSin: string, layout: { halves: string; rows: string; swap: string }): Value {
    const b = this.b;
    const swap = (t: string) =>
      b.op1('Reshape', [
        b.op1('Gather', [b.op1('Reshape', [t, layout.halves]), layout.swap], { axis: 1 }),
        layout.rows,
      ]);
    const y = this.out(b.op1('Add', [b.op1('Mul', [x.name, cos]), b.op1('Mul', [swap(x.name), signedSin])]), x.rank, [
      x,
    ]);
    this.record([x], [y], ([dy]) =>
      dy ? [b.op1('Add', [b.op1('Mul', [dy, cos]), swap(b.op1('Mul', [dy, signedSin]))])] : [null],
    );
    return y;
  }

  /** GELU, sigmoid approximation: y = x σ(k x) (the built-in model's k = 1.702). VJP: dy · (s + k x s (1 − s)). */
  gelu(x: Value, kValue: number): Value {
    const b = this.b;
    const k = b.scalar(kValue);
    const s = b.op1('Sigmoid', [b.op1('Mul', [x.name, k])]);
    const y = this.out(b.op1('Mul', [x.name, s]), x.rank, [x]);
    this.record([x], [y], ([dy]) => {
      if (!dy) return [null];
      const slope = b.op1('Add', [
        s,
        b.op1('Mul', [b.op1('Mul', [b.op1('Mul', [x.name, k]), s]), b.op1('Sub', [b.scalar(1), s])]),
      ]);
      return [b.op1('Mul', [dy, slope])];
    });
    return y;
  }

  /**
   * Emit the gradient nodes: `seeds` gives d(objective)/d(value) for some values; returns the gradient name of every
   * param reached (a param the objective does not depend on is absent).
   */
  backward(seeds: Map<string, string>, params: Value[]): Map<string, string> {
    const grads = new Map(seeds);
    const accumulate = (v: Value, g: string) => {
      const prior = grads.get(v.name);
      grads.set(v.name, prior ? this.b.op1('Add', [prior, g]) : g);
    };
    for (let i = this.tape.length - 1; i >= 0; i--) {
      const entry = this.tape[i];
      const dys = entry.outputs.map((o) => grads.get(o.name) ?? null);
      if (dys.every((d) => d === null)) continue;
      const dxs = entry.vjp(dys);
      entry.inputs.forEach((x, k) => {
        const g = dxs[k];
        if (g && x.diff) accumulate(x, g);
      });
    }
    const out = new Map<string, string>();
    for (const p of params) {
      const g = grads.get(p.name);
      if (g) out.set(p.name, g);
    }
    return out;
  }
}
