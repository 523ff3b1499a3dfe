// A checkpoint's own Jinja chat template, rendered with @huggingface/jinja as transformers' apply_chat_template renders
// it. The template is found where transformers 4.57 looks: `chat_template.jinja` beside the tokenizer
// (it wins over the others), the processor's `chat_template.json`, then `chat_template` in tokenizer_config.json,
// which may be one string or a list of named templates ({name, template}; "default" is used unless another is asked
// for). The variables are those transformers passes: messages, add_generation_prompt, tools and documents (none), the
// tokenizer's special tokens (bos_token, eos_token, …), plus any extra the caller gives; raise_exception and
// strftime_now come with the library. A template that does not parse or fails to render is a UserError naming its
// file and the Jinja error, on one line. A template is code from a checkpoint folder, so a render is bounded: at most
// RENDER_MS of work, no value (the output included) longer than MAX_RENDER_CHARS, and range() of at most MAX_RANGE
// items (the library's builds the whole list first: range(1e8) alone filled the memory); past a bound the render
// stops with a UserError saying which. An empty rendered prompt is refused by the caller (chat-prompt.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { Interpreter, Template } from '@huggingface/jinja';
import { UserError, describeZodError } from '../../core/errors.ts';
import { TOKENIZER_CONFIG, type HfTokenizer } from './tokenizer.ts';

/** A real template renders a long conversation in milliseconds. */
const RENDER_MS = 2_000;
/** Far beyond any context: 4 M characters are about a million tokens. */
const MAX_RENDER_CHARS = 4_000_000;
const MAX_RANGE = 100_000;

/** The bounds of the render under way (renders are synchronous: one at a time). */
let budget: { deadline: number } | null = null;

class RenderBound extends Error {}

/** A runtime value of the library: what its functions take and give. */
type RuntimeValue = { value: unknown };

/**
 * range()'s list length from its arguments (start, stop, step as Jinja's), refused past MAX_RANGE before the library
 * builds the list.
 */
function checkRange(args: RuntimeValue[]): void {
  const [a, b, c] = args.map((x) => Number(x.value));
  const [from, to] = args.length < 2 ? [0, a] : [a, b];
  const step = args.length < 3 ? 1 : c;
  const count = step === 0 ? 0 : Math.max(0, Math.ceil((to - from) / step));
  if (!Number.isFinite(count) || count > MAX_RANGE)
    throw new RenderBound(`range() of ${count} items (at most ${MAX_RANGE.toLocaleString('en-US')})`);
}

// @huggingface/jinja builds its interpreter inside Template.render, so the bounds are put on the interpreter's one
// dispatch method, which every statement and expression goes through; they do nothing outside a bounded render. At the
// program's start the global range() (however the template names it later) is wrapped with checkRange.
const evaluate = Interpreter.prototype.evaluate;
Interpreter.prototype.evaluate = function (this: Interpreter, ...args: Parameters<Interpreter['evaluate']>) {
  const [statement, environment] = args;
  if (budget !== null) {
    if (performance.now() > budget.deadline) throw new RenderBound(`it ran for more than ${RENDER_MS / 1000} s`);
    if ((statement as { type?: string } | undefined)?.type === 'Program') {
      const range = (environment as unknown as { variables: Map<string, RuntimeValue> }).variables.get('range');
      const call = range?.value;
      if (typeof call === 'function' && range)
        range.value = (params: RuntimeValue[], scope: unknown) => {
          checkRange(params);
          return call(params, scope);
        };
    }
  }
  const value = evaluate.apply(this, args);
  const v = (value as RuntimeValue).value;
  if (budget !== null && typeof v === 'string' && v.length > MAX_RENDER_CHARS)
    throw new RenderBound(`it wrote more than ${MAX_RENDER_CHARS.toLocaleString('en-US')} characters`);
  return value;
};

const CHAT_TEMPLATE_JINJA = 'chat_template.jinja';
const CHAT_TEMPLATE_JSON = 'chat_template.json';

/** One content part of a chat-template message: what transformers' multimodal templates iterate over. */
export type ChatTemplatePart = { type: 'text'; text: string } | { type: 'image' };

/** A message as chat templates read it: content as plain text (text-only templates) or a list of parts. */
export interface ChatTemplateMessage {
  role: string;
  content: string | ChatTemplatePart[];
}

export interface RenderOptions {
  /** Append the cue that opens the assistant's turn ("Assistant:", "<start_of_turn>model\n"). */
  addGenerationPrompt?: boolean;
  /** Further template variables (transformers' **template_kwargs), e.g. enable_thinking. */
  variables?: Record<string, unknown>;
}

/** Where a template came from and its text. */
export interface ChatTemplateSource {
  file: string;
  template: string;
}

const namedTemplatesSchema = z.array(z.object({ name: z.string(), template: z.string() }).loose());
const templateFieldSchema = z.union([z.string(), namedTemplatesSchema]).nullish();
/** tokenizer_config.json and chat_template.json both keep the template under `chat_template`. */
const templateHolderSchema = z.object({ chat_template: templateFieldSchema }).loose();

function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

function readTemplateField(path: string): z.infer<typeof templateFieldSchema> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UserError(`${path}: not valid JSON (${oneLine((error as Error).message)})`);
  }
  const result = templateHolderSchema.safeParse(value);
  if (!result.success) throw new UserError(describeZodError(result.error, `${path}: `, value));
  return result.data.chat_template;
}

/** Pick one template from a string or a list of named templates. */
function pick(
  field: z.infer<typeof templateFieldSchema>,
  file: string,
  name: string | undefined,
): ChatTemplateSource | null {
  if (field === null || field === undefined) return null;
  if (typeof field === 'string') {
    if (name !== undefined && name !== 'default')
      throw new UserError(`${file}: has one chat template, not one named '${name}'`);
    return { file, template: field };
  }
  const wanted = name ?? 'default';
  const found = field.find((t) => t.name === wanted);
  if (!found)
    throw new UserError(`${file}: no chat template named '${wanted}' (has ${field.map((t) => t.name).join(', ')})`);
  return { file, template: found.template };
}

/**
 * The chat template of a checkpoint folder, or null when it has none. `name` picks one of several named templates
 * (default "default").
 */
export function findChatTemplate(dir: string, name?: string): ChatTemplateSource | null {
  const jinjaPath = join(dir, CHAT_TEMPLATE_JINJA);
  if (existsSync(jinjaPath)) {
    if (name !== undefined && name !== 'default')
      throw new UserError(`${jinjaPath}: is the only chat template, not one named '${name}'`);
    return { file: jinjaPath, template: readFileSync(jinjaPath, 'utf8') };
  }
  const jsonPath = join(dir, CHAT_TEMPLATE_JSON);
  if (existsSync(jsonPath)) {
    const found = pick(readTemplateField(jsonPath), jsonPath, name);
    if (found) return found;
  }
  const configPath = join(dir, TOKENIZER_CONFIG);
  if (existsSync(configPath)) return pick(readTemplateField(configPath), configPath, name);
  return null;
}

export class ChatTemplate {
  private readonly template: Template;

  /** `file` names the template in error messages; `variables` are always passed (the tokenizer's special tokens). */
  constructor(
    readonly file: string,
    readonly source: string,
    private readonly variables: Record<string, unknown> = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (error) {
      throw new UserError(`${file}: chat template does not parse: ${oneLine((error as Error).message)}`);
    }
  }

  /** The prompt text for these messages, exactly as transformers' apply_chat_template(tokenize=False) gives it. */
  render(messages: ChatTemplateMessage[], options: RenderOptions = {}): string {
    budget = { deadline: performance.now() + RENDER_MS };
    try {
      return this.template.render({
        tools: null,
        documents: null,
        ...this.variables,
        ...options.variables,
        messages,
        add_generation_prompt: options.addGenerationPrompt ?? false,
      });
    } catch (error) {
      if (error instanceof RenderBound)
        throw new UserError(`${this.file}: chat template stopped: ${error.message}; is it a chat template?`);
      throw new UserError(`${this.file}: chat template failed to render: ${oneLine((error as Error).message)}`);
    } finally {
      budget = null;
    }
  }
}

/** The checkpoint folder's chat template bound to its tokenizer's special tokens; a UserError when it has none. */
export function loadChatTemplate(dir: string, tokenizer: HfTokenizer, name?: string): ChatTemplate {
  const found = findChatTemplate(dir, name);
  if (!found) {
    throw new UserError(
      `${dir}: no chat template (looked for ${CHAT_TEMPLATE_JINJA}, ${CHAT_TEMPLATE_JSON} and chat_template in ${TOKENIZER_CONFIG})`,
    );
  }
  return new ChatTemplate(found.file, found.template, tokenizer.templateVariables());
}
