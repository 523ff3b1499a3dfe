// How stale a rollout is, in TRL's terms (AsyncGRPOTrainer's max_staleness): the optimiser updates between the
// adapter that sampled it and the policy that trains on it. The policy of step s holds s − 1 updates, so a group
// sampled by adapter version v is (s − 1) − v updates old; synchronous GRPO trains on staleness 0 only.

export function staleness(step: number, version: number): number {
  return step - 1 - version;
}

/** Indices of the groups (by the adapter version of each) more than `maxStaleness` updates older than step's policy. */
export function staleGroups(step: number, versions: readonly number[], maxStaleness: number): number[] {
  return versions.flatMap((v, g) => (staleness(step, v) > maxStaleness ? [g] : []));
}
