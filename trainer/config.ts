// The GRPO training configuration: one zod schema, read from a JSON file (--config) and/or command-line flags, with
// the MET-Bench paper's settings (Table 6, section 3.1) where they carry over to a small model on two CPU cores and
// documented departures where they do not. Unknown keys and out-of-range values are UserErrors naming the field.

import { z } from 'zod';
import { UserError, parseOrFail } from '../core/errors.ts';
import { readJson } from '../core/files.ts';
import { CLIPPED_LOSS_TYPES, IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES } from './loss/loss.ts';
import { MULTI_OBJECTIVE_AGGREGATIONS, SCALE_REWARDS } from './loss/advantages.ts';
import { DEFAULT_ENGINE_HELP, ENGINES } from '../models/engine.ts';
import { ROLLOUT_APIS } from '../models/remote/rollout-pool.ts';
import { VLLM_IMPORTANCE_SAMPLING_MODES } from './loss/rollout-correction.ts';

const positiveInt = z.number().int().positive();

/** The loss types that accept importanceSamplingLevel 'sequence' (TRL warns for the others; metrl refuses them). */
const SEQUENCE_LOSS_TYPES: readonly string[] = ['grpo', 'sapo', 'luspo'];

/**
 * Every field, with its default and why. Keys are camelCase in config files. A field with a `.describe()` text is also
 * a command-line flag, its name in kebab-case and the text its `--help` line (scripts/schema-flags.ts generates them);
 * the others are set in a --config file only.
 * A "step" is one optimiser update: `promptsPerStep × gradientAccumulation` prompts, `groupSize` completions each.
 */
export const TrainConfigSchema = z
  .object({
    // ---- data -------------------------------------------------------------------------------------------------
    /** Training episodes (train split), drawn once from the seed and cycled through in shuffled epochs. Paper: 100. */
    trainSize: positiveInt.max(100_000).default(100).describe('training episodes, as many as in the paper'),
    /** Actions per episode, for training and for the test split. Paper: 5. */
    actions: z.number().int().min(0).max(100).default(5).describe('actions per episode, as in the paper'),
    /** Episodes in the fixed test split used for the periodic evaluation (each modality). */
    testSize: positiveInt.max(100_000).default(200).describe('episodes in the fixed test split'),
    /** Seed of everything random: episodes, data order, sampling. The test split uses its own fixed seed. */
    seed: z.number().int().min(0).default(0).describe('seed of episodes, data order and sampling'),
    /** Seed of the test split, kept apart from `seed` so runs with different seeds are measured on the same episodes. */
    testSeed: z.number().int().min(0).default(1234),

    // ---- schedule ---------------------------------------------------------------------------------------------
    /**
     * Optimiser updates to run. 40 steps × 8 prompts = 320 prompts, about three passes over the 100 training episodes;
     * a chess image step took 9-12 s from the shipped base (27 s in bench/grpo.bench.ts with random weights), so the run fits in 30 minutes.
     */
    steps: positiveInt.default(40).describe('optimiser steps'),
    /** Prompts per rollout batch. Paper (Gemma3-4B): batch size 4. */
    promptsPerStep: positiveInt.default(4).describe('prompts per rollout batch'),
    /** Completions sampled per prompt (the GRPO group). Paper: 8. Must be ≥ 2 for a group to have a spread. */
    groupSize: z
      .number()
      .int()
      .min(2, 'group size must be at least 2 (advantages compare completions within a group)')
      .default(8)
      .describe('completions per prompt, G'),
    /**
     * Batches of `promptsPerStep` prompts whose gradients are summed into one update, as in the paper's Table 6 (their
     * product is the prompts per update; here the rollouts of a step decode together and the learner works in chunks
     * of `learnerBatch`, so only the product matters). The paper uses 16 (64 prompts per update) on GPUs; on two CPU
     * cores that is minutes per update, so the default is 1: 4 prompts × 8 completions = 32 completions per update
     * (5-move chess traces run to ~390 tokens each), and 40 updates fit in a 30-minute run.
     */
    gradientAccumulation: positiveInt.default(1).describe('rollout batches per optimiser step'),
    /**
     * Sequences per learner forward/backward pass. Only bounds memory (the WASM backend has a 2-4 GB heap; a chess
     * image sequence is ~250 tokens): gradients of the chunks are summed, so the update does not depend on it.
     */
    learnerBatch: positiveInt.default(8).describe('sequences per learner forward/backward pass; memory only'),
    /**
     * Tokens (prompt + completion) per learner pass, at most: attention over a packed chunk grows with the square of
     * its length, and eight 650-token chess traces overflowed the WASM heap. A longer sequence gets a pass of its own.
     */
    learnerTokens: positiveInt.default(2048),
    /** μ: optimisation passes over each step's rollouts (μ > 1 makes the clipped ratio matter). TRL default: 1. */
    iterations: positiveInt.default(1).describe('μ: optimisation passes per batch'),
    /**
     * μ under TRL's name (num_iterations): optimisation passes over each step's rollouts. `iterations` is its old name,
     * still read from configs and flags (resolveConfig fills one from the other; both must agree). TRL default: 1.
     */
    numIterations: positiveInt.default(1),
    /**
     * Evaluate on the test split every K steps (and at step 0 and the last step). Each evaluation greedily decodes
     * testSize episodes twice (both modalities), which for chess FENs costs about as much as a few training steps.
     */
    evalEvery: positiveInt.default(20).describe('evaluate on the test split every K steps'),
    /**
     * TRL's num_generations_eval (completions per prompt in its sampled evaluation). metrl's evaluation decodes
     * greedily, one completion per test episode, so there is no evaluation group to size: any value is refused.
     */
    numGenerationsEval: positiveInt
      .optional()
      .describe("TRL's sampled-evaluation group size; refused: metrl evaluates greedily, one completion per episode"),
    /** Write a checkpoint every K steps (and at the last step). */
    checkpointEvery: positiveInt.default(10).describe('checkpoint every K steps'),
    /** Completions per step written to samples.jsonl (with prompt, target and reward). */
    samplesPerStep: z.number().int().min(0).default(4),

    // ---- sampling ---------------------------------------------------------------------------------------------
    /**
     * Longest completion in tokens. Unset: fitted to the task, 1.25 × the longest reference completion among the
     * train and test episodes plus 8 (a 5-move chess trace is about 330 characters, a shell trace about 90).
     */
    maxCompletionTokens: positiveInt
      .optional()
      .describe('longest completion in tokens (default: fitted to the task, 1.25 × the longest reference trace + 8)'),
    /**
     * Sampling temperature of the rollouts (evaluation is greedy); the learner scores softmax(logits / T), the policy
     * that sampled. TRL's default is 1, but a character-level model writes a 5-move chess trace of ~400 tokens and
     * per-token noise compounds: from the shipped base, 8 × 8 chess image samples were valid 6% of the time at T = 1,
     * 42% at 0.5 and 73% at 0.3, with the largest within-group reward spread (GRPO's signal) at 0.5.
     */
    temperature: z.number().positive().max(10).default(0.5).describe('rollout sampling temperature'),
    /** Nucleus sampling of the rollouts; 1 = off. */
    topP: z.number().gt(0).max(1).default(1).describe('rollout nucleus sampling, 1 = off'),
    /**
     * TRL's top_k: rollouts draw from the k most probable tokens only; 0 = off (TRL's default). The sampler records
     * each token's log-prob over the whole vocabulary (models/token-sampling.ts), as the learner scores it, so the
     * importance-sampling ratio carries no factor of the kept mass.
     */
    topK: z.number().int().min(0).default(0).describe('rollouts draw from the k most probable tokens, 0 = off'),
    /**
     * TRL's min_p: rollouts draw only tokens whose probability is at least minP × the most probable token's (applied
     * after top-k, before top-p). Unset: off (TRL's None).
     */
    minP: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe("rollouts draw tokens at least min-p × the top token's probability (default off)"),

    // ---- objective --------------------------------------------------------------------------------------------
    /**
     * How the per-token losses are normalised (TRL's loss_type; formulas in trainer/loss/loss.ts): 'grpo' mean over each
     * completion's tokens, then over completions (the paper's; TRL now defaults to 'dapo'); 'bnpo' token mean over each
     * gradient-accumulation batch; 'dr_grpo' token sum / (completions × maxCompletionTokens); 'dapo' token mean over
     * the whole step. TRL 1.9's newer ones (trainer/loss/policy-terms.ts): 'cispo' the clipped, detached ratio times A·logp
     * (MiniMax-M1; token mean over the step); 'sapo' a sigmoid gate instead of the clip (grpo's normaliser); 'luspo'
     * GSPO's term scaled by the completion's length (needs importanceSamplingLevel 'sequence'); 'vespo' a Gamma weight
     * of the sequence ratio times A·logp (token level; token mean over the step). The old spelling 'dr-grpo' is still read.
     */
    lossType: z
      .enum(LOSS_TYPES, { error: `unknown loss type; expected one of ${LOSS_TYPES.join(', ')}` })
      .default('grpo')
      .describe(`the loss: ${LOSS_TYPES.join(' | ')} (formulas in trainer/loss/loss.ts, policy-terms.ts)`),
    /**
     * What divides the centred rewards (TRL's scale_rewards): 'group' the group's own std (GRPO), 'batch' the whole
     * step's std (PPO-Lite), 'none' nothing (Dr. GRPO), 'mean' the group's mean reward (MaxRL; rewards ≥ 0 only).
     * Booleans of older configs are read: true = 'group', false = 'none'.
     */
    scaleRewards: z
      .enum(SCALE_REWARDS)
      .default('group')
      .describe(`what divides the centred rewards: ${SCALE_REWARDS.join(' | ')} (mean: MaxRL, rewards ≥ 0)`),
    /** Added to the group std before dividing, so a near-constant group does not blow up. TRL: 1e-4. */
    advantageEpsilon: z.number().positive().default(1e-4),
    /** β: weight of the k3 KL estimate to the reference policy (LoRA off). TRL default at the paper's time: 0.04. */
    beta: z.number().min(0).default(0.04).describe('β: weight of the KL to the reference'),
    /** ε: clip range of the importance ratio, [1 − ε, 1 + ε]. TRL / PPO default: 0.2. */
    epsilon: z.number().gt(0).lt(1).default(0.2).describe('ε: clip range of the importance ratio'),
    /**
     * ε_high: upper clip of the ratio, 1 + ε_high (TRL's epsilon_high; DAPO's clip-higher recommends 0.28). Unset: ε.
     * Must be at least ε.
     */
    epsilonHigh: z
      .number()
      .positive()
      .optional()
      .describe('ε_high: upper clip 1 + ε_high (DAPO clip-higher; default ε)'),
    /**
     * δ of INTELLECT-2's two-sided clip (TRL's delta): the unclipped ratio is capped at δ, which bounds the loss of
     * negative-advantage tokens whose ratio ran away. Clipped loss types only (grpo, bnpo, dr_grpo, dapo, luspo); must
     * exceed 1 + ε_high (TRL recommends it, metrl refuses less: below, it would also cap positive-advantage ratios
     * inside the clip range). Unset: off (TRL's None).
     */
    delta: z
      .number()
      .positive()
      .optional()
      .describe('δ: two-sided clip, the unclipped ratio capped at δ (INTELLECT-2; default off)'),
    /** sapo: temperature of the gate for A > 0 (TRL's sapo_temperature_pos). TRL: 1. */
    sapoTemperaturePos: z.number().positive().default(1).describe('sapo: gate temperature for positive advantages'),
    /** sapo: temperature of the gate for A ≤ 0 (TRL's sapo_temperature_neg). TRL: 1.05. */
    sapoTemperatureNeg: z
      .number()
      .positive()
      .default(1.05)
      .describe('sapo: gate temperature for non-positive advantages'),
    /** vespo: power k of the Gamma weight for A ≥ 0 (down-weights w < 1). TRL: 2. */
    vespoKPos: z.number().min(0).default(2).describe('vespo: k (power) for non-negative advantages'),
    /** vespo: decay λ of the Gamma weight for A ≥ 0 (down-weights w > 1). TRL: 3. */
    vespoLambdaPos: z.number().min(0).default(3).describe('vespo: λ (decay) for non-negative advantages'),
    /** vespo: k for A < 0. TRL: 3. */
    vespoKNeg: z.number().min(0).default(3).describe('vespo: k (power) for negative advantages'),
    /** vespo: λ for A < 0. TRL: 2. */
    vespoLambdaNeg: z.number().min(0).default(2).describe('vespo: λ (decay) for negative advantages'),
    /**
     * DeepSeek-V3.2's off-policy sequence mask (TRL's off_policy_mask_threshold): a completion with A < 0 whose mean
     * log-ratio of the sampling policy to the current one exceeds this carries no policy loss (its KL term stays).
     * Unset: off. TRL's example: 0.5.
     */
    offPolicyMaskThreshold: z
      .number()
      .positive()
      .optional()
      .describe('mask A < 0 completions whose mean KL to the sampler exceeds this (DeepSeek-V3.2; default off)'),
    /** The KL term times the importance ratio (TRL's use_bias_correction_kl; DeepSeek-V3.2's unbiased estimate). Default off. */
    useBiasCorrectionKl: z.boolean().default(false).describe('KL term times the importance ratio (DeepSeek-V3.2)'),
    /**
     * c of the entropy bonus L − c·H̄, H̄ the step's mean per-token entropy, the same for every loss type (TRL's
     * entropy_coef). Needs a learner that differentiates the entropy: tfjs (--engine tfjs for the built-in model); the
     * ONNX Runtime learner is refused. With useAdaptiveEntropy, the starting coefficient. TRL: 0 (off).
     */
    entropyCoef: z.number().default(0).describe('c of the entropy bonus −c·mean entropy (needs --engine tfjs)'),
    /**
     * Skywork-OR1's adaptive entropy control (TRL's use_adaptive_entropy): after each step c moves by entropyCoefDelta,
     * up when that step's mean entropy was at or below entropyTarget, down otherwise, within [entropyCoefMin,
     * entropyCoefMax]; a step applies the bonus only when the previous step's entropy was at or below the target (the
     * first step never). Default off.
     */
    useAdaptiveEntropy: z.boolean().default(false).describe('Skywork-OR1 adaptive entropy control of entropyCoef'),
    /** Lower bound of the adaptive coefficient. TRL: 0. */
    entropyCoefMin: z.number().default(0).describe('adaptive entropy: lowest coefficient'),
    /** Upper bound of the adaptive coefficient. TRL: 1. */
    entropyCoefMax: z.number().default(1).describe('adaptive entropy: highest coefficient'),
    /** The adaptive coefficient's step. TRL: 0.005. */
    entropyCoefDelta: z
      .number()
      .min(0)
      .default(0.005)
      .describe('adaptive entropy: coefficient step per optimiser step'),
    /** Target mean per-token entropy (nats) of the adaptive control. TRL: 0.2. */
    entropyTarget: z.number().min(0).default(0.2).describe('adaptive entropy: target mean per-token entropy (nats)'),
    /**
     * 'token': one importance ratio per token (GRPO); 'sequence': one per completion, exp of the mean log-ratio over
     * its tokens (GSPO), which needs lossType 'grpo', 'sapo' or 'luspo' (luspo needs it). TRL's importance_sampling_level; default 'token'.
     */
    importanceSamplingLevel: z
      .enum(IMPORTANCE_SAMPLING_LEVELS)
      .default('token')
      .describe('one importance ratio per token, or per sequence (GSPO)'),
    /**
     * Give completions that hit maxCompletionTokens no loss at all (TRL's mask_truncated_completions; DAPO's overlong
     * filtering), so an unfinished answer is not punished for being unfinished. Default off.
     */
    maskTruncatedCompletions: z.boolean().default(false).describe('completions that hit the token limit get no loss'),
    /**
     * ρ: only tokens whose entropy is at or above the (1 − ρ) quantile of the batch's token entropies carry the
     * policy-gradient term; the KL term keeps every token (TRL's top_entropy_quantile, "Beyond the 80/20 rule"
     * recommends 0.2). 1 = every token (default); 0 = only the highest-entropy tokens.
     */
    topEntropyQuantile: z
      .number()
      .min(0)
      .max(1)
      .default(1)
      .describe('ρ: share of highest-entropy tokens that carry the policy gradient'),
    /**
     * DAPO's dynamic sampling: drop groups whose rewards are all equal (no signal) and draw more prompts until the
     * step has promptsPerStep × gradientAccumulation groups with a spread, or dynamicSamplingMaxDraws extra draws were
     * made. Default off.
     */
    dynamicSampling: z
      .boolean()
      .default(false)
      .describe('DAPO dynamic sampling: drop zero-spread groups, draw more prompts'),
    /** Extra rollout rounds per step that dynamic sampling may make, at most; each draws at most one step of prompts. */
    dynamicSamplingMaxDraws: z
      .number()
      .int()
      .min(0)
      .default(3)
      .describe('extra rollout rounds dynamic sampling may make per step'),
    /**
     * The rewards summed into the one GRPO optimises, each logged as rewards/<name>/mean and /std: 'domain' (the
     * environment's score), 'format' (1 for a valid final answer), or a module 'path/reward.ts[:export]' exporting
     * (completion, episode) => number (trainer/grpo/reward-functions.ts). Default: the domain's reward alone.
     */
    reward: z
      .array(z.string().min(1))
      .min(1)
      .default(['domain'])
      .describe('rewards summed for GRPO, repeatable: domain, format or module.ts[:export]'),
    /** Weight of each reward in `reward`, in order (TRL's reward_weights). Unset: 1 each. */
    rewardWeights: z.array(z.number()).optional().describe('weight of each --reward, in order (default 1 each)'),
    /**
     * How several rewards become advantages (TRL's multi_objective_aggregation): 'sum_then_normalize' sums the weighted
     * rewards, then centres and scales them per scaleRewards; 'normalize_then_sum' (GDPO) normalises each reward within
     * its group, (r_k − mean_k) / (std_k + 1e-4), sums them with their weights, then normalises the sum over the whole
     * step, (s − mean) / (std + 1e-4), whatever scaleRewards says (as TRL's code does).
     */
    multiObjectiveAggregation: z
      .enum(MULTI_OBJECTIVE_AGGREGATIONS)
      .default('sum_then_normalize')
      .describe(`how several rewards become advantages: ${MULTI_OBJECTIVE_AGGREGATIONS.join(' | ')}`),
    /**
     * Seconds one call of a reward module may take before the run stops with one line naming the module and the
     * episode (a promise that never settles would otherwise end the process silently, or hang it). The calls of a step
     * run concurrently, so this bounds the step's reward phase too. The one setting besides `steps` a --resume may change.
     */
    rewardTimeout: z
      .number()
      .positive()
      .max(86_400)
      .default(60)
      .describe('seconds one reward-module call may take before the run stops'),

    // ---- optimiser (AdamW on the LoRA weights only) -----------------------------------------------------------
    /**
     * Learning rate. The paper uses 1e-6 (full fine-tuning, 4B) and 1e-5 (LoRA, 27B); the built-in model's rank-16
     * adapters need far more, and how the default was chosen is in docs/training.md (the config table).
     */
    learningRate: z
      .number()
      .positive('learning rate must be positive')
      .max(1)
      .default(2e-4)
      .describe('AdamW learning rate'),
    adamBeta1: z.number().min(0).lt(1).default(0.9),
    adamBeta2: z.number().min(0).lt(1).default(0.999),
    adamEpsilon: z.number().positive().default(1e-8),
    /** Decoupled weight decay (AdamW). Hugging Face Trainer default: 0. */
    weightDecay: z.number().min(0).default(0).describe('AdamW decoupled weight decay'),
    /** Clip the global gradient norm to this value before each update; 0 = no clipping. Trainer default: 1. */
    maxGradNorm: z.number().min(0).default(1).describe('gradient-norm clipping, 0 = off'),
    /** Stop (exit 2) after this many consecutive steps with a non-finite loss; each such step skips its update. */
    maxNanSteps: positiveInt.default(3),

    // ---- engine -----------------------------------------------------------------------------------------------
    /**
     * What generates: rollouts, the reference and old-policy log-probs and the periodic evaluation (models/engine.ts).
     * 'tfjs' is the policy itself; 'ort' is ONNX Runtime (models/onnx/) for the built-in model and the Hugging Face
     * decoders, its adapters synced from the tfjs variables after every update, and its learner computing the LoRA
     * gradients (the tfjs variables stay what AdamW updates and checkpoints save). Unset: the model's default
     * (ort wherever ONNX Runtime has a graph for the model, models/engine.ts); `metrl train` records the
     * engine it chose in the run's config.json.
     */
    engine: z
      .enum(ENGINES, { error: `unknown engine; expected one of ${ENGINES.join(', ')}` })
      .optional()
      .describe(
        `inference engine for rollouts, log-probs and evaluation: ${ENGINES.join(' | ')} (ort: ONNX Runtime; ${DEFAULT_ENGINE_HELP})`,
      ),

    // ---- rollout servers (docs/rollout-servers.md) -----------------------------------------------------------------
    /**
     * Generate the rollouts on these servers (vLLM, SGLang, or `metrl serve --enable-lora`), several = replicas the
     * groups are spread over, while the learner, the reference and old log-probs and the evaluation stay here (TRL's
     * vllm_mode="server"). Unset: rollouts in-process. A --resume may name other servers.
     */
    rolloutServer: z
      .array(
        z
          .string()
          .regex(/^https?:\/\/[^\s/]+/, 'must be an http:// or https:// URL')
          .refine((url) => URL.canParse(url), 'not a URL (is the port at most 65535?)'),
      )
      .min(1)
      .optional()
      .describe(
        'rollout server URL, repeatable (vLLM, SGLang or metrl serve --enable-lora): rollouts there, learning here',
      ),
    /** The servers' dialect: vLLM's /v1/completions or SGLang's /generate. */
    rolloutApi: z
      .enum(ROLLOUT_APIS, { error: `unknown rollout API; expected one of ${ROLLOUT_APIS.join(', ')}` })
      .default('vllm')
      .describe(`dialect of --rollout-server: ${ROLLOUT_APIS.join(' | ')}`),
    /** Seconds a rollout request (connect, generate, answer) or an adapter load may take before the server is set aside. */
    rolloutTimeout: z
      .number()
      .positive()
      .max(86_400)
      .default(300)
      .describe('seconds a rollout server may take to answer before its groups go to another'),
    /** Folder the learner writes each adapter version to and the servers load it from (same path on every machine). Unset: RUN/rollout-adapters. */
    rolloutAdapterDir: z
      .string()
      .min(1)
      .optional()
      .describe('shared folder the servers load adapters from (default RUN/rollout-adapters)'),
    /**
     * TRL's AsyncGRPOTrainer: generation overlaps the update. The rounds of the next steps are submitted to the rollout
     * servers while this step's reference pass and update run (the replicas' client in a worker thread beside the
     * learner), each sampled by the adapter the learner holds when it is submitted, at most maxStaleness updates
     * behind the policy it trains (trainer/grpo/rollout-queue.ts). Needs --rollout-server. Default off.
     */
    async: z
      .boolean()
      .default(false)
      .describe("generate the next steps' rollouts on the servers while this step trains (needs --rollout-server)"),
    /**
     * K, TRL's max_staleness: a rollout may be sampled by an adapter at most K optimiser updates older than the policy
     * it trains; a round for step s is submitted once update s − 1 − K is done, so K is also how many steps ahead the
     * servers work. K = 0 is the synchronous run. With --async only; unset: 1 (TRL's default is 4; rounds run one
     * after another on the servers, so one round ahead already keeps them busy while the learner works).
     */
    maxStaleness: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('K: updates a rollout may lag the policy it trains, with --async (default 1)'),
    /** TRL's vllm_importance_sampling_correction: weight the loss by the learner/server probability ratio (with --rollout-server). */
    vllmImportanceSamplingCorrection: z
      .boolean()
      .default(true)
      .describe('importance-sampling correction of the server/learner log-prob mismatch (with --rollout-server)'),
    /** TRL's vllm_importance_sampling_mode: per token or per sequence, truncated (clamped) or masked (zeroed) outside the clip range. */
    vllmImportanceSamplingMode: z
      .enum(VLLM_IMPORTANCE_SAMPLING_MODES)
      .default('sequence_mask')
      .describe(`importance-sampling correction: ${VLLM_IMPORTANCE_SAMPLING_MODES.join(' | ')}`),
    /** TRL's vllm_importance_sampling_clip_max (default 3). */
    vllmImportanceSamplingClipMax: z
      .number()
      .positive()
      .default(3)
      .describe('upper bound of the importance-sampling ratio'),
    /** TRL's vllm_importance_sampling_clip_min (default none). */
    vllmImportanceSamplingClipMin: z
      .number()
      .min(0)
      .optional()
      .describe('lower bound of the importance-sampling ratio (default none)'),

    // ---- integrity (trainer/grpo/integrity.ts) -----------------------------------------------------------------
    /**
     * The run stops when, for one prompt of a step, the mean over its completions' tokens of |Δ log-prob| between the
     * sampler's recorded log-probs and the learner's (the old policy, before the step's update) exceeds this, in nats.
     * Two runs of one engine differ by rounding; a sampler that scores at another temperature, samples with other
     * weights, or returns other tokens than it scored gives far more. With --async the gap includes up to K updates of
     * learning (trainer/grpo/integrity.ts).
     */
    logpDifferenceThreshold: z
      .number()
      .positive()
      .default(0.5)
      .describe("stop when a prompt's mean |Δ log-prob| between sampler and learner exceeds this (nats)"),

    // ---- adapters ---------------------------------------------------------------------------------------------
    /** LoRA rank on the attention and MLP projections. Paper: 16. */
    loraRank: positiveInt.default(16).describe('LoRA rank r'),
    /** LoRA alpha; the update is scaled by alpha / rank. */
    loraAlpha: z.number().positive().default(32).describe('LoRA alpha'),
    /**
     * Projections that get adapters, PEFT's module names or their short forms (q, k, v, o, gate, up, down). Unset: the
     * architecture's default (Hugging Face models: every projection of the language model; the built-in model: all
     * but a gate, which it does not have).
     */
    loraTargets: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('LoRA target projections, repeatable or comma-separated (default: every projection)'),
  })
  .strict()
  // Combinations that cannot be checked key by key: one line each, naming the key to change.
  .superRefine((c, ctx) => {
    if (c.iterations !== c.numIterations) {
      ctx.addIssue({
        code: 'custom',
        path: ['numIterations'],
        message: `numIterations (${c.numIterations}) and its old name iterations (${c.iterations}) disagree; give one`,
      });
    }
    if (c.epsilonHigh !== undefined && c.epsilonHigh < c.epsilon) {
      ctx.addIssue({
        code: 'custom',
        path: ['epsilonHigh'],
        message: `epsilonHigh must be at least epsilon (${c.epsilon}): clip-higher only widens the upper bound`,
      });
    }
    if (
      c.importanceSamplingLevel === 'sequence' &&
      (c.lossType === 'vespo' || !SEQUENCE_LOSS_TYPES.includes(c.lossType))
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['importanceSamplingLevel'],
        message:
          c.lossType === 'vespo'
            ? `'sequence' with lossType 'vespo': vespo computes its own sequence-level weight from the token ratios; leave importanceSamplingLevel 'token'`
            : `'sequence' (GSPO) needs lossType 'grpo', 'sapo' or 'luspo': '${c.lossType}' sums per-token terms and so weights each sequence by its length instead of optimising GSPO's per-sequence objective`,
      });
    }
    if (c.lossType === 'luspo' && c.importanceSamplingLevel !== 'sequence') {
      ctx.addIssue({
        code: 'custom',
        path: ['lossType'],
        message: `'luspo' scales GSPO's sequence-level term by the length: it needs importanceSamplingLevel 'sequence'`,
      });
    }
    if (c.delta !== undefined && !CLIPPED_LOSS_TYPES.includes(c.lossType)) {
      ctx.addIssue({
        code: 'custom',
        path: ['delta'],
        message: `delta caps the unclipped branch of the clipped loss types (${CLIPPED_LOSS_TYPES.join(', ')}); '${c.lossType}' has none`,
      });
    }
    const epsilonHigh = c.epsilonHigh ?? c.epsilon;
    if (c.delta !== undefined && !(c.delta > 1 + epsilonHigh)) {
      ctx.addIssue({
        code: 'custom',
        path: ['delta'],
        message: `delta (${c.delta}) must exceed 1 + epsilonHigh (${1 + epsilonHigh}): below, it would cap positive-advantage ratios inside the clip range too`,
      });
    }
    if (c.entropyCoefMin > c.entropyCoefMax) {
      ctx.addIssue({
        code: 'custom',
        path: ['entropyCoefMin'],
        message: `entropyCoefMin (${c.entropyCoefMin}) exceeds entropyCoefMax (${c.entropyCoefMax})`,
      });
    }
    if (c.async && c.rolloutServer === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['async'],
        message:
          'generation overlaps the update on rollout servers: add --rollout-server URL (a metrl serve on 127.0.0.1 is a rollout worker beside the learner)',
      });
    }
    if (c.maxStaleness !== undefined && !c.async) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxStaleness'],
        message:
          'bounds how far rollouts run ahead of the update, which only --async does; add --async or leave it out',
      });
    }
    if (c.numGenerationsEval !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['numGenerationsEval'],
        message: `metrl's evaluation decodes greedily, one completion per test episode (no sampled evaluation groups as in TRL), so there is nothing for numGenerationsEval to size; leave it out`,
      });
    }
    if (c.rewardWeights !== undefined && c.rewardWeights.length !== c.reward.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['rewardWeights'],
        message: `${c.rewardWeights.length} weights for ${c.reward.length} rewards (${c.reward.join(', ')})`,
      });
    }
    const repeated = c.reward.find((r, i) => c.reward.indexOf(r) !== i);
    if (repeated !== undefined)
      ctx.addIssue({ code: 'custom', path: ['reward'], message: `${repeated} is given twice` });
  });

export type TrainConfig = z.infer<typeof TrainConfigSchema>;

/** Read a JSON config file (partial: missing keys take the defaults). */
export function readConfigFile(path: string): Record<string, unknown> {
  return readJson(path, z.record(z.string(), z.unknown()), {
    prefix: '--config: ',
    invalid: 'must hold a JSON object',
  });
}

/**
 * Merge file values and flag values (flags win) and validate; `context` prefixes the error message, and `flagOf`
 * names a key as the flag that set it (`rolloutServer` → `rollout-server`, an entry of a repeated flag as the flag).
 */
export function resolveConfig(
  fromFile: Record<string, unknown>,
  fromFlags: Record<string, unknown>,
  context = 'config: ',
  flagOf?: (key: string) => string,
): TrainConfig {
  const merged: Record<string, unknown> = { ...withOldNames(fromFile, context) };
  for (const [key, value] of Object.entries(withOldNames(fromFlags, context)))
    if (value !== undefined) merged[key] = value;
  const parsed = TrainConfigSchema.safeParse(merged);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const key = issue?.path[0];
  if (flagOf && typeof key === 'string' && Object.hasOwn(fromFlags, key)) {
    const value = issue.path.reduce<unknown>((v, p) => (v as Record<PropertyKey, unknown> | undefined)?.[p], merged);
    const bad = value === undefined ? '' : (JSON.stringify(value) ?? '');
    const got = bad !== '' && bad.length <= 80 ? ` (got ${bad})` : '';
    throw new UserError(`${context}${flagOf(key)}: ${issue.message}${got}`);
  }
  return parseOrFail(TrainConfigSchema, merged, context);
}

/** K: how many optimiser updates a rollout may lag the policy it trains (0 without --async). */
export function staleRolloutLimit(config: TrainConfig): number {
  return config.async ? (config.maxStaleness ?? 1) : 0;
}

/** Completions per optimiser update. */
export function completionsPerStep(config: TrainConfig): number {
  return config.promptsPerStep * config.gradientAccumulation * config.groupSize;
}

/**
 * Values under the names and forms configs had before TRL's names, in today's form: `iterations` and `numIterations`
 * filled from each other, lossType 'dr-grpo' as 'dr_grpo', scaleRewards true / false as 'group' / 'none'. Applied to
 * the file and to the flags separately, so a flag under either name overrides the file's value under both.
 */
function withOldNames(values: Record<string, unknown>, context = ''): Record<string, unknown> {
  const out = { ...values };
  const { iterations, numIterations } = out;
  if (iterations !== undefined && numIterations !== undefined && iterations !== numIterations) {
    throw new UserError(
      `${context}numIterations (${String(numIterations)}) and its old name iterations (${String(iterations)}) disagree; give one`,
    );
  }
  if (iterations !== undefined && numIterations === undefined) out.numIterations = iterations;
  if (numIterations !== undefined && iterations === undefined) out.iterations = numIterations;
  if (out.lossType === 'dr-grpo') out.lossType = 'dr_grpo';
  if (out.scaleRewards === true) out.scaleRewards = 'group';
  if (out.scaleRewards === false) out.scaleRewards = 'none';
  return out;
}
