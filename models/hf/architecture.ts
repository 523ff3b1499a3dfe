// What one Hugging Face architecture tells the shared code of models/hf/, as data: the config.json model_type values
// and model classes it reads; per class, its decoder family with the family's class defaults, where the decoder's
// tensors sit (the current transformers names and the older ones Hub checkpoints still carry), and its image side
// (processor, vision tower, image placeholder layout); and the engines that run it. Each models/<arch>/architecture.ts
// exports one; models/registry.ts collects them into an ArchitectureTable, which the config reader, the decoder
// loader, HfPolicy and models/engine.ts read. Nothing in models/hf/ imports an architecture folder: the table, or
// the model class it found, is handed in.
import type { HfModelConfig, ModelClassConfig, ModelClassLookup } from './config.ts';
import type { HfDecoder } from './decoder.ts';
import type { ImageModel } from './image-model.ts';
import type { ImagePlaceholderLayout } from './image-placeholders.ts';
import type { TextModelLayout } from './layout.ts';
import type { HfTokenizer } from './tokenizer.ts';
import type { CheckpointTensors } from './weights.ts';

/** The engines metrl has (models/engine.ts): ONNX Runtime, which needs graphs for the model, and tfjs. */
export type HfEngine = 'ort' | 'tfjs';

/** A vision-language class's image side. */
interface HfVisionSide {
  /** What the chat template writes per image, what it becomes, and the token the image features replace. */
  placeholders(raw: Record<string, unknown>, file: string, tokenizer: HfTokenizer): ImagePlaceholderLayout;
  /**
   * The image model (processor, tower, merge) over the loaded language model; imported on demand, so that reading the
   * table loads no model code. The caller disposes the decoder when this fails.
   */
  load(dir: string, config: HfModelConfig, decoder: HfDecoder, tensors: CheckpointTensors): Promise<ImageModel>;
}

/** One model class (config.json `architectures[0]`). */
export interface HfModelClass extends ModelClassConfig {
  /**
   * The decoder's tensor names, the current transformers layout first, then older ones real checkpoints still carry:
   * the first whose embedding table the file has is read (none: the last, whose missing tensors the error names).
   */
  layouts: readonly TextModelLayout[];
  /** Absent for text models. */
  vision?: HfVisionSide;
}

/** What a models/<arch>/ folder exports. */
export interface HfArchitecture {
  /** config.json model_type values (models/registry.ts dispatches on them). */
  modelTypes: readonly string[];
  classes: readonly HfModelClass[];
  /** Engines that run it: ONNX Runtime where models/onnx/hf/ has its graphs (the default then), and tfjs. */
  engines: readonly HfEngine[];
}

/** The architectures by model_type and by class name. */
export class ArchitectureTable implements ModelClassLookup {
  private readonly byType = new Map<string, HfArchitecture>();
  private readonly byClass = new Map<string, HfModelClass>();

  constructor(readonly architectures: readonly HfArchitecture[]) {
    for (const a of architectures) {
      for (const t of a.modelTypes) {
        if (this.byType.has(t)) throw new Error(`architecture table: model_type ${t} is listed twice`);
        this.byType.set(t, a);
      }
      for (const c of a.classes) {
        if (this.byClass.has(c.name)) throw new Error(`architecture table: class ${c.name} is listed twice`);
        this.byClass.set(c.name, c);
      }
    }
  }

  /** The architecture of a config.json model_type. */
  forModelType(modelType: string): HfArchitecture | undefined {
    return this.byType.get(modelType);
  }

  find(name: string): HfModelClass | undefined {
    return this.byClass.get(name);
  }

  /** The class a parsed config names (parseHfConfig found it, so it is here). */
  modelClass(config: HfModelConfig): HfModelClass {
    const cls = this.byClass.get(config.architecture);
    if (!cls) throw new Error(`internal: ${config.architecture} is not in the architecture table`);
    return cls;
  }

  get classNames(): string[] {
    return [...this.byClass.keys()];
  }

  /** Every model_type, or those an engine runs. */
  modelTypes(engine?: HfEngine): string[] {
    return [...this.byType].filter(([, a]) => engine === undefined || a.engines.includes(engine)).map(([t]) => t);
  }
}
