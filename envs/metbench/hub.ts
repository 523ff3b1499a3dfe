// `--dataset hf://vanyacohen/MET-Bench-Chess@<revision>`: the shards of a Hub dataset in the user's Hugging Face cache
// (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub, the layout Python's huggingface_hub uses, so both
// tools share downloads), fetched with @huggingface/hub when they are not there yet. Without @revision the harness's
// pinned revision is used (envs/metbench/official.ts RELEASES). HF_TOKEN, when set, authenticates the requests and is
// never written anywhere; HF_ENDPOINT points at another server (a mirror, or the tests' local one); HF_HUB_OFFLINE=1
// reads the cache only; HF_HUB_DOWNLOAD_TIMEOUT bounds each wait on the server (seconds, default 10; bounded-fetch.ts). Only config "full" is fetched (its test split, and its train split when it has one).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import type { Dataset } from '../dataset-reader.ts';
import { boundedFetch, hubTimeoutIn, hubTimeoutSeconds } from './bounded-fetch.ts';
import {
  RELEASES,
  selectOfficial,
  splitShards,
  type OfficialSelection,
  type OfficialSource,
  type SelectOptions,
} from './official.ts';

interface HubAddress {
  repo: string;
  revision: string;
}

export function isHubAddress(path: string): boolean {
  return path.startsWith('hf://');
}

/** hf://[datasets/]owner/name[@revision]; the revision defaults to the harness's pin for the three official sets. */
function parseHubAddress(address: string): HubAddress {
  const m = /^hf:\/\/(?:datasets\/)?([A-Za-z0-9][\w.-]*\/[\w.-]+?)(?:@([\w./-]+))?\/?$/.exec(address);
  if (!m) throw new UserError(`--dataset ${address}: expected hf://owner/name or hf://owner/name@revision`);
  const repo = m[1];
  const pinned = Object.values(RELEASES).find((r) => r.repo.toLowerCase() === repo.toLowerCase());
  const revision = m[2] ?? pinned?.revision;
  if (revision === undefined)
    throw new UserError(
      `--dataset ${address}: name a revision (hf://${repo}@<commit>); only the MET-Bench sets have a pinned one`,
    );
  return { repo, revision };
}

function hubCacheDir(): string {
  if (process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  const home =
    process.env.HF_HOME ?? join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? '.', '.cache'), 'huggingface');
  return join(home, 'hub');
}

/** The snapshot folder a commit's files live in. */
function snapshotDir(cache: string, address: HubAddress): string {
  return join(cache, `datasets--${address.repo.replace('/', '--')}`, 'snapshots', address.revision);
}

const COMMIT = /^[0-9a-f]{40}$/;
const CONFIG_SHARD = /^full\/(?:(?:test|train)-[^/]*|(?:test|train)\/[^/]*)\.parquet$/;

/**
 * The local folder holding the dataset's shards at that revision: the cache snapshot when it already has the test
 * split (no request is made), else downloaded into the cache. Failures are one UserError.
 */
async function resolveHubDataset(
  address: string,
  splits: ('test' | 'train')[] = ['test'],
): Promise<{ dir: string; source: OfficialSource }> {
  const hub = parseHubAddress(address);
  const cache = hubCacheDir();
  const cached = snapshotDir(cache, hub);
  if (COMMIT.test(hub.revision) && existsSync(cached) && splits.every((s) => splitShards(cached, s).length > 0))
    return { dir: cached, source: { repo: hub.repo, revision: hub.revision } };
  if (process.env.HF_HUB_OFFLINE === '1' || process.env.HF_HUB_OFFLINE === 'true') {
    throw new UserError(
      `--dataset ${address}: revision ${hub.revision} of ${hub.repo} is not in the Hugging Face cache (${cache}) and HF_HUB_OFFLINE is set`,
    );
  }
  const { listFiles, downloadFileToCacheDir } = await import('@huggingface/hub');
  const repo = { type: 'dataset' as const, name: hub.repo };
  const hubUrl = process.env.HF_ENDPOINT?.replace(/\/+$/, '') || undefined;
  const accessToken = process.env.HF_TOKEN || undefined;
  const credentials = accessToken ? { accessToken } : {};
  // Every request bounded (HF_HUB_DOWNLOAD_TIMEOUT): Node's own fetch limit is 300 s for the headers, none for a body.
  const timeoutSeconds = hubTimeoutSeconds();
  const fetch = boundedFetch(timeoutSeconds * 1000);
  // @huggingface/hub announces each download with console.debug, on stdout where the results table goes.
  const debug = console.debug;
  console.debug = () => {};
  try {
    const shards: string[] = [];
    for await (const entry of listFiles({
      repo,
      revision: hub.revision,
      recursive: true,
      hubUrl,
      fetch,
      ...credentials,
    })) {
      if (
        entry.type === 'file' &&
        CONFIG_SHARD.test(entry.path) &&
        splits.some((s) => entry.path.startsWith(`full/${s}`))
      )
        shards.push(entry.path);
    }
    if (!shards.some((p) => /^full\/test[-/]/.test(p)))
      throw new UserError(`--dataset ${address}: the repository has no config "full" test shards at ${hub.revision}`);
    let dir = '';
    for (const path of shards.sort()) {
      const local = await downloadFileToCacheDir({
        repo,
        path,
        revision: hub.revision,
        hubUrl,
        cacheDir: cache,
        fetch,
        ...credentials,
      });
      // The snapshot folder the shards land in (a branch name resolves to its commit there).
      if (!dir) dir = local.slice(0, local.length - path.length - 1);
    }
    const revision = /snapshots[/\\]([^/\\]+)$/.exec(dir)?.[1] ?? hub.revision;
    return { dir, source: { repo: hub.repo, revision } };
  } catch (error) {
    if (error instanceof UserError) throw error;
    const timeout = hubTimeoutIn(error);
    if (timeout)
      throw new UserError(
        `--dataset ${address}: cannot download: ${timeout.message}${timeout.name === 'HubTimeout' ? ` (HF_HUB_DOWNLOAD_TIMEOUT=${timeoutSeconds})` : ''}`,
      );
    throw new UserError(`--dataset ${address}: cannot download (${describe(error)})`);
  } finally {
    console.debug = debug;
  }
}

/** An error's message without anything that could carry the token. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const token = process.env.HF_TOKEN;
  return (token ? message.split(token).join('<HF_TOKEN>') : message).split('\n')[0];
}

/** A MET-Bench set named by hf:// address or local path, selected as the harness selects it. */
export async function readOfficialDataset(
  path: string,
  options: Omit<SelectOptions, 'source'>,
): Promise<OfficialSelection> {
  if (!isHubAddress(path)) return selectOfficial(path, options);
  const { dir, source } = await resolveHubDataset(path, [options.split ?? 'test']);
  return selectOfficial(dir, { ...options, source });
}

/**
 * What `metrl train --dataset` trains on from a MET-Bench set: every distinct task of its train split (cut to T, as
 * the test tasks are), leaving out tasks that are also test tasks, and the test selection (up to `testLimit`) to
 * measure progress on. A set without train shards is one UserError.
 */
export async function readOfficialTrainingSet(
  path: string,
  options: { actions: number; testLimit: number },
): Promise<Dataset> {
  const where = isHubAddress(path)
    ? await resolveHubDataset(path, ['test', 'train'])
    : { dir: path, source: undefined };
  if (splitShards(where.dir, 'train').length === 0)
    throw new UserError(
      `--dataset ${path}: no train shards (full/train-*.parquet) to train on; the official test split is for evaluation`,
    );
  const common = { actions: options.actions, images: false, source: where.source, atMost: true };
  const test = await selectOfficial(where.dir, { ...common, limit: options.testLimit });
  const train = await selectOfficial(where.dir, {
    ...common,
    split: 'train',
    limit: Infinity,
    exclude: new Set(test.episodes.map((e) => e.meta.fingerprint as string)),
  });
  return {
    file: path,
    format: 'metbench',
    domain: test.domain,
    train: train.episodes.map((episode) => ({ episode })),
    test: test.episodes.map((episode) => ({ episode })),
  };
}
