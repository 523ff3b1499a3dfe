// The SigLIP vision tower on ONNX Runtime: the session of
// models/onnx/hf/siglip-graph.ts, run where tfjs's siglipForward would be. The ONNX Runtime engine installs it in a
// Hugging Face VLM's image encoder (ImageEncoder.runTower) for its lifetime; the connector or projector after the
// tower stays on tfjs (one small product). The tower is frozen, so no gradient is asked of it.
import * as tf from '@tensorflow/tfjs';
import type { VisionConfig } from '../../vision/vision-config.ts';
import type { SiglipWeights } from '../../vision/siglip.ts';
import { buildSiglipGraph } from './siglip-graph.ts';
import { OrtSession, floatTensor, type SessionOptions } from '../session.ts';
import { weightFileOf } from '../weight-file.ts';

export class SiglipOrtTower {
  private readonly session: OrtSession;

  constructor(
    weights: SiglipWeights,
    private readonly config: VisionConfig,
    options: SessionOptions = {},
  ) {
    // The tower's weights go to a file of their own that ORT maps (weight-file.ts), not into the protobuf and then
    // ORT's copy; without prepacking, which would keep a packed copy of each: the tower runs once per prompt's images,
    // not once per token. (SmolVLM-256M's 12 layers: RSS and vision seconds in docs/performance.md.)
    const shared = weightFileOf(weights, 'SigLIP vision tower');
    this.session = new OrtSession(buildSiglipGraph(weights, config, { shared }), {
      label: 'SigLIP vision tower',
      prepack: false,
      ...options,
    });
  }

  /** Pixel values [N, C, S, S] → the last hidden state [N, L, D], as siglipForward gives it (within float rounding). */
  forward(pixels: tf.Tensor4D): tf.Tensor3D {
    const [N, C, H, W] = pixels.shape;
    const { numChannels, imageSize: S, patchSize: P, hiddenSize: D } = this.config;
    if (C !== numChannels || H !== S || W !== S)
      throw new Error(`SigLIP on ONNX Runtime: pixel values [${pixels.shape}] are not [N, ${numChannels}, ${S}, ${S}]`);
    const out = this.session.run({ pixel_values: floatTensor(pixels.dataSync() as Float32Array, [N, C, H, W]) });
    return tf.tensor3d(out.last_hidden_state.data as Float32Array, [N, (S / P) ** 2, D]);
  }

  dispose(): void {
    this.session.dispose();
  }
}

/** A SigLIP tower for a vision-language model's image side (models/hf/image-model.ts EngineTower): opened at first use. */
export function lazySiglipTower(
  weights: SiglipWeights,
  config: VisionConfig,
  options: SessionOptions = {},
): { open(): void; forward(pixels: tf.Tensor4D): tf.Tensor3D; dispose(): void } {
  let tower: SiglipOrtTower | null = null;
  const open = () => (tower ??= new SiglipOrtTower(weights, config, options));
  return {
    open: () => void open(),
    forward: (pixels) => open().forward(pixels),
    dispose: () => tower?.dispose(),
  };
}
