// AdamW (Loshchilov & Hutter: Adam with decoupled weight decay) on tfjs variables, written out rather than taken
// from tf.train.adam because a training checkpoint must save and restore the exact optimiser state — first and
// second moments per variable and the step count — so that a resumed run continues bit for bit.
import * as tf from '@tensorflow/tfjs';

export interface AdamWOptions {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
}

/** The optimiser state as plain arrays, keyed by variable name (what a checkpoint stores). */
export interface AdamWState {
  step: number;
  m: Record<string, Float32Array>;
  v: Record<string, Float32Array>;
}

export class AdamW {
  private readonly variables: Map<string, tf.Variable>;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  /** Updates applied so far (bias correction uses it). */
  step = 0;

  constructor(
    variables: tf.Variable[],
    readonly options: AdamWOptions,
  ) {
    this.variables = new Map(variables.map((v) => [v.name, v]));
    if (this.variables.size !== variables.length) throw new Error('AdamW: variable names must be unique');
    for (const [name, variable] of this.variables) {
      this.m.set(name, tf.variable(tf.zerosLike(variable), false));
      this.v.set(name, tf.variable(tf.zerosLike(variable), false));
    }
  }

  /** Apply one update from gradients keyed by variable name (variables without a gradient are left alone). */
  apply(grads: tf.NamedTensorMap): void {
    this.step++;
    const { learningRate: lr, beta1, beta2, epsilon, weightDecay } = this.options;
    const correction1 = 1 - beta1 ** this.step;
    const correction2 = 1 - beta2 ** this.step;
    tf.tidy(() => {
      for (const [name, variable] of this.variables) {
        const g = grads[name];
        if (!g) continue;
        const m = this.m.get(name)!;
        const v = this.v.get(name)!;
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const update = tf.div(tf.div(m, correction1), tf.add(tf.sqrt(tf.div(v, correction2)), epsilon));
        const decayed = weightDecay > 0 ? tf.mul(variable, 1 - lr * weightDecay) : variable;
        variable.assign(tf.sub(decayed, tf.mul(update, lr)));
      }
    });
  }

  getState(): AdamWState {
    const m: Record<string, Float32Array> = {};
    const v: Record<string, Float32Array> = {};
    for (const name of this.variables.keys()) {
      m[name] = this.m.get(name)!.dataSync() as Float32Array;
      v[name] = this.v.get(name)!.dataSync() as Float32Array;
    }
    return { step: this.step, m, v };
  }

  /** Restore a saved state; every variable must be present with the same size. */
  setState(state: AdamWState): void {
    for (const [name, variable] of this.variables) {
      const m = state.m[name];
      const v = state.v[name];
      if (!m || !v || m.length !== variable.size || v.length !== variable.size) {
        throw new Error(`optimizer state does not match variable ${name}`);
      }
      tf.tidy(() => {
        this.m.get(name)!.assign(tf.tensor(m, variable.shape));
        this.v.get(name)!.assign(tf.tensor(v, variable.shape));
      });
    }
    this.step = state.step;
  }

  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
  }
}
