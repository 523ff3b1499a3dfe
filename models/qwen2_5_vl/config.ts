// Qwen2_5_VLForConditionalGeneration's config.json beyond its decoder: the vision tower's vision_config
// (Qwen2_5_VLVisionConfig: window attention with full-attention blocks, a SwiGLU MLP) and the image token ids and
// chunked multimodal RoPE (models/qwen-vl/config.ts). Missing keys take transformers 4.57's class defaults.
import { UserError } from '../../core/errors.ts';
import {
  blockIndexes,
  parseQwenVlSetup,
  parseVisionCommon,
  type QwenVisionCommon,
  type QwenVlSetup,
} from '../qwen-vl/config.ts';

export interface Qwen25VisionConfig extends QwenVisionCommon {
  /** Side of an attention window in pixels (window_size / merge / patch merge units per side). */
  windowSize: number;
  /** Blocks that attend over the whole image; the others only within their window. */
  fullattBlockIndexes: number[];
}

/** Parse a config.json (nested as transformers 4.57 writes it, or the Hub's flat layout). */
export function parseQwen25VlSetup(raw: unknown, source = 'config.json'): QwenVlSetup<Qwen25VisionConfig> {
  const visionRaw = (raw as Record<string, unknown> | null)?.vision_config;
  const common = parseVisionCommon(
    visionRaw,
    'qwen2_5_vl',
    {
      depth: 32,
      hidden_size: 3584,
      intermediate_size: 3420,
      num_heads: 16,
      patch_size: 14,
      out_hidden_size: 3584,
      hidden_act: 'silu',
    },
    source,
  );
  const windowSize = (visionRaw as { window_size?: unknown } | undefined)?.window_size ?? 112;
  if (!Number.isInteger(windowSize) || (windowSize as number) < common.patchSize * common.spatialMergeSize)
    throw new UserError(
      `${source}: vision_config.window_size ${JSON.stringify(windowSize)} is not an integer of at least one merge block (${common.patchSize * common.spatialMergeSize} pixels)`,
    );
  const vision: Qwen25VisionConfig = {
    ...common,
    windowSize: windowSize as number,
    fullattBlockIndexes: blockIndexes(visionRaw, 'fullatt_block_indexes', [7, 15, 23, 31], common.depth, source),
  };
  return parseQwenVlSetup(
    raw,
    vision,
    { layout: 'chunked', section: null, hiddenSize: 8192, numAttentionHeads: 64, headDim: null, ropeTheta: 1e6 },
    source,
  );
}
