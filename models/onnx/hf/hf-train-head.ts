// The HF training graph's output head in row chunks: the predicted rows' log-prob
// of their target token and the entropy, and in the gradient pass the gradient that reaches the head's input rows,
// without ever holding the [R, V] logits of all R predicted rows. Each is an ONNX Loop over chunks of ROWS rows (a
// Loop runs its iterations one after another, so one chunk's [ROWS, V] logits, softmax and gradient exist at a time):
//   forward   z = rows · W · (1/T) [ROWS, V]; lse = logsumexp(z); token_logp = z[target] − lse;
//             entropy = −Σ p log p with p = exp(z − lse)
//   gradient  d/dz of Σ_r g_r · token_logp_r = g_r (onehot(target_r) − p_r); through the 1/T scaling and the head:
//             d rows = (dz / T) · Wᵀ [ROWS, H]
// The head's matmul runs again in the gradient pass (about one more [R, H] × [H, V] product per update) instead of
// keeping the logits: at a 49k vocabulary and 512 predicted rows the unchunked head held about six [R, V] float
// tensors (100 MB each) through the backward pass; at Gemma's 262k, five times that per row.
// Rows are padded to a whole number of chunks (Loop scan outputs have one shape per iteration) and sliced back.
import type { GraphBuilder } from '../graph-builder.ts';
import { logSumExp, targetMinusSoftmax } from '../portable-ops.ts';

/** Logits values one chunk holds at most ([ROWS, V] floats, 16 MB). */
const CHUNK_LOGITS = 2 ** 22;

export interface ChunkedHead {
  /** [R] log-prob of each predicted row's target (the graph output token_logp is an Identity of it). */
  tokenLogp: string;
  /** [R] entropy of each predicted row's distribution. */
  tokenEntropy: string;
  /**
   * Emit, into the builder's current (sub)graph, the gradient of Σ_r targetGrads_r · token_logp_r with respect to the
   * head's input rows [R, H].
   */
  rowGradient(targetGrads: string): string;
}

/**
 * The chunked head over `rows` [R, H] (the final-normalised predicted rows), head weight `w` [H, V] (float32; a Cast of
 * a 16-bit weight), `invT` (scalar 1/T), `targets` [R] int64, vocabulary V and hidden size H; `chunkLogits` (tests)
 * makes the chunks small.
 */
export function chunkedHead(
  b: GraphBuilder,
  rows: string,
  w: string,
  invT: string,
  targets: string,
  vocab: number,
  hidden: number,
  chunkLogits = CHUNK_LOGITS,
): ChunkedHead {
  return chunkedHeadParts(b, rows, w, invT, targets, vocab, hidden, chunkLogits, true);
}

/** The gradient part alone (a graph that recomputes the head for its backward pass: no log-prob Loop emitted). */
export function chunkedHeadGradient(
  b: GraphBuilder,
  rows: string,
  w: string,
  invT: string,
  targets: string,
  vocab: number,
  hidden: number,
  chunkLogits = CHUNK_LOGITS,
): (targetGrads: string) => string {
  return chunkedHeadParts(b, rows, w, invT, targets, vocab, hidden, chunkLogits, false).rowGradient;
}

function chunkedHeadParts(
  b: GraphBuilder,
  rows: string,
  w: string,
  invT: string,
  targets: string,
  vocab: number,
  hidden: number,
  chunkLogits: number,
  withForward: boolean,
): ChunkedHead {
  const chunk = Math.max(1, Math.floor(chunkLogits / vocab));
  const R = b.op1('Shape', [targets]); // [1]
  const n = b.op1('Div', [b.op1('Add', [R, b.ints([chunk - 1])]), b.ints([chunk])]); // [1] chunks
  const pad = b.op1('Sub', [b.op1('Mul', [n, b.ints([chunk])]), R]); // [1] padding rows
  const padRows = (x: string, rank: number) =>
    b.op1('Pad', [
      x,
      b.op1('Concat', [b.ints([0]), ...Array(rank - 1).fill(b.ints([0])), pad, ...Array(rank - 1).fill(b.ints([0]))], {
        axis: 0,
      }),
    ]);
  const rowsP = padRows(rows, 2); // [n·chunk, H]
  const targetsP = padRows(targets, 1); // [n·chunk]
  const trips = b.op1('Squeeze', [n, b.ints([0])]); // [] int64
  const always = b.op1('Cast', [b.ints([1], [])], { to: 9 }); // bool true, [] (Cast to BOOL)

  /** One Loop over the chunks; `body(i0, i1)` gets the chunk's row range [1] int64 and returns its scan outputs. */
  const loop = (
    label: string,
    outputs: { type: 'float32'; dims: (string | number)[] }[],
    body: (start: string, end: string) => string[],
  ): string[] => {
    const iter = b.fresh(`${label}_i`);
    const condIn = b.fresh(`${label}_cond`);
    const graph = b.subgraph(`${label}_body`, () => {
      const start = b.op1('Mul', [b.op1('Unsqueeze', [iter, b.ints([0])]), b.ints([chunk])]); // [1]
      const end = b.op1('Add', [start, b.ints([chunk])]);
      const scans = body(start, end);
      return [
        { name: b.op1('Identity', [condIn]), type: 'bool' as const, dims: [] },
        ...scans.map((name, k) => ({ name: b.op1('Identity', [name]), ...outputs[k] })),
      ];
    }, [
      { name: iter, type: 'int64', dims: [] },
      { name: condIn, type: 'bool', dims: [] },
    ]);
    return b.op('Loop', [trips, always], { body: { graph } }, outputs.length);
  };

  /** The chunk's scaled logits z [chunk, V], its logsumexp [chunk, 1] and target index [chunk, 1]. */
  const logits = (start: string, end: string) => {
    const x = b.op1('Slice', [rowsP, start, end, b.ints([0])]); // [chunk, H]
    const z = b.op1('Mul', [b.op1('MatMul', [x, w]), invT]); // [chunk, V]
    const lse = logSumExp(b, z); // [chunk, 1]
    const t = b.op1('Unsqueeze', [b.op1('Slice', [targetsP, start, end, b.ints([0])]), b.ints([1])]); // [chunk, 1]
    return { z, lse, t };
  };
  /** [n, chunk, …] scan output → [R, …]. */
  const unchunk = (scan: string, inner: number[]) =>
    b.op1('Slice', [b.op1('Reshape', [scan, b.ints([-1, ...inner])]), b.ints([0]), R, b.ints([0])]);

  const [lp, ent] = !withForward
    ? ['', '']
    : loop(
        'head',
        [
          { type: 'float32', dims: ['chunk'] },
          { type: 'float32', dims: ['chunk'] },
        ],
        (start, end) => {
          const { z, lse, t } = logits(start, end);
          const logp = b.op1('Sub', [z, lse]); // [chunk, V]
          const picked = b.op1('Reshape', [b.op1('GatherElements', [logp, t], { axis: 1 }), b.ints([-1])]);
          const entropy = b.op1('Neg', [
            b.op1('ReduceSum', [b.op1('Mul', [b.op1('Exp', [logp]), logp]), b.ints([-1])], { keepdims: 0 }),
          ]);
          return [picked, entropy];
        },
      );
  return {
    tokenLogp: withForward ? unchunk(lp, []) : '',
    tokenEntropy: withForward ? unchunk(ent, []) : '',
    rowGradient(targetGrads: string): string {
      const gradsP = padRows(targetGrads, 1);
      const [dRows] = loop('head_grad', [{ type: 'float32', dims: ['chunk', 'hidden'] }], (start, end) => {
        const { z, lse, t } = logits(start, end);
        const p = b.op1('Exp', [b.op1('Sub', [z, lse])]); // [chunk, V]
        const g = b.op1('Unsqueeze', [b.op1('Slice', [gradsP, start, end, b.ints([0])]), b.ints([1])]); // [chunk, 1]
        const dz = targetMinusSoftmax(b, p, t, b.op1('Mul', [g, invT])); // [chunk, V]
        return [b.op1('Gemm', [dz, w], { transB: 1 })]; // [chunk, H]
      });
      return unchunk(dRows, [hidden]); // [R, H]
    },
  };
}
