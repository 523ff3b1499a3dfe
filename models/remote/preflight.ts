// Every --rollout-server checked before a training run writes anything, in seconds: something answers at the URL
// (GET /v1/models, which vLLM, SGLang and `metrl serve` all have), it serves a model (the first id listed), it has the
// runtime LoRA route the run loads its adapters through (an empty load request: a 404 means no such route), and a
// two-token probe through the dialect's generation route answers with token ids and log-probs the learner can take
// (rollout-answer.ts: ids in the vocabulary, log-probs ≤ 0, no more tokens than asked for). A --rollout-adapter-dir
// that is given must be a folder the run can write (made on first use). Each failure is one line naming the server
// and the fix; the servers are checked at once, and the first failing one in the order given is reported. What this
// cannot check before anything is written: that the servers can read the adapter folder (no adapter exists yet) and
// how they tokenise an image prompt; both are checked at the first rollout, after the step-0 checkpoint.
import { existsSync, mkdtempSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { AnswerTooLarge, errorMessage, getJson, postJson, ServerDown } from './http-json.ts';
import { answerBytes, noLoraRoute, readRolloutAnswer } from './rollout-answer.ts';
import { serverRoot, type RolloutApi } from './rollout-pool.ts';
import { sglangGenerateRequest } from './sglang-protocol.ts';
import { vllmCompletionRequest } from './vllm-protocol.ts';

export interface PreflightOptions {
  urls: readonly string[];
  api: RolloutApi;
  /** Token ids the model has. */
  vocabSize: number;
  /** A text prompt's token ids as metrl encodes them: what the probe generates after. */
  probe: number[];
  /** --rollout-adapter-dir, when given. */
  adapterDir?: string;
}

/** Seconds each check may take: a listening server answers these at once. */
const CHECK_MS = 10_000;
/** The probe generates: a busy server may take longer than to list its models. */
const PROBE_MS = 30_000;
const PROBE_TOKENS = 2;

export async function preflightRolloutServers(options: PreflightOptions): Promise<void> {
  if (options.adapterDir !== undefined) checkWritableFolder(options.adapterDir);
  const results = await Promise.allSettled(options.urls.map((url) => checkServer(url, options)));
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

async function checkServer(url: string, options: PreflightOptions): Promise<void> {
  const root = serverRoot(url);
  const flag = `--rollout-server ${url}`;
  const ask = async <T>(what: Promise<T>): Promise<T> =>
    what.catch((error: unknown) => {
      if (error instanceof AnswerTooLarge) throw new UserError(`${flag}: ${error.message}`);
      if (!(error instanceof ServerDown)) throw error;
      const reason = error.message.slice(error.url.length + 2);
      if (reason === 'bad port')
        throw new UserError(
          `${flag}: port ${new URL(root).port} is one that fetch refuses to connect to (a port the Fetch standard blocks); run the server on another port`,
        );
      throw new UserError(
        `${flag}: nothing answers there (${reason}); start the server, or give the address it listens on`,
      );
    });
  const notRollout = `is it vLLM, SGLang or metrl serve (--rollout-api ${options.api})?`;

  const models = await ask(getJson(`${root}/v1/models`, CHECK_MS));
  if (models.status !== 200)
    throw new UserError(
      `${flag}: GET /v1/models answered status ${models.status} (${errorMessage(models)}); ${notRollout}`,
    );
  const served = servedModel(models.text);
  if (served === null) throw new UserError(`${flag}: GET /v1/models lists no model; ${notRollout}`);

  const vllm = options.api === 'vllm';
  const route = vllm ? '/v1/load_lora_adapter' : '/load_lora_adapter';
  const load = await ask(postJson(root + route, {}, CHECK_MS));
  if (load.status === 404 && /"detail":\s*"Not Found"|no route/.test(load.text)) throw noLoraRoute(root, route);

  const sampling = { temperature: 0, topP: 1, maxNewTokens: PROBE_TOKENS };
  const path = vllm ? '/v1/completions' : '/generate';
  let body = vllm
    ? vllmCompletionRequest(served, options.probe, 1, sampling, 0)
    : sglangGenerateRequest('', options.probe, 1, sampling, 0);
  if (!vllm) body = Object.fromEntries(Object.entries(body).filter(([key]) => key !== 'lora_path'));
  const probe = await ask(postJson(root + path, body, PROBE_MS, answerBytes(1, PROBE_TOKENS)));
  if (probe.status !== 200)
    throw new UserError(
      `${flag}: a ${PROBE_TOKENS}-token probe on ${path} (model '${served}') was refused with status ${probe.status}: ${errorMessage(probe)}`,
    );
  readRolloutAnswer(probe.text, {
    server: root,
    url: root + path,
    api: options.api,
    chat: false,
    group: 1,
    maxTokens: PROBE_TOKENS,
    vocabSize: options.vocabSize,
    prompt: options.probe,
    model: null,
  });
}

/** The first model id of an OpenAI model list (null: none, or not a list). */
function servedModel(text: string): string | null {
  try {
    const json = JSON.parse(text) as { data?: { id?: unknown }[] };
    const id = Array.isArray(json.data) ? json.data[0]?.id : undefined;
    return typeof id === 'string' && id !== '' ? id : null;
  } catch {
    return null;
  }
}

/**
 * A folder that is there and writable, or can be made below the nearest existing folder above it: an empty folder is
 * made there and removed at once (permission bits alone say nothing of a read-only file system, or to root).
 */
function checkWritableFolder(dir: string): void {
  const flag = `--rollout-adapter-dir ${dir}`;
  let at = resolve(dir);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  if (!statSync(at).isDirectory())
    throw new UserError(`${flag}: ${at} is a file, not a folder; give a folder the servers can read`);
  try {
    rmdirSync(mkdtempSync(join(at, '.metrl-write-check-')));
  } catch (error) {
    throw new UserError(
      `${flag}: cannot write in ${at} (${(error as NodeJS.ErrnoException).code ?? 'not writable'}); give a folder this run can write and the servers can read`,
    );
  }
}
