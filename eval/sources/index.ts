// Choosing the model source from the command line: a checkpoint folder, a baseline, a model on Hugging Face
// Inference Providers, or a model behind any OpenAI-compatible endpoint. Keys are read from the environment here and
// go nowhere else: config.json records only the variable's name.
import { PROVIDERS_OR_POLICIES } from '@huggingface/inference';
import { UserError } from '../../core/errors.ts';
import { registerSecret } from '../../core/secrets.ts';
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { queryToChat, type CompactTemplate } from '../query-to-chat.ts';
import type { ModelDescription } from '../run-config.ts';
import type { ModelSource, SamplingSettings } from '../types.ts';
import { BASELINES, type BaselineName } from '../../envs/baseline.ts';
import { baselineSource } from './baseline.ts';
import { hostedSource } from './hosted.ts';

export interface SourceSpec {
  checkpoint?: string;
  base?: string;
  model?: string;
  provider?: string;
  endpoint?: string;
  apiKeyEnv?: string;
}

const DEFAULT_PROVIDER_KEY_ENV = 'HF_TOKEN';

/** What config.json records about the model (no secrets). */
export function describeModel(spec: SourceSpec): ModelDescription {
  if (spec.checkpoint !== undefined) {
    if (spec.model !== undefined) throw new UserError('give either --checkpoint or --model, not both');
    if (spec.provider !== undefined || spec.endpoint !== undefined)
      throw new UserError('--provider and --endpoint apply to --model, not to --checkpoint');
    return { kind: 'checkpoint', path: spec.checkpoint, ...(spec.base !== undefined ? { base: spec.base } : {}) };
  }
  if (spec.base !== undefined) throw new UserError('--base applies to --checkpoint');
  if (spec.model === undefined)
    throw new UserError(
      'name a model: --checkpoint DIR, --model ID --provider NAME, --model ID --endpoint URL, or --model baseline:game-start|baseline:random',
    );
  if (spec.model.startsWith('baseline:')) {
    const name = spec.model.slice('baseline:'.length);
    if (!(BASELINES as readonly string[]).includes(name))
      throw new UserError(
        `--model: unknown baseline '${name}' (choose from ${BASELINES.map((b) => `baseline:${b}`).join(', ')})`,
      );
    if (spec.provider !== undefined || spec.endpoint !== undefined)
      throw new UserError('baselines run locally: drop --provider/--endpoint');
    return { kind: 'baseline', name };
  }
  if (spec.provider !== undefined && spec.endpoint !== undefined)
    throw new UserError('give either --provider or --endpoint, not both');
  if (spec.endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(spec.endpoint);
    } catch {
      throw new UserError(`--endpoint: not a URL: ${spec.endpoint}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UserError(`--endpoint: needs http:// or https://, got ${url.protocol}`);
    if (url.username || url.password)
      throw new UserError('--endpoint: put the key in an environment variable (--api-key-env), not in the URL');
    return {
      kind: 'hosted',
      id: spec.model,
      endpoint: spec.endpoint,
      ...(spec.apiKeyEnv ? { api_key_env: spec.apiKeyEnv } : {}),
    };
  }
  const provider = spec.provider ?? 'auto';
  if (!(PROVIDERS_OR_POLICIES as readonly string[]).includes(provider)) {
    throw new UserError(
      `--provider: unknown provider '${provider}' (choose from ${PROVIDERS_OR_POLICIES.join(', ')}; or --endpoint URL for any OpenAI-compatible server)`,
    );
  }
  return { kind: 'hosted', id: spec.model, provider, api_key_env: spec.apiKeyEnv ?? DEFAULT_PROVIDER_KEY_ENV };
}

/** The key, from the environment variable the user named; its absence is a configuration error (exit 2). */
function readKey(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new UserError(`--api-key-env: '${name}' is not an environment variable name`);
  const value = process.env[name];
  if (value === undefined || value.trim() === '')
    throw new UserError(`the environment variable ${name} is not set (it should hold the API key)`);
  // From here on the key is hidden from everything stored or printed (an upstream may echo it in its error text).
  registerSecret(value.trim());
  registerSecret(value);
  return value.trim();
}

export interface OpenOptions {
  envs: Map<Domain, Env>;
  sampling: SamplingSettings;
  seed: number;
  compact: () => Promise<CompactTemplate>;
  /** Loader for the in-process checkpoint source (kept lazy: it pulls in tfjs). */
  openCheckpoint: (path: string, base?: string) => Promise<ModelSource>;
}

export async function openSource(model: ModelDescription, options: OpenOptions): Promise<ModelSource> {
  if (model.kind === 'baseline') return baselineSource(model.name as BaselineName, options.seed);
  if (model.kind === 'checkpoint') return options.openCheckpoint(model.path, model.base);
  const accessToken = readKey(model.api_key_env);
  return hostedSource({
    model: model.id,
    ...(model.endpoint ? { endpointUrl: model.endpoint } : { provider: model.provider }),
    ...(accessToken ? { accessToken } : {}),
    sampling: options.sampling,
    toChat: (query) => queryToChat(options.envs.get(query.episode.domain)!, query, options.compact),
  });
}
