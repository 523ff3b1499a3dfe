// Datasets users bring (`--dataset PATH` of `metrl train`), read into episodes. What PATH holds decides
// how it is read (datasetFormat); each format yields DatasetItems split into train and test:
//   imagefolder   a folder with metadata.jsonl (or that file itself), as `metrl generate` writes it (envs/dataset.ts):
//                 every row is a structured episode (initial state, actions with their modality, target), so any model
//                 lays it out in its own prompt format and the images are rendered again from the action texts by the
//                 domain's renderer (the folder's PNGs are the same pictures, for other tools).
//   chat          a JSONL file of rows { messages, target, split?, id?, meta? }: OpenAI-style chat messages (content a
//                 string, or text and image_url parts; an image is a data: URL or a path relative to the JSONL file),
//                 read as given. Such a row has no structure (no initial state or actions), so it has no transfer
//                 modality and no Game Start baseline; its prompt is the model's chatPrompt of the messages.
// Bad rows stop the command with their line number, as `metrl score` does. The official MET-Bench sets (parquet shards,
// hf://) are read by envs/metbench/official.ts.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { z, type ZodError } from 'zod';
import { UserError } from '../core/errors.ts';
import { readJsonl } from '../core/files.ts';
import { pngDataUrl, type ChatMessage } from '../core/chat.ts';
import { DOMAINS, type Domain, type Episode, type Split } from '../core/episode.ts';
import { METADATA_FILE } from './dataset.ts';
import { imageMime } from './dataset-images.ts';

/** metbench: an official MET-Bench set's parquet shards (envs/metbench/hub.ts readOfficialTrainingSet); laid out as imagefolder rows. */
export type DatasetFormat = 'imagefolder' | 'chat' | 'metbench';

/** One row: its episode (what rewards and scores read), and for chat rows the messages that are its prompt. */
export interface DatasetItem {
  episode: Episode;
  /** Chat rows only: the prompt as written. Image-folder rows are laid out by the model from the episode. */
  messages?: ChatMessage[];
  /** The row's line in Dataset.file (1-based), for messages about the row found after it was read. */
  line?: number;
}

export interface Dataset {
  /** The file read (metadata.jsonl for a folder). */
  file: string;
  format: DatasetFormat;
  /** The domain of image-folder rows (one per dataset); chat rows take the one named on the command line. */
  domain: Domain | null;
  train: DatasetItem[];
  test: DatasetItem[];
}

/** What PATH holds: a folder with metadata.jsonl or such a file (imagefolder), or another .jsonl file (chat rows). */
export function datasetFormat(path: string): { format: DatasetFormat; file: string } {
  const full = resolve(path);
  if (!existsSync(full)) throw new UserError(`--dataset ${path}: no such file or folder`);
  if (statSync(full).isDirectory()) {
    const file = join(full, METADATA_FILE);
    if (!existsSync(file))
      throw new UserError(
        `--dataset ${path}: the folder has no ${METADATA_FILE} (the layout \`metrl generate\` writes) nor parquet shards (an official MET-Bench set)`,
      );
    return { format: 'imagefolder', file };
  }
  if (extname(full) !== '.jsonl')
    throw new UserError(`--dataset ${path}: expected a folder with ${METADATA_FILE} or a .jsonl file of chat rows`);
  // A metadata.jsonl named directly is the image folder it lies in.
  return { format: full.endsWith(`/${METADATA_FILE}`) ? 'imagefolder' : 'chat', file: full };
}

/** Read a dataset. `domain`: the --domain given, which image-folder rows must match and chat rows take. */
export function readDataset(path: string, domain?: string): Dataset {
  const { format, file } = datasetFormat(path);
  const { rows } = readJsonl<unknown>(file);
  if (rows.length === 0) throw new UserError(`${file}: no rows`);
  const items =
    format === 'imagefolder'
      ? rows.map((r) => imageFolderItem(file, r.line, r.value, domain))
      : rows.map((r) => chatItem(file, r.line, r.value, domain));
  const rowDomain = format === 'imagefolder' ? items[0].episode.domain : null;
  const train = items.filter((i) => i.episode.split === 'train');
  const test = items.filter((i) => i.episode.split === 'test');
  return { file, format, domain: rowDomain, train, test };
}

/** "missing field 'target'" or "field 'split': …": one line for one bad row (as `metrl score` words it). */
function describeRowError(error: ZodError, value: unknown): string {
  const issue = error.issues[0];
  if (issue.path.length === 0) return 'not a JSON object';
  const field = issue.path.join('.');
  if (issue.path.length === 1 && !Object.hasOwn(value as object, issue.path[0] as string))
    return `missing field '${field}'`;
  return `field '${field}': ${issue.message}`;
}

const target = z.union([z.string(), z.number().transform(String)]);
const split = z.enum(['train', 'test']);

const ImageFolderRowSchema = z.object({
  id: z.string().min(1),
  domain: z.enum(DOMAINS),
  split,
  initial_state: z.string(),
  actions: z.array(z.string()),
  modalities: z.array(z.enum(['text', 'image'])),
  target,
  question: z.string().optional(),
  meta: z.record(z.string(), z.unknown()).default({}),
});

function imageFolderItem(file: string, line: number, value: unknown, domain: string | undefined): DatasetItem {
  const parsed = ImageFolderRowSchema.safeParse(value);
  if (!parsed.success) throw new UserError(`${file}:${line}: ${describeRowError(parsed.error, value)}`);
  const row = parsed.data;
  if (row.modalities.length !== row.actions.length)
    throw new UserError(`${file}:${line}: ${row.actions.length} actions but ${row.modalities.length} modalities`);
  if (domain !== undefined && row.domain !== domain)
    throw new UserError(`${file}:${line}: a ${row.domain} row, but --domain is ${domain}`);
  const episode: Episode = {
    id: row.id,
    domain: row.domain,
    split: row.split,
    initialState: row.initial_state,
    actions: row.actions.map((text, i) => ({ text, modality: row.modalities[i] })),
    target: row.target,
    ...(row.question !== undefined ? { question: row.question } : {}),
    meta: row.meta,
  };
  return { episode, line };
}

const ChatPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string().min(1) }) }),
]);
const ChatRowSchema = z.object({
  messages: z
    .array(
      z.object({
        role: z.enum(['system', 'user', 'assistant']),
        content: z.union([z.string(), z.array(ChatPartSchema)]),
      }),
    )
    .min(1),
  target,
  split: split.default('train'),
  id: z.union([z.string().min(1), z.number().transform(String)]).optional(),
  initial_state: z.string().optional(),
  meta: z.record(z.string(), z.unknown()).default({}),
});

/**
 * The most text one chat row may hold, in characters, checked as the row is read: far above any prompt a model metrl
 * trains can take (the built-in model's context is 2,048 tokens, and a token is at least a character or so), and far
 * below rows that take minutes to tokenise before the run fails, after its first files were written.
 */
export const MAX_ROW_TEXT_CHARS = 262_144;
/** The largest image one data: URL or image file of a row may hold (its decoded bytes). */
const MAX_ROW_IMAGE_BYTES = 16 * 1024 * 1024;

function chatItem(file: string, line: number, value: unknown, domain: string | undefined): DatasetItem {
  const parsed = ChatRowSchema.safeParse(value);
  if (!parsed.success) throw new UserError(`${file}:${line}: ${describeRowError(parsed.error, value)}`);
  const text = parsed.data.messages.reduce(
    (n, m) =>
      n +
      (typeof m.content === 'string'
        ? m.content.length
        : m.content.reduce((k, p) => k + (p.type === 'text' ? p.text.length : 0), 0)),
    0,
  );
  if (text > MAX_ROW_TEXT_CHARS) {
    throw new UserError(
      `${file}:${line}: the row's messages hold ${text.toLocaleString('en-US')} characters of text; a row may hold at most ${MAX_ROW_TEXT_CHARS.toLocaleString('en-US')} (no model's context takes more)`,
    );
  }
  if (domain === undefined) {
    throw new UserError(`${file}: chat rows need --domain: it scores the answers (--reward domain) and the test split`);
  }
  const row = parsed.data;
  const messages: ChatMessage[] = row.messages.map((m) => ({
    role: m.role,
    content:
      typeof m.content === 'string'
        ? m.content
        : m.content.map((p) =>
            p.type === 'text' ? p : { type: 'image_url', image_url: { url: imageUrl(file, line, p.image_url.url) } },
          ),
  }));
  const episode: Episode = {
    id: row.id ?? `row-${line}`,
    domain: domain as Domain,
    split: row.split as Split,
    initialState: row.initial_state ?? '',
    actions: [],
    target: row.target,
    meta: row.meta,
  };
  return { episode, messages, line };
}

/** An image part's URL as a data: URL: data URLs as given, paths read relative to the JSONL file. */
function imageUrl(file: string, line: number, url: string): string {
  if (url.startsWith('data:')) return checkedDataUrl(file, line, url);
  if (/^[a-z]+:\/\//i.test(url))
    throw new UserError(`${file}:${line}: image ${url}: only data: URLs and paths relative to the file are read`);
  const path = resolve(dirname(file), url);
  if (!existsSync(path)) throw new UserError(`${file}:${line}: image ${url} not found (looked for ${path})`);
  if (statSync(path).size > MAX_ROW_IMAGE_BYTES)
    throw new UserError(`${file}:${line}: image ${url}: larger than ${MAX_ROW_IMAGE_BYTES / 1024 / 1024} MB`);
  const bytes = readFileSync(path);
  const ext = extname(path).toLowerCase();
  if (ext === '.png') return pngDataUrl(bytes);
  const mime = ext === '.jpg' || ext === '.jpeg' ? 'jpeg' : ext === '.webp' ? 'webp' : ext === '.gif' ? 'gif' : null;
  if (mime === null) throw new UserError(`${file}:${line}: image ${url}: expected a .png, .jpg, .webp or .gif file`);
  return `data:image/${mime};base64,${bytes.toString('base64')}`;
}

/**
 * A data: URL checked as the row is read, so that one that cannot be an image is named by its file and line rather
 * than found when the model decodes it: base64 data of an image type, within MAX_ROW_IMAGE_BYTES, whose bytes start
 * like a PNG, JPEG, WebP or GIF file. (Whether every pixel decodes is sharp's to say when the model reads it.)
 */
function checkedDataUrl(file: string, line: number, url: string): string {
  const where = `${file}:${line}: image data: URL`;
  const match = /^data:(image\/[a-z+.-]+);base64,(.*)$/is.exec(url);
  if (!match)
    throw new UserError(
      `${where}: expected data:image/<type>;base64,<data> (got ${JSON.stringify(url.slice(0, 30))}…)`,
    );
  const data = match[2].replace(/\s+/g, '');
  if (data.length > (MAX_ROW_IMAGE_BYTES * 4) / 3 + 4)
    throw new UserError(`${where}: larger than ${MAX_ROW_IMAGE_BYTES / 1024 / 1024} MB`);
  if (data.length === 0 || data.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data))
    throw new UserError(`${where}: its data is not valid base64`);
  const mime = imageMime(Buffer.from(data, 'base64'));
  if (mime === null) throw new UserError(`${where}: its bytes are no PNG, JPEG, WebP or GIF image`);
  return url;
}
