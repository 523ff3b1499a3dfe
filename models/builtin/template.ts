// The built-in model's own compact prompt layouts (chat models keep the reference wording from envs/*). Two layouts:
//
// trace (environments with traceStates: chess, shell) — the model writes every intermediate state, then the answer:
//   prompt       <domain>\n<initial state>\nA: <action 1>\n … <label T>: <action T>\ntrace\nstart -> <state 0>\n
//   completion   A: <action 1> -> <state 1>\n … <label T>: <action T> -> <state T>\nFINAL ANSWER: <target>
// answer (the other environments) — one-shot:
//   prompt       <domain>\n<initial state>\n<action 1>\n … <action T>\n[<question>\n]FINAL ANSWER:
//   completion   <target>
//
// An image action is its patch tokens in place of the text; in the trace the model writes what it read. Why a trace: a
// small model cannot apply five moves in one forward pass, but it can apply one move at a time, five times; each trace
// line is the one-step skill the base is pretrained on. Two choices make that step the same on every line:
// - Actions carry letter labels (A, C, D, …: capitals that never occur in a FEN, a UCI move or "x swap y"), so that
//   the model finds action i by a character that means nothing else. With digit labels ("3: 1 swap 3") the label
//   was one more digit among the cups and squares, and a shell-only stage learned the lookup but not the swap rule
//   (trace states at chance even when the true trace was given); with letters the same stage applied it on lines 2-5.
// - The prompt restates the initial state as the trace's line 0 (`start -> <state 0>`, in the trace's state form), so
//   that line 1 reads its previous state from the line above it, as every later line does, instead of from the top
//   of the prompt at a distance that grows with the number of actions.
// A third choice lives in models/builtin/positions.ts: a base with grid positions puts trace line i on the RoPE positions of
// the prompt's line for action i, so that copying the action is a fixed-offset lookup, not a search for its label.
//
// The perception probe reads one image (<domain>\nread\n<image>\nFINAL ANSWER: ) or one labelled image among several:
//   prompt       <domain>\nread\nA: <image>\n … <label n>: <image>\n<label j>:
//   completion   <text of action j>
import sharp from 'sharp';
import type { Env } from '../../envs/env.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';
import { pngDataUrl, type ChatContentPart, type ChatMessage } from '../../core/chat.ts';
import { encodePng } from '../../core/image.ts';
import { UserError } from '../../core/errors.ts';
import type { ModelInput, ModelInputPart } from '../types.ts';
import { TRACE_CUE } from './trace-cue.ts';

export const ANSWER_CUE = 'FINAL ANSWER: ';
export { TRACE_CUE };
/** Between an action and the state it leads to, in a trace line. */
const STEP_ARROW = ' -> ';
/** The trace's line 0, which the prompt gives: the state before the first action. */
const START_LINE = 'start';
/** Label letters: capitals absent from FEN (KQRBNP), UCI moves and shell swaps. */
const LABEL_LETTERS = 'ACDEFGHIJLMOSTUVWXYZ';

/** Renders action `index` of an episode at the model's image size (an Env's renderAction with imageSizes.model). */
export type RenderImage = (episode: Episode, index: number) => RawImage;

/** What the template needs of an environment: whether (and how) it traces states, and how it draws actions. */
export type TemplateEnv = Pick<Env, 'traceStates' | 'traceStart' | 'renderAction' | 'imageSizes'>;

/** Does the built-in model answer this environment's episodes with a trace? */
function usesTrace(env: Pick<Env, 'traceStates'>): boolean {
  return typeof env.traceStates === 'function';
}

/** The label of action `index` (0-based): A, C, D, … (LABEL_LETTERS), then two letters from the 21st action on. */
export function actionLabel(index: number): string {
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`no label for action index ${index}`);
  const n = LABEL_LETTERS.length;
  return index < n ? LABEL_LETTERS[index] : `${actionLabel(Math.floor(index / n) - 1)}${LABEL_LETTERS[index % n]}`;
}

/** The trace's line 0: the initial state in the form trace lines write states. */
function traceStartLine(env: Pick<Env, 'traceStart'>, episode: Episode): string {
  return `${START_LINE}${STEP_ARROW}${env.traceStart ? env.traceStart(episode) : episode.initialState}\n`;
}

/** Append a part, merging adjacent text. */
function push(parts: ModelInputPart[], part: ModelInputPart): void {
  const last = parts[parts.length - 1];
  if (part.type === 'text' && last?.type === 'text') last.text += part.text;
  else parts.push(part.type === 'text' ? { type: 'text', text: part.text } : part);
}

function modelSizeRenderer(env: TemplateEnv): RenderImage {
  return (episode, index) => env.renderAction(episode, index, env.imageSizes.model);
}

export function episodeToModelInput(
  env: TemplateEnv,
  episode: Episode,
  renderImage: RenderImage = modelSizeRenderer(env),
): ModelInput {
  const traced = usesTrace(env);
  const parts: ModelInputPart[] = [];
  push(parts, { type: 'text', text: `${episode.domain}\n${episode.initialState}\n` });
  episode.actions.forEach((action, i) => {
    if (traced) push(parts, { type: 'text', text: `${actionLabel(i)}: ` });
    if (action.modality === 'image') push(parts, { type: 'image', image: renderImage(episode, i) });
    else push(parts, { type: 'text', text: action.text });
    push(parts, { type: 'text', text: '\n' });
  });
  if (episode.question !== undefined) push(parts, { type: 'text', text: `${episode.question}\n` });
  push(parts, { type: 'text', text: traced ? TRACE_CUE + traceStartLine(env, episode) : ANSWER_CUE });
  return parts;
}

/**
 * The perception probe. One image: `<domain>\nread\n<image>\nFINAL ANSWER: ` (the single-image probe of the paper,
 * and of the first-stage base). Several images of one episode, labelled as in the trace, and the one to read (`ask`,
 * 0-based): `<domain>\nread\nA: <image>\n … <label j>: ` — finding an image by its label is what an image action in
 * a trace needs.
 */
export function perceptionToModelInput(domain: string, images: RawImage[], ask: number): ModelInput {
  if (ask < 0 || ask >= images.length) throw new RangeError(`perception probe: no image ${ask} of ${images.length}`);
  const parts: ModelInputPart[] = [];
  push(parts, { type: 'text', text: `${domain}\nread\n` });
  if (images.length === 1) {
    push(parts, { type: 'image', image: images[0] });
    push(parts, { type: 'text', text: `\n${ANSWER_CUE}` });
    return parts;
  }
  images.forEach((image, i) => {
    push(parts, { type: 'text', text: `${actionLabel(i)}: ` });
    push(parts, { type: 'image', image });
    push(parts, { type: 'text', text: '\n' });
  });
  push(parts, { type: 'text', text: `${actionLabel(ask)}: ` });
  return parts;
}

/** What the model should write after the prompt (EOS is added by the policy's encodeTarget): the trace, or the answer. */
export function targetText(env: Pick<Env, 'traceStates'>, episode: Episode): string {
  if (!env.traceStates) return episode.target;
  const states = env.traceStates(episode);
  const lines = episode.actions.map((action, i) => `${actionLabel(i)}: ${action.text}${STEP_ARROW}${states[i]}\n`);
  return `${lines.join('')}${ANSWER_CUE}${episode.target}`;
}

/** One line of a written trace: `<label>: <action> -> <state>`. */
export interface TraceLine {
  label: string;
  action: string;
  state: string;
}

/**
 * The lines of a trace-layout completion up to its answer marker (or its end), read back in the layout targetText
 * writes. A line that does not have that shape ends the trace: what follows it is not a trace line the model meant.
 */
export function parseTraceLines(completionText: string): TraceLine[] {
  const at = completionText.indexOf(ANSWER_CUE.trim());
  const body = at < 0 ? completionText : completionText.slice(0, at);
  const lines: TraceLine[] = [];
  for (const line of body.split('\n')) {
    const labelEnd = line.indexOf(': ');
    const arrow = line.lastIndexOf(STEP_ARROW);
    if (labelEnd <= 0 || arrow < labelEnd + 2) break;
    lines.push({
      label: line.slice(0, labelEnd),
      action: line.slice(labelEnd + 2, arrow),
      state: line.slice(arrow + STEP_ARROW.length),
    });
  }
  return lines;
}

/**
 * The response a reward function scores. Answer layout: the prompt's marker followed by the completion. Trace layout:
 * the completion from its last answer marker on, or nothing when it never wrote one, so that a trace cut off by the
 * token limit scores as invalid instead of earning credit for an intermediate state.
 */
export function responseForScoring(env: Pick<Env, 'traceStates'>, completionText: string): string {
  if (!usesTrace(env)) return ANSWER_CUE + completionText;
  const at = completionText.lastIndexOf(ANSWER_CUE.trim());
  return at < 0 ? '' : completionText.slice(at);
}

/** Does a text end the way one of the model's own prompts does (answer marker, trace cue, perception label)? */
function endsWithCue(text: string): boolean {
  return (
    text.endsWith(ANSWER_CUE) || text.endsWith(TRACE_CUE) || TRACE_START_END.test(text) || /\n[A-Z]+: $/.test(text)
  );
}

/** The end of a trace-layout prompt: the trace cue, then line 0. */
const TRACE_START_END = new RegExp(`\\n${TRACE_CUE}${START_LINE}${STEP_ARROW}[^\\n]*\\n$`);

/**
 * Decode a data: URL image (PNG, JPEG, WebP…) to RGB at size × size. With `exactSize` an image of another size is a
 * UserError: the built-in model was trained on its own renderings at `size` pixels and misreads resized pictures.
 */
async function decodeDataUrlImage(url: string, size: number, exactSize = false): Promise<RawImage> {
  const match = /^data:image\/[a-z+.-]+;base64,(.*)$/is.exec(url);
  if (!match) throw new UserError(`image_url must be a base64 data: URL (got ${url.slice(0, 40)}…)`);
  const bytes = Buffer.from(match[1], 'base64');
  if (exactSize) {
    const meta = await sharp(bytes)
      .metadata()
      .catch(() => null);
    if (meta && (meta.width !== size || meta.height !== size)) {
      throw new UserError(
        `image_url is ${meta.width}×${meta.height} pixels; the built-in model reads only metrl's own ${size}×${size} renderings of an action (metrl generate --image-size ${size}, or metrl evaluate --prompt compact), and misreads resized pictures`,
      );
    }
  }
  let decoded: { data: Buffer; info: { width: number; height: number } };
  try {
    decoded = await sharp(bytes)
      .removeAlpha()
      .resize(size, size, { fit: 'fill' })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw new UserError(
      `image_url could not be decoded as an image (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  const { data, info } = decoded;
  return {
    width: info.width,
    height: info.height,
    channels: 3,
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  };
}

/**
 * A ModelInput of this template as one user message: its texts as text parts, its images as PNG data URLs at their
 * own size (lossless), for a server that formats the prompt itself (models/remote/). chatToModelInput reads it back
 * to the same input: one message adds no separator, adjacent texts merge again, and the prompt already ends with a cue.
 */
export async function modelInputToChat(input: ModelInput): Promise<ChatMessage[]> {
  const content: ChatContentPart[] = [];
  for (const part of input) {
    content.push(
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : { type: 'image_url', image_url: { url: pngDataUrl(await encodePng(part.image)) } },
    );
  }
  return [{ role: 'user', content }];
}

/**
 * Reduce OpenAI-format chat messages to a ModelInput for the built-in model (`metrl serve`): message texts joined
 * by newlines, images decoded from data URLs and resized to imageSize × imageSize. With `answerCue` the input ends
 * with a cue of the model's own template: the answer marker is appended unless the text already ends with it or with
 * the trace cue (a compact-layout prompt sent through `metrl serve`).
 */
export async function chatToModelInput(
  messages: ChatMessage[],
  options: { imageSize?: number; answerCue?: boolean; exactSize?: boolean } = {},
): Promise<ModelInput> {
  const size = options.imageSize ?? 64;
  const ordered: ({ type: 'text'; text: string } | { type: 'image'; url: string })[] = [];
  messages.forEach((m, i) => {
    if (i > 0) ordered.push({ type: 'text', text: '\n' });
    if (typeof m.content === 'string') ordered.push({ type: 'text', text: m.content });
    else
      for (const c of m.content)
        ordered.push(c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image', url: c.image_url.url });
  });
  const out: ModelInputPart[] = [];
  for (const p of ordered) {
    if (p.type === 'text') push(out, p);
    else push(out, { type: 'image', image: await decodeDataUrlImage(p.url, size, options.exactSize) });
  }
  const lastText = out[out.length - 1]?.type === 'text' ? (out[out.length - 1] as { text: string }).text : '';
  if (options.answerCue && !endsWithCue(lastText)) {
    push(out, { type: 'text', text: ANSWER_CUE });
  }
  return out;
}
