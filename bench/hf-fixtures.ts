// The Hugging Face fixtures of ../shared/fixtures/hf as the device benches load them: a copy of a fixture folder with
// the real SmolVLM tokenizer (the fixtures' token ids lie inside its vocabulary) and a chat template that writes the
// messages as they are, plus a Gemma3ForCausalLM of the gemma3 fixture's text shape with random weights and final
// logit soft-capping (only that class applies it: the training graph's whole-head path). Copies go to the system's
// temporary folder.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED_DIR } from '../core/paths.ts';
import { Rng } from '../core/rng.ts';
import { GEMMA3_CAUSAL_LAYOUT } from '../models/gemma3/language-model.ts';
import { parseHfConfig } from '../models/hf/config.ts';
import { randomDecoderTensors, writeHfCheckpoint } from '../models/hf/write-checkpoint.ts';
import { HF_ARCHITECTURES } from '../models/registry.ts';

export const HF_FIXTURES = join(SHARED_DIR, 'fixtures', 'hf');
/** The soft-capped Gemma 3 CausalLM (made, not a fixture folder). */
export const GEMMA3_SOFTCAP = 'gemma3-softcap';

/** A runnable copy of fixture `name` (or GEMMA3_SOFTCAP); returns its folder. */
export function fixtureCopy(name: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'metrl-hf-device-')), name);
  cpSync(join(HF_FIXTURES, name === GEMMA3_SOFTCAP ? 'gemma3' : name), dir, { recursive: true });
  cpSync(join(HF_FIXTURES, 'tokenizer-smolvlm', 'tokenizer.json'), join(dir, 'tokenizer.json'));
  // The Qwen-VL fixtures keep their processor's settings beside its references.
  if (name.startsWith('qwen') && name.endsWith('_vl'))
    cpSync(join(dir, 'preprocess', 'preprocessor_config.json'), join(dir, 'preprocessor_config.json'));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ chat_template: "{% for m in messages %}{{ m['content'] }}{% endfor %}" }),
  );
  if (name === GEMMA3_SOFTCAP) {
    const fixture = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    const config = {
      ...fixture.text_config,
      architectures: ['Gemma3ForCausalLM'],
      model_type: 'gemma3_text',
      final_logit_softcapping: 2,
    };
    writeHfCheckpoint(
      dir,
      config,
      randomDecoderTensors(
        parseHfConfig(config, HF_ARCHITECTURES).text,
        GEMMA3_CAUSAL_LAYOUT,
        new Rng(3, 'causal'),
        0.2,
      ),
    );
  }
  return dir;
}
