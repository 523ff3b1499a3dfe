// Chat templates (models/hf/chat-template.ts), image placeholders (models/hf/image-placeholders.ts) and metrl prompts
// as template messages (models/hf/chat-messages.ts), against ../shared/fixtures/hf read in place: SmolVLM's two chat
// renderings and their ids (cases.json), the Idefics3 and Gemma 3 fixtures' image-token layouts (reference.json),
// and the wording the hosted-model path sends (eval/query-to-chat.ts).
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED_DIR } from '../../core/paths.ts';
import { UserError } from '../../core/errors.ts';
import { encodePng, type RawImage } from '../../core/image.ts';
import { pngDataUrl } from '../../core/chat.ts';
import { loadHfTokenizer } from '../../models/hf/tokenizer.ts';
import {
  ChatTemplate,
  findChatTemplate,
  loadChatTemplate,
  type ChatTemplateMessage,
} from '../../models/hf/chat-template.ts';
import { countImagePlaceholders, expandImagePlaceholders } from '../../models/hf/image-placeholders.ts';
import { chatToTemplatePrompt, envRenderer, toTemplatePrompt } from '../../models/hf/chat-messages.ts';
import { encodeChatPrompt, loadChatPromptKit } from '../../models/hf/chat-prompt.ts';
import { idefics3Placeholders } from '../../models/idefics3/placeholders.ts';
import { gemma3Placeholders } from '../../models/gemma3/placeholders.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';
import { shellEnv } from '../../envs/shell/index.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { referenceChat } from '../../eval/query-to-chat.ts';
import { GEMMA3_SPECIALS, IDEFICS3_SPECIALS, writeByteTokenizer } from '../helpers/byte-tokenizer.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';

const HF = join(SHARED_DIR, 'fixtures', 'hf');
const SMOLVLM = join(HF, 'tokenizer-smolvlm');
const cases = JSON.parse(readFileSync(join(SMOLVLM, 'cases.json'), 'utf8')) as {
  chat_template_examples: {
    messages: ChatTemplateMessage[];
    add_generation_prompt: boolean;
    rendered: string;
    ids: number[];
  }[];
};
const smolTok = loadHfTokenizer(SMOLVLM);
const smolTemplate = loadChatTemplate(SMOLVLM, smolTok);

/** SmolVLM-256M-Instruct's config.json values that set the image layout (the Hub file; the fixture folder has none). */
const SMOLVLM_256M_CONFIG = {
  model_type: 'idefics3',
  image_token_id: 49190,
  scale_factor: 4,
  vision_config: { image_size: 512, patch_size: 16 },
};

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'metrl-hfchat-'));
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('SmolVLM chat template (cases.json)', () => {
  it('comes from tokenizer_config.json', () => {
    expect(smolTemplate.file).toBe(join(SMOLVLM, 'tokenizer_config.json'));
  });

  it.each(cases.chat_template_examples.map((e, i) => [i, e] as const))(
    'example %i: rendering and ids exact',
    (_i, example) => {
      expect(cases.chat_template_examples).toHaveLength(2);
      const text = smolTemplate.render(example.messages, { addGenerationPrompt: example.add_generation_prompt });
      expect(text).toBe(example.rendered);
      expect(smolTok.encode(text, { addSpecialTokens: false })).toEqual(example.ids);
    },
  );

  it('leaves the assistant cue out without add_generation_prompt', () => {
    const text = smolTemplate.render(cases.chat_template_examples[0].messages);
    expect(text).toBe(cases.chat_template_examples[0].rendered.replace(/Assistant:$/, ''));
  });
});

describe('finding and rendering a template', () => {
  const vars = { bos_token: '<s>', eos_token: '</s>' };

  it('prefers chat_template.jinja, then chat_template.json, then tokenizer_config.json', () => {
    const dir = scratch();
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: 'config' }));
    expect(findChatTemplate(dir)).toEqual({ file: join(dir, 'tokenizer_config.json'), template: 'config' });
    writeFileSync(join(dir, 'chat_template.json'), JSON.stringify({ chat_template: 'processor' }));
    expect(findChatTemplate(dir)?.template).toBe('processor');
    writeFileSync(join(dir, 'chat_template.jinja'), 'jinja');
    expect(findChatTemplate(dir)).toEqual({ file: join(dir, 'chat_template.jinja'), template: 'jinja' });
    expect(findChatTemplate(scratch())).toBeNull();
  });

  it('picks "default" from a list of named templates, or the one asked for', () => {
    const dir = scratch();
    const list = [
      { name: 'tool_use', template: 'tools' },
      { name: 'default', template: 'plain' },
    ];
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: list }));
    expect(findChatTemplate(dir)?.template).toBe('plain');
    expect(findChatTemplate(dir, 'tool_use')?.template).toBe('tools');
    expect(thrown(() => findChatTemplate(dir, 'rag')).message).toMatch(
      /no chat template named 'rag' \(has tool_use, default\)/,
    );
  });

  it('passes the special tokens, add_generation_prompt, tools = none and extra variables', () => {
    const t = new ChatTemplate(
      'x.jinja',
      '{{ bos_token }}{% for m in messages %}{{ m.role }}={{ m.content }};{% endfor %}{% if tools is none %}T{% endif %}{% if add_generation_prompt %}>{% endif %}{{ flag }}{{ eos_token }}',
      vars,
    );
    expect(t.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true, variables: { flag: '!' } })).toBe(
      '<s>user=hi;T>!</s>',
    );
    expect(t.render([{ role: 'user', content: 'hi' }])).toBe('<s>user=hi;T</s>');
  });

  it('names the file and the Jinja error in one line when a template fails to parse or render', () => {
    const parse = thrown(() => new ChatTemplate('/ckpt/chat_template.jinja', '{% for m in messages %}{{ m.content }'));
    expect(parse).toBeInstanceOf(UserError);
    expect(parse.message).toMatch(/^\/ckpt\/chat_template\.jinja: chat template does not parse: /);
    const raising = new ChatTemplate(
      '/ckpt/tokenizer_config.json',
      "{% if messages[0].role != 'system' %}{{ raise_exception('System message\nfirst') }}{% endif %}",
    );
    const render = thrown(() => raising.render([{ role: 'user', content: 'x' }]));
    expect(render).toBeInstanceOf(UserError);
    expect(render.message).toMatch(
      /^\/ckpt\/tokenizer_config\.json: chat template failed to render: .*System message first/,
    );
    expect(render.message).not.toContain('\n');
  });

  it('stops a template that loops too long, writes too much or asks for a huge range, in one line', () => {
    const bounded = (template: string) => {
      const started = performance.now();
      const error = thrown(() => new ChatTemplate('/ckpt/chat_template.jinja', template).render([]));
      expect(performance.now() - started).toBeLessThan(20_000);
      expect(error).toBeInstanceOf(UserError);
      expect(error.message).not.toContain('\n');
      return error.message;
    };
    expect(bounded('{% for i in range(100000000) %}x{% endfor %}')).toMatch(
      /^\/ckpt\/chat_template\.jinja: chat template stopped: range\(\) of 100000000 items \(at most 100,000\); is it a chat template\?$/,
    );
    expect(bounded('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}')).toMatch(
      /chat template stopped: it ran for more than 2 s/,
    );
    expect(
      bounded(
        "{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
      ),
    ).toMatch(/chat template stopped: it wrote more than 4,000,000 characters/);
    // range() as the library's: start, stop, step, negative steps.
    const t = new ChatTemplate('t', '{{ range(3) }}|{{ range(2, 8, 3) }}|{{ range(5, 0, -2) }}');
    expect(t.render([])).toBe('[0, 1, 2]|[2, 5]|[5, 3, 1]');
  });

  it('is a UserError naming the folder when there is no template, and names a malformed chat_template.json', () => {
    const dir = scratch();
    writeByteTokenizer(dir);
    writeFileSync(join(dir, 'tokenizer_config.json'), '{}');
    const tok = loadHfTokenizer(dir);
    expect(thrown(() => loadChatTemplate(dir, tok)).message).toMatch(/no chat template/);
    writeFileSync(join(dir, 'chat_template.json'), '{"chat_template": 3}');
    const bad = thrown(() => loadChatTemplate(dir, tok));
    expect(bad).toBeInstanceOf(UserError);
    expect(bad.message).toContain(join(dir, 'chat_template.json'));
  });
});

describe('image placeholders', () => {
  it('SmolVLM-256M: <image> becomes <fake><global-img> + 64 <image> + <fake>, ids from the tokenizer', () => {
    const layout = idefics3Placeholders(SMOLVLM_256M_CONFIG, 'config.json', smolTok);
    expect(layout.tokensPerImage).toBe(64); // (512 / 16)^2 / 4^2
    expect(layout.imageTokenId).toBe(49190);
    const example = cases.chat_template_examples[0];
    const prompt = smolTemplate.render(example.messages, { addGenerationPrompt: true });
    const ids = smolTok.encode(expandImagePlaceholders(prompt, layout, 1), { addSpecialTokens: false });
    const fake = smolTok.tokenToId('<fake_token_around_image>')!;
    const global = smolTok.tokenToId('<global-img>')!;
    const at = example.ids.indexOf(49190);
    expect(ids).toEqual([
      ...example.ids.slice(0, at),
      fake,
      global,
      ...Array(64).fill(49190),
      fake,
      ...example.ids.slice(at + 1),
    ]);
    expect([fake, global]).toEqual([49189, 49152]);
  });

  it('Idefics3 fixture: the reference prompts of one and two images, with the fixture ids 251, 252, 250 x4, 251', () => {
    const dir = scratch();
    writeByteTokenizer(dir, { specials: IDEFICS3_SPECIALS });
    const tok = loadHfTokenizer(dir);
    const configFile = join(HF, 'idefics3', 'config.json');
    const layout = idefics3Placeholders(readJson(configFile), configFile, tok);
    expect(layout.tokensPerImage).toBe(4); // (32 / 8)^2 / 2^2
    const reference = readJson(join(HF, 'idefics3', 'reference.json')) as Record<string, { input_ids: number[][] }>;
    // With the byte tokenizer, ids 1, 40, 17, 90… are the bytes \x01 ( \x11 Z…; the images sit where the template put <image>.
    const one = '\x01()<image>Z[\\]';
    const two = '\x01(<image>\x11<image>Z[';
    expect(tok.encode(expandImagePlaceholders(one, layout, 1))).toEqual(reference.one_image.input_ids[0]);
    expect(tok.encode(expandImagePlaceholders(two, layout, 2))).toEqual(reference.two_images.input_ids[0]);
  });

  it('Gemma 3 fixture: <start_of_image> becomes \\n\\n + boi + 4 image tokens + eoi + \\n\\n', () => {
    const dir = scratch();
    writeByteTokenizer(dir, { specials: GEMMA3_SPECIALS, imagePlaceholder: '<start_of_image>' });
    const tok = loadHfTokenizer(dir);
    const configFile = join(HF, 'gemma3', 'config.json');
    const layout = gemma3Placeholders(readJson(configFile), configFile, tok);
    expect(layout.expand(layout.tokensPerImage!)).toBe(
      '\n\n<start_of_image><image_soft_token><image_soft_token><image_soft_token><image_soft_token><end_of_image>\n\n',
    );
    // reference prompt: [bos, 30, 31, 108, boi, img x4, eoi, 108, 60, 61, 62], 108 being "\n\n" in Gemma's own vocabulary.
    const reference = readJson(join(HF, 'gemma3', 'reference.json')) as { image: { input_ids: number[][] } };
    const ids = tok.encode(expandImagePlaceholders('\x1e\x1f<start_of_image><=>', layout, 1));
    const refRun = reference.image.input_ids[0].slice(4, 10);
    expect(refRun).toEqual([253, 255, 255, 255, 255, 254]);
    expect(ids).toEqual([30, 31, 10, 10, ...refRun, 10, 10, 60, 61, 62]);
  });

  it('has no layout for text-only architectures, and refuses a template that wrote the wrong number of placeholders', () => {
    expect(HF_ARCHITECTURES.find('LlamaForCausalLM')?.vision).toBeUndefined();
    const layout = idefics3Placeholders(SMOLVLM_256M_CONFIG, 'config.json', smolTok);
    expect(countImagePlaceholders('a<image>b<image>', layout)).toBe(2);
    const error = thrown(() => expandImagePlaceholders('a<image>b', layout, 2));
    expect(error).toBeInstanceOf(UserError);
    expect(error.message).toMatch(/wrote 1 image placeholder\(s\) "<image>" for 2 image\(s\)/);
  });

  it('names config.json when its image token is not in the tokenizer', () => {
    const error = thrown(() =>
      idefics3Placeholders({ ...SMOLVLM_256M_CONFIG, image_token_id: 99999 }, '/ckpt/config.json', smolTok),
    );
    expect(error).toBeInstanceOf(UserError);
    expect(error.message).toBe("/ckpt/config.json: image_token_id 99999 is not a token of the checkpoint's tokenizer");
  });
});

describe('metrl prompts as template messages', () => {
  const episodes = generateEpisodes(shellEnv, {
    n: 3,
    actions: 3,
    split: 'test',
    seed: 11,
    modality: 'mixed',
    imageRatio: 0.6,
  });
  const episode = episodes.find(
    (e) => e.actions.some((a) => a.modality === 'image') && e.actions.some((a) => a.modality === 'text'),
  )!;
  const shots = generateEpisodes(shellEnv, { n: 1, actions: 2, split: 'train', seed: 3, modality: 'text' });

  it("sends the hosted path's wording and images: text parts equal, one image per placeholder, same pixels", async () => {
    expect(episode).toBeDefined();
    const query = { kind: 'track' as const, episode, style: 'few-shot', shots };
    const hosted = await referenceChat(shellEnv, query);
    const ours = toTemplatePrompt(shellEnv.prompt(episode, { style: 'few-shot', shots }), envRenderer(shellEnv), {
      content: 'parts',
    });
    expect(ours.messages.map((m) => m.role)).toEqual(hosted.map((m) => m.role));
    const hostedUrls: string[] = [];
    hosted.forEach((m, i) => {
      const hostedParts = typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : m.content;
      const ourParts = ours.messages[i].content;
      expect(Array.isArray(ourParts)).toBe(true);
      expect((ourParts as unknown[]).length).toBe(hostedParts.length);
      hostedParts.forEach((p, j) => {
        const q = (ourParts as { type: string; text?: string }[])[j];
        if (p.type === 'text') expect(q).toEqual({ type: 'text', text: p.text });
        else {
          expect(q).toEqual({ type: 'image' });
          hostedUrls.push(p.image_url.url);
        }
      });
    });
    const imageActions = episode.actions.filter((a) => a.modality === 'image').length;
    expect(ours.images).toHaveLength(imageActions);
    expect(hostedUrls).toHaveLength(imageActions);
    for (const [k, image] of ours.images.entries()) {
      expect(image.width).toBe(shellEnv.imageSizes.chat);
      expect(pngDataUrl(await encodePng(image))).toBe(hostedUrls[k]);
    }
  });

  it("reads the hosted path's own OpenAI messages (data URLs) to the same template messages and pixels", async () => {
    const query = { kind: 'track' as const, episode, style: 'few-shot', shots };
    const fromChat = await chatToTemplatePrompt(await referenceChat(shellEnv, query), { content: 'parts' });
    const direct = toTemplatePrompt(shellEnv.prompt(episode, { style: 'few-shot', shots }), envRenderer(shellEnv), {
      content: 'parts',
    });
    expect(fromChat.messages).toEqual(direct.messages);
    expect(fromChat.images.length).toBe(direct.images.length);
    fromChat.images.forEach((image, k) => {
      expect([image.width, image.height]).toEqual([direct.images[k].width, direct.images[k].height]);
      expect(Buffer.compare(Buffer.from(image.data), Buffer.from(direct.images[k].data))).toBe(0);
    });
    const bad = [
      {
        role: 'user' as const,
        content: [{ type: 'image_url' as const, image_url: { url: 'https://example.com/x.png' } }],
      },
    ];
    await expect(chatToTemplatePrompt(bad, { content: 'parts' })).rejects.toThrow(/must be a base64 data: URL/);
    const text = [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'a' },
          { type: 'text' as const, text: 'b' },
        ],
      },
    ];
    expect((await chatToTemplatePrompt(text, { content: 'string' })).messages).toEqual([
      { role: 'user', content: 'ab' },
    ]);
  });

  it('renders through the SmolVLM template with one <image> run per image', () => {
    const ours = toTemplatePrompt(shellEnv.prompt(episode, { style: 'zero-shot', shots: [] }), envRenderer(shellEnv), {
      content: 'parts',
    });
    const prompt = smolTemplate.render(ours.messages, { addGenerationPrompt: true });
    expect(prompt.startsWith('<|im_start|>User: The shell game')).toBe(true);
    expect(prompt.endsWith('<end_of_utterance>\nAssistant:')).toBe(true);
    const layout = idefics3Placeholders(SMOLVLM_256M_CONFIG, 'config.json', smolTok);
    const ids = smolTok.encode(expandImagePlaceholders(prompt, layout, ours.images.length), {
      addSpecialTokens: false,
    });
    expect(ids.filter((id) => id === 49190)).toHaveLength(64 * ours.images.length);
  });

  it('keeps image order and repeats, and gives text-only models plain strings', () => {
    const fake = {
      id: 'e',
      actions: [
        { text: 'a', modality: 'image' },
        { text: 'b', modality: 'image' },
      ],
    } as unknown as Episode;
    const prompt: PromptMessage[] = [
      { role: 'system', parts: [{ type: 'text', text: 'sys' }] },
      {
        role: 'user',
        parts: [
          { type: 'image', ref: { episode: fake, index: 1 } },
          { type: 'text', text: 'x' },
          { type: 'text', text: 'y' },
          { type: 'image', ref: { episode: fake, index: 0 } },
          { type: 'image', ref: { episode: fake, index: 1 } },
        ],
      },
    ];
    let renders = 0;
    const render = (ref: { index: number }): RawImage => {
      renders++;
      return { width: ref.index + 1, height: 1, channels: 3, data: new Uint8Array(3 * (ref.index + 1)) };
    };
    const out = toTemplatePrompt(prompt, render, { content: 'parts' });
    expect(out.images.map((i) => i.width)).toEqual([2, 1, 2]);
    expect(renders).toBe(2);
    expect(out.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'sys' }] },
      {
        role: 'user',
        content: [{ type: 'image' }, { type: 'text', text: 'xy' }, { type: 'image' }, { type: 'image' }],
      },
    ]);
    const text = toTemplatePrompt([prompt[0], { role: 'user', parts: [{ type: 'text', text: 'q' }] }], render, {
      content: 'string',
    });
    expect(text).toEqual({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q' },
      ],
      images: [],
    });
    const error = thrown(() => toTemplatePrompt(prompt, render, { content: 'string' }));
    expect(error).toBeInstanceOf(UserError);
  });
});

describe('encodeChatPrompt: a metrl prompt to ids and images', () => {
  const imageEpisode = generateEpisodes(shellEnv, { n: 1, actions: 2, split: 'test', seed: 4, modality: 'image' })[0];
  const textEpisode = generateEpisodes(shellEnv, { n: 1, actions: 2, split: 'test', seed: 4, modality: 'text' })[0];

  it('Idefics3 fixture with the byte tokenizer: one 251 252 250x4 251 run per image, text intact', () => {
    const dir = scratch();
    writeByteTokenizer(dir, { specials: IDEFICS3_SPECIALS });
    const configFile = join(HF, 'idefics3', 'config.json');
    const kit = loadChatPromptKit(dir, (tok) => idefics3Placeholders(readJson(configFile), configFile, tok));
    const out = encodeChatPrompt(
      kit,
      shellEnv.prompt(imageEpisode, { style: 'zero-shot', shots: [] }),
      envRenderer(shellEnv),
    );
    expect(out.images).toHaveLength(2);
    const run = [251, 252, 250, 250, 250, 250, 251];
    const starts = out.ids.flatMap((id, i) => (id === 251 && out.ids[i + 1] === 252 ? [i] : []));
    expect(starts).toHaveLength(2);
    for (const s of starts) expect(out.ids.slice(s, s + run.length)).toEqual(run);
    expect(out.ids.filter((id) => id === 250)).toHaveLength(8);
    expect(kit.tokenizer.decode(out.ids)).toBe(out.text);
    expect(out.text.startsWith('User: The shell game')).toBe(true);
    expect(out.text.endsWith('FINAL ANSWER:\nAssistant:')).toBe(true);
  });

  it('text-only architecture (llama fixture): string content, and a prompt with images is refused', () => {
    const dir = scratch();
    writeByteTokenizer(dir);
    const kit = loadChatPromptKit(dir);
    expect(kit.layout).toBeNull();
    const out = encodeChatPrompt(
      kit,
      shellEnv.prompt(textEpisode, { style: 'zero-shot', shots: [] }),
      envRenderer(shellEnv),
    );
    expect(out.images).toEqual([]);
    expect(out.ids).toEqual([...Buffer.from(out.text, 'utf8')]);
    expect(out.text).toContain(`${textEpisode.actions[0].text}\n${textEpisode.actions[1].text}\n`);
    const render = envRenderer(shellEnv);
    expect(() =>
      encodeChatPrompt(kit, shellEnv.prompt(imageEpisode, { style: 'zero-shot', shots: [] }), render),
    ).toThrow(UserError);
  });
  it('refuses a template that renders an empty prompt, in one line', () => {
    const dir = scratch();
    writeByteTokenizer(dir);
    writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}{% endfor %}');
    const kit = loadChatPromptKit(dir);
    const error = thrown(() =>
      encodeChatPrompt(kit, shellEnv.prompt(textEpisode, { style: 'zero-shot', shots: [] }), envRenderer(shellEnv)),
    );
    expect(error).toBeInstanceOf(UserError);
    expect(error.message).toBe(
      `${join(dir, 'chat_template.jinja')}: the chat template rendered an empty prompt (no tokens to generate after)`,
    );
  });
});
