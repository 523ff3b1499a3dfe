// PromptFormat.promptMessages: an episode's prompt as the chat messages a rollout server receives (models/remote/), for
// the built-in model and a Hugging Face vision model. What the server makes of them (the policy's chatPrompt, as
// `metrl serve` runs it) must be the prompt the learner scores: the same token ids and the same image pixels.
import { afterAll, describe, expect, it } from 'vitest';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { loadPolicy } from '../../models/load.ts';
import { initBackend } from '../../models/backend.ts';
import type { Policy } from '../../models/policy.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';

afterAll(() => removeHfCopies());

async function expectSamePrompt(policy: Policy, domain: string, actions: number) {
  const env = await getEnv(domain);
  const episodes = generateEpisodes(env, { n: 2, actions, split: 'test', seed: 'prompt-messages', modality: 'image' });
  for (const episode of episodes) {
    const direct = policy.prompt(env, episode);
    const messages = await policy.promptMessages(env, episode);
    const urls = messages.flatMap((m) =>
      typeof m.content === 'string' ? [] : m.content.filter((p) => p.type === 'image_url'),
    );
    expect(urls).toHaveLength(actions);
    for (const p of urls)
      expect((p as { image_url: { url: string } }).image_url.url).toMatch(/^data:image\/png;base64,/);
    const served = await policy.chatPrompt(messages);
    expect(served.tokens).toEqual(direct.tokens);
    expect(served.images.length).toBe(direct.images.length);
    served.images.forEach((image, i) => expect(Array.from(image)).toEqual(Array.from(direct.images[i])));
  }
}

describe('promptMessages: chatPrompt of the messages is the prompt', () => {
  it('the built-in model (its compact trace layout; the tiny base reads 16-pixel images, the shell renders 64)', async () => {
    await initBackend('wasm', null);
    const { policy } = await loadPolicy(tinyBaseCheckpoint(), { backend: 'wasm' });
    await expectSamePrompt(policy, 'shell', 2);
    policy.dispose();
  }, 60_000);

  it('a Hugging Face vision model (idefics3: the zero-shot chess prompt through its chat template and image processor)', async () => {
    const { policy } = await loadPolicy(hfCheckpointCopy('idefics3'), { log: () => {} });
    await expectSamePrompt(policy, 'chess', 2);
    policy.dispose();
  }, 60_000);
});
