"""Tables from vlm-run.sh's results.jsonl: ../shared/peers/hf/summarize.py's (phase x side x threads, ratios metrl /
torch; the lines are in its schema), then the vision tower's share of each rollout (vision tower + connector on the
one 512 px image, median wall and CPU seconds per side, engine, threads, N).
Usage: /usr/bin/python3 vlm_summarize.py OUT/results.jsonl"""
import json
import os
import runpy
import statistics
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
runpy.run_path(os.path.join(HERE, '..', '..', '..', 'shared', 'peers', 'hf', 'summarize.py'), run_name='__main__')

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith('{')]
groups = defaultdict(list)
for r in rows:
    groups[(r['side'], r['engine'], r['threads'], r['completionTokens'])].append(r)
print()
print('vision tower + connector (within rollout), one image per step')
print('| side | engine | threads | N | vision wall s (median) | vision CPU s | share of rollout (wall) | samples (wall s) |')
print('|---|---|---|---|---|---|---|---|')
for key in sorted(groups, key=lambda k: (k[3], k[0] != 'torch', k[1], k[2])):
    steps = [s for r in groups[key] for s in r['steps'] if 'vision' in s]
    if not steps:
        continue
    w = statistics.median(s['vision'] for s in steps)
    c = statistics.median(s['cpu']['vision'] for s in steps)
    share = statistics.median(s['vision'] / s['rollout'] for s in steps)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {w:.2f} | {c:.2f} | {share:.2f} | {[round(s['vision'], 2) for s in steps]} |")
