// The Env fields of a domain whose actions exist only as text (boxes, MCST): the 'text' modality alone, no image
// sizes, and a renderAction that refuses with a UserError naming the domain.
import { UserError } from '../core/errors.ts';
import type { Domain } from '../core/episode.ts';
import type { Env } from './env.ts';

export function textOnlyActions(domain: Domain): Pick<Env, 'modalities' | 'imageSizes' | 'renderAction'> {
  return {
    modalities: ['text'],
    imageSizes: { chat: 0, model: 0 },
    renderAction() {
      throw new UserError(
        `${domain}: the domain has text actions only; there are no image actions to render (use --modality text)`,
      );
    },
  };
}
