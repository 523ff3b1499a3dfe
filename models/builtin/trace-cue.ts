// The prompt template's trace cue, in a file of its own so that the RoPE grid (positions.ts), which
// restarts rows after it, loads without the template's image code: an ONNX Runtime worker thread continues its rows'
// positions itself (models/onnx/builtin/rollout-part.ts).
/** Last line of a trace-layout prompt: the model starts its trace after it. */
export const TRACE_CUE = 'trace\n';
