// Qwen3VLForConditionalGeneration's config.json beyond its decoder: the vision tower's vision_config
// (Qwen3VLVisionConfig: a learned position table interpolated to each image, DeepStack taps) and the image token ids
// and interleaved multimodal RoPE (models/qwen-vl/config.ts). Missing keys take transformers 4.57's class defaults.
import { UserError } from '../../core/errors.ts';
import {
  blockIndexes,
  parseQwenVlSetup,
  parseVisionCommon,
  type QwenVisionCommon,
  type QwenVlSetup,
} from '../qwen-vl/config.ts';

export interface Qwen3VisionConfig extends QwenVisionCommon {
  /** Rows of the learned position table, a square: n × n positions, bilinearly interpolated to each grid. */
  numPositionEmbeddings: number;
  /** Blocks whose output feeds deepstack_merger_list.{j}, in order. */
  deepstackVisualIndexes: number[];
}

/** Parse a config.json (transformers 4.57's layout, which the Hub's Qwen3-VL files have). */
export function parseQwen3VlSetup(raw: unknown, source = 'config.json'): QwenVlSetup<Qwen3VisionConfig> {
  const visionRaw = (raw as Record<string, unknown> | null)?.vision_config;
  const common = parseVisionCommon(
    visionRaw,
    'qwen3_vl',
    {
      depth: 27,
      hidden_size: 1152,
      intermediate_size: 4304,
      num_heads: 16,
      patch_size: 16,
      out_hidden_size: 3584,
      hidden_act: 'gelu_pytorch_tanh',
    },
    source,
  );
  const positions = (visionRaw as { num_position_embeddings?: unknown } | undefined)?.num_position_embeddings ?? 2304;
  const side = Math.round(Math.sqrt(Number(positions)));
  if (!Number.isInteger(positions) || side * side !== positions)
    throw new UserError(
      `${source}: vision_config.num_position_embeddings ${JSON.stringify(positions)} is not the square of an integer`,
    );
  const vision: Qwen3VisionConfig = {
    ...common,
    numPositionEmbeddings: positions as number,
    deepstackVisualIndexes: blockIndexes(visionRaw, 'deepstack_visual_indexes', [8, 16, 24], common.depth, source),
  };
  return parseQwenVlSetup(
    raw,
    vision,
    {
      layout: 'interleaved',
      section: [24, 20, 20],
      hiddenSize: 4096,
      numAttentionHeads: 32,
      headDim: 128,
      ropeTheta: 5e6,
    },
    source,
  );
}
