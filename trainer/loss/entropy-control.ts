// The entropy bonus's coefficient from step to step: TRL's entropy_coef, fixed, or with
// use_adaptive_entropy Skywork-OR1's adaptive control, which TRL's GRPOTrainer runs once per optimiser update:
//   applied_t = c_t            if H_{t−1} ≤ H_target   (H_{t−1}: the previous update's mean per-token entropy;
//             = 0              otherwise                 +∞ before the first, so the first update applies none)
//   c_{t+1}   = min(c_t + Δ, c_max)   if H_t ≤ H_target
//             = max(c_t − Δ, c_min)   otherwise
// Without adaptive control applied_t = c = entropyCoef for every update. The controller's state is saved in checkpoints
// so that a resumed run continues it.
import type { TrainConfig } from '../config.ts';

export type EntropyControlConfig = Pick<
  TrainConfig,
  'entropyCoef' | 'useAdaptiveEntropy' | 'entropyCoefMin' | 'entropyCoefMax' | 'entropyCoefDelta' | 'entropyTarget'
>;

export interface EntropyControl {
  /** c_t: the coefficient (TRL logs it as entropy_coef). */
  coef: number;
  /** H_{t−1}: the last update's mean per-token entropy; Infinity before the first. */
  lastEntropy: number;
}

/** Whether the run has an entropy bonus at all (TRL: entropy_coef ≠ 0 or adaptive control on). */
export function entropyBonusEnabled(config: Partial<Pick<TrainConfig, 'entropyCoef' | 'useAdaptiveEntropy'>>): boolean {
  return (config.entropyCoef ?? 0) !== 0 || config.useAdaptiveEntropy === true;
}

export function startEntropyControl(config: EntropyControlConfig): EntropyControl {
  return { coef: config.entropyCoef, lastEntropy: Infinity };
}

/** applied_t: the coefficient this update's loss uses. */
export function appliedEntropyCoef(config: EntropyControlConfig, control: EntropyControl): number {
  if (!config.useAdaptiveEntropy) return config.entropyCoef;
  return control.lastEntropy <= config.entropyTarget ? control.coef : 0;
}

/** The controller after an update whose mean per-token entropy was `entropy` (unchanged without adaptive control). */
export function nextEntropyControl(
  config: EntropyControlConfig,
  control: EntropyControl,
  entropy: number,
): EntropyControl {
  if (!config.useAdaptiveEntropy) return control;
  const coef =
    entropy <= config.entropyTarget
      ? Math.min(control.coef + config.entropyCoefDelta, config.entropyCoefMax)
      : Math.max(control.coef - config.entropyCoefDelta, config.entropyCoefMin);
  return { coef, lastEntropy: entropy };
}
