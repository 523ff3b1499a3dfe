// A checkpoint's own Jinja chat template, rendered with @huggingface/jinja as transformers' apply_chat_template renders
// it. The template is found where transformers 4.57 looks: `chat_template.jinja` beside the tokenizer
// (it wins over the others), the processor's `chat_template.json`, then `chat_template` in tokenizer_config.json,
// which may be one string or a list of named templates ({name, template}; "default" is used unless another is asked
// for). The variables are those transformers passes: messages, add_generation_prompt, tools and documents (none), the
// tokenizer's special tokens (bos_token, eos_token, …), plus any extra the caller gives; raise_exception and
// strftime_now come with the library. A template that does not parse or fails to render is a UserError naming its
// file and the Jinja error, on one line.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { Template } from '@huggingface/jinja';
import { UserError, describeZodError } from '../../core/errors.ts';
import { TOKENIZER_CONFIG, type HfTokenizer } from './tokenizer.ts';

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
      throw new UserError(`${this.file}: chat template failed to render: ${oneLine((error as Error).message)}`);
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
