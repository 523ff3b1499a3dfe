// What a rollout server's answer must be before the learner trusts it: JSON in the dialect's shape (vllm-protocol.ts,
// sglang-protocol.ts), n choices, the prompt tokenised as metrl tokenised it (where the server says how it did), and
// every choice within what was asked: token ids inside the model's vocabulary, no more tokens than max_tokens, one
// finite log-prob ≤ 0 per token. Anything else is a UserError naming the server and what is wrong (the run stops
// after its last checkpoint, which --resume continues):
// ids past the vocabulary reach the learner as an internal error, positive log-probs as a wrong importance ratio, and
// a server that ignores max_tokens would read as a prompt that does not fit. An answer that names another model than
// the adapter asked for comes from a replica that lost it (restarted): ServerDown, so that the replica is set aside
// for the round and given the adapter again. How big an answer may be, for the size bound of the read
// (http-json.ts), is here too.
import { UserError } from '../../core/errors.ts';
import type { Completion } from '../types.ts';
import { ServerDown } from './http-json.ts';
import { parseSglangGenerate } from './sglang-protocol.ts';
import { parseVllmChat, parseVllmCompletions } from './vllm-protocol.ts';

/** What the request asked for, and what the answer is checked against. */
export interface AnswerExpectation {
  /** The replica (its root URL) and the route, for the message. */
  server: string;
  url: string;
  api: 'vllm' | 'sglang';
  /** vLLM's /v1/chat/completions (an image prompt) rather than /v1/completions. */
  chat: boolean;
  group: number;
  maxTokens: number;
  vocabSize: number;
  /** The prompt's token ids as metrl made them. */
  prompt: number[];
  /** The `model` the request named (vLLM), which the answer must name too; null: not checked. */
  model: string | null;
}

/** Log-probs a hair above 0 are rounding (log-softmax of the most likely token), not a broken server. */
const LOGPROB_SLACK = 1e-4;

/** A replica without the runtime LoRA routes (FastAPI's {"detail": "Not Found"}, metrl serve's "no route"). */
export function noLoraRoute(server: string, route: string): UserError {
  return new UserError(
    `rollout server ${server}: no ${route}, LoRA is not enabled (start vLLM with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, SGLang with --enable-lora, metrl serve with --enable-lora)`,
  );
}

/** Bytes an answer to a group may take: its JSON per generated token, generously, plus room for the prompt's ids. */
export function answerBytes(group: number, maxTokens: number): number {
  return 1024 * 1024 + group * maxTokens * 1024;
}

/** The group's completions from an answer's text, checked as the header says; a UserError otherwise. */
export function readRolloutAnswer(text: string, expect: AnswerExpectation): Completion[] {
  const where = `rollout server ${expect.server}`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserError(`${where}: the answer to ${expect.url} is not JSON`);
  }
  const vllm = expect.api === 'vllm';
  const parsed = vllm
    ? expect.chat
      ? parseVllmChat(json, expect.group)
      : parseVllmCompletions(json, expect.group)
    : parseSglangGenerate(json, expect.group);
  if (typeof parsed === 'string')
    throw new UserError(`${where}: the answer to ${expect.url} does not fit the ${expect.api} protocol: ${parsed}`);
  const completions = Array.isArray(parsed) ? parsed : parsed.completions;
  const differs = Array.isArray(parsed)
    ? null
    : 'promptTokenIds' in parsed
      ? tokenDifference(parsed.promptTokenIds, expect.prompt)
      : countDifference(parsed.promptTokens, expect.prompt);
  if (differs !== null) {
    throw new UserError(
      `${where} tokenised the prompt otherwise than metrl (${differs}): the learner would score other tokens than the server sampled after; serve the same checkpoint, chat template and image processor as --checkpoint`,
    );
  }
  const model = vllm ? (json as { model?: unknown }).model : undefined;
  if (expect.model !== null && typeof model === 'string' && model !== expect.model)
    throw new ServerDown(
      expect.server,
      `answered as model '${model}', not the adapter '${expect.model}' it had loaded (restarted?)`,
    );
  const wrong = completions.map((c, i) => completionProblem(c, i, expect)).find((p) => p !== null);
  if (wrong)
    throw new UserError(
      `${where}: the answer to ${expect.url} cannot be trained on: ${wrong}; serve the same checkpoint as --checkpoint, with a server that honours max_tokens`,
    );
  return completions;
}

/** What is wrong with one choice (null: nothing). */
function completionProblem(c: Completion, i: number, expect: AnswerExpectation): string | null {
  if (c.tokens.length > expect.maxTokens)
    return `choice ${i} has ${c.tokens.length} tokens, more than the max_tokens ${expect.maxTokens} asked for`;
  const bad = c.tokens.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= expect.vocabSize);
  if (bad >= 0)
    return `choice ${i}, token ${bad}: id ${c.tokens[bad]} is outside the model's vocabulary (0 to ${expect.vocabSize - 1})`;
  const lp = c.logProbs.findIndex((x) => !Number.isFinite(x) || x > LOGPROB_SLACK);
  if (lp >= 0)
    return `choice ${i}, token ${lp}: log-prob ${Number(c.logProbs[lp].toPrecision(6))} (a log-prob is finite and at most 0)`;
  return null;
}

/** Where the server's prompt token ids differ from metrl's (null: equal, or not returned). */
function tokenDifference(server: number[] | null, ours: number[]): string | null {
  if (server === null) return null;
  const at = server.findIndex((t, i) => t !== ours[i]);
  if (at < 0 && server.length === ours.length) return null;
  const i = at < 0 ? Math.min(server.length, ours.length) : at;
  return `prompt_token_ids: ${server.length} tokens against metrl's ${ours.length}, first difference at position ${i}`;
}

/** SGLang's prompt length against metrl's (null: equal, or not returned). */
function countDifference(server: number | null, ours: number[]): string | null {
  return server === null || server === ours.length
    ? null
    : `meta_info.prompt_tokens: ${server} tokens against metrl's ${ours.length}`;
}
