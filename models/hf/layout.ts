// Where a decoder's tensors sit in a checkpoint and which module paths PEFT adapters name. Each
// architecture file (models/llama/, models/qwen2/, models/gemma3/, models/idefics3/) fills one of these; the shared
// decoder (models/hf/decoder.ts) does the rest.
export interface TextModelLayout {
  /** On-disk prefix of the decoder's tensors: `<prefix>embed_tokens.weight`, `<prefix>layers.{i}.…`, `<prefix>norm.weight`. */
  weightPrefix: string;
  /** On-disk name of the untied output head (absent from the file when embeddings are tied). */
  lmHead: string;
  /** Module path prefix of the decoder in memory (transformers 4.57), which PEFT adapter keys use. */
  modulePrefix: string;
  /** Other prefixes adapters written with older transformers use for the same modules. */
  legacyModulePrefixes: string[];
}
