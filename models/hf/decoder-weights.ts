// The weights of the Hugging Face decoder: per layer its norms, projections and MLP, and the
// embedding table, final norm and head. Read by the definition of the block (decoder-ops.ts), filled by
// load-decoder.ts, and executed by the tfjs decoder (decoder.ts) and the ONNX graph (models/onnx/hf/hf-graph.ts): a file
// of its own so that the definition and its executors import the types from one place, not from each other.
import type * as tf from '@tensorflow/tfjs';
import type { EmbeddingTable } from '../layers/embedding.ts';
import type { LinearWeights } from '../layers/linear.ts';
import type { MlpWeights } from '../layers/mlp.ts';

export interface DecoderLayerWeights {
  inputNorm: tf.Variable; // [H]
  postAttnNorm: tf.Variable; // [H]: Llama's pre-MLP norm; Gemma's norm of the attention output
  preFfnNorm?: tf.Variable; // [H] Gemma
  postFfnNorm?: tf.Variable; // [H] Gemma
  qNorm?: tf.Variable; // [d] Gemma
  kNorm?: tf.Variable; // [d] Gemma
  q: LinearWeights; // H → nh·d
  k: LinearWeights; // H → nkv·d
  v: LinearWeights; // H → nkv·d
  o: LinearWeights; // nh·d → H
  mlp: MlpWeights;
}

export interface DecoderWeights {
  embed: EmbeddingTable;
  layers: DecoderLayerWeights[];
  finalNorm: tf.Variable; // [H]
  /** Output head [H, V]; when tied this is the embedding table itself (layout 'columns'). */
  lmHead: tf.Variable;
}
