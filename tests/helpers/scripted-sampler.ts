// Test helper: a Sampler whose "model" writes a fixed script, one character per token, so that what `metrl serve`'s
// decoding does around it (rounds, continuation from prompt + tokens written, stop strings, hang-ups) is checked
// exactly. Token ids are character codes; EOS is id 0. Choice g of a group writes the script from position g on; a
// prompt continued after k written tokens goes on where those k tokens left off (the first of them says where the
// choice began: the script's first characters must differ). Every sampleGroups call is recorded.
import type { Sampler } from '../../models/sampler.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from '../../models/types.ts';

export const EOS = 0;

export interface ScriptedSampler extends Sampler {
  /** Each sampleGroups call: its prompts' lengths, group size and round length. */
  readonly calls: { prompts: number[]; group: number; maxNewTokens: number }[];
}

/**
 * `script` is what choices write ('$' ends one with EOS); `promptLength` is the length of the prompts the tests send
 * (so that tokens past it are the choice's own); `onCall` runs at each sampleGroups call.
 */
export function scriptedSampler(script: string, promptLength: number, onCall?: () => void): ScriptedSampler {
  const calls: ScriptedSampler['calls'] = [];
  const tokenOf = (ch: string) => (ch === '$' ? EOS : ch.charCodeAt(0));
  const sampleGroups = (prompts: EncodedPrompt[], group: number, options: SamplingOptions): Completion[][] => {
    calls.push({ prompts: prompts.map((p) => p.tokens.length), group, maxNewTokens: options.maxNewTokens });
    onCall?.();
    return prompts.map((p) =>
      Array.from({ length: group }, (_, g) => {
        const written = p.tokens.length - promptLength;
        const shift = written === 0 ? g : script.indexOf(String.fromCharCode(p.tokens[promptLength]));
        const tokens: number[] = [];
        for (let i = 0; i < options.maxNewTokens; i++) {
          const ch = script[(shift + written + i) % script.length];
          tokens.push(tokenOf(ch));
          if (ch === '$') break;
        }
        return {
          tokens,
          text: decode(tokens),
          logProbs: Float32Array.from(tokens, () => -0.5),
          finished: tokens[tokens.length - 1] === EOS,
          ...(options.topLogProbs ? { topLogProbs: tokens.map((t) => [{ token: t, logProb: -0.5 }]) } : {}),
        };
      }),
    );
  };
  return {
    calls,
    contextLimit: 10_000,
    imageSize: 0,
    encode: () => ({ tokens: [], images: [] }),
    decode,
    sampleGroup: (prompt, group, options) => sampleGroups([prompt], group, options)[0],
    sampleGroups,
    tokenLogProbs: () => {
      throw new Error('not scripted');
    },
    dispose() {},
    prompt: () => ({ tokens: [], images: [] }),
    chatPrompt: async () => ({ tokens: [], images: [] }),
    promptMessages: async () => [],
    responseOf: (_, text) => text,
    referenceTokens: () => 0,
  };
}

function decode(tokens: number[]): string {
  return String.fromCharCode(...tokens.filter((t) => t !== EOS));
}
