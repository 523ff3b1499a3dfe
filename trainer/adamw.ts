// AdamW (Loshchilov & Hutter: Adam with decoupled weight decay) on tfjs variables, written out rather than taken
// from tf.train.adam because a training checkpoint must save and restore the exact optimiser state — first and
// second moments per variable and the step count — so that a resumed run continues bit for bit.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../core/errors.ts';

export interface AdamWOptions {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
}

/**
 * The optimiser state as plain arrays, in the order of the variables given to the constructor (what a checkpoint
 * stores). Positions, not tfjs variable names, identify variables: tfjs names unnamed variables by a process-wide
 * counter, which differs between a run and its resumption.
 */
export interface AdamWState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

export class AdamW {
  private readonly m: tf.Variable[];
  private readonly v: tf.Variable[];
  /** Updates applied so far (bias correction uses it). */
  step = 0;

  constructor(
    readonly variables: tf.Variable[],
    readonly options: AdamWOptions,
  ) {
    if (new Set(variables.map((v) => v.name)).size !== variables.length)
      throw new Error('AdamW: variable names must be unique');
    this.m = variables.map((v) => tf.variable(tf.zerosLike(v), false));
    this.v = variables.map((v) => tf.variable(tf.zerosLike(v), false));
  }

  /** Apply one update from gradients keyed by variable name (variables without a gradient are left alone). */
  apply(grads: tf.NamedTensorMap): void {
    this.step++;
    const { learningRate: lr, beta1, beta2, epsilon, weightDecay } = this.options;
    const correction1 = 1 - beta1 ** this.step;
    const correction2 = 1 - beta2 ** this.step;
    tf.tidy(() => {
      this.variables.forEach((variable, i) => {
        const g = grads[variable.name];
        if (!g) return;
        const m = this.m[i];
        const v = this.v[i];
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const update = tf.div(tf.div(m, correction1), tf.add(tf.sqrt(tf.div(v, correction2)), epsilon));
        const decayed = weightDecay > 0 ? tf.mul(variable, 1 - lr * weightDecay) : variable;
        variable.assign(tf.sub(decayed, tf.mul(update, lr)));
      });
    });
  }

  getState(): AdamWState {
    return {
      step: this.step,
      m: this.m.map((t) => t.dataSync() as Float32Array),
      v: this.v.map((t) => t.dataSync() as Float32Array),
    };
  }

  /** Restore a saved state; every variable must be present with the same size. */
  setState(state: AdamWState): void {
    if (state.m.length !== this.variables.length || state.v.length !== this.variables.length) {
      throw new UserError(
        `optimizer state holds ${state.m.length} variables, the adapters have ${this.variables.length}`,
      );
    }
    this.variables.forEach((variable, i) => {
      const m = state.m[i];
      const v = state.v[i];
      if (m.length !== variable.size || v.length !== variable.size) {
        throw new UserError(
          `optimizer state of variable ${i} has ${m.length} values, the adapter has ${variable.size}`,
        );
      }
      tf.tidy(() => {
        this.m[i].assign(tf.tensor(m, variable.shape));
        this.v[i].assign(tf.tensor(v, variable.shape));
      });
    });
    this.step = state.step;
  }

  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
  }
}
