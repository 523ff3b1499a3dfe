// core/python-json.ts against Python's json module: every expected string below was printed by CPython 3's
// json.dumps (sort_keys=True, separators=(",", ":") or indent=2) on the same value, so a fingerprint computed here
// equals the MET-Bench harness's.
import { describe, expect, it } from 'vitest';
import { PyFloat, pyDumps, pyFloatRepr, pyLoads } from '../../core/python-json.ts';

describe('Python-compatible JSON', () => {
  it('writes floats as float.__repr__ does', () => {
    const cases: [number, string][] = [
      [0.1, '0.1'],
      [1e16, '1e+16'],
      [1e15, '1000000000000000.0'],
      [123456789012345680, '1.2345678901234568e+17'],
      [1e-4, '0.0001'],
      [1e-5, '1e-05'],
      [-0, '-0.0'],
      [2.5e-7, '2.5e-07'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [5e-324, '5e-324'],
      [100, '100.0'],
      [0.30000000000000004, '0.30000000000000004'],
    ];
    for (const [x, python] of cases) expect(pyFloatRepr(x)).toBe(python);
  });

  it('round-trips a JSON state the way json.loads then json.dumps(sort_keys=True) does', () => {
    const state =
      '{"pos": [1.0, 64.5, -3.25], "yaw": 90.0, "biome": "snowy_plains", "name": "caf\u00e9 \u{1F600}", "tick": 12345678901234567890, "tiny": 1e-05, "big": 1e16}';
    expect(pyDumps(pyLoads(state), { sortKeys: true })).toBe(
      '{"big":1e+16,"biome":"snowy_plains","name":"caf\\u00e9 \\ud83d\\ude00","pos":[1.0,64.5,-3.25],"tick":12345678901234567890,"tiny":1e-05,"yaw":90.0}',
    );
  });

  it('indents as json.dumps(indent=2), keeping key order and empty containers inline', () => {
    const value = {
      dataset: 'x',
      revision: null,
      split: 'test',
      actions: 3n,
      examples: [{ example_id: 'a\u00e9', source_row: 0n, fingerprint: 'ff' }],
      e: [],
      d: {},
    };
    expect(pyDumps(value, { indent: 2 })).toBe(
      '{\n  "dataset": "x",\n  "revision": null,\n  "split": "test",\n  "actions": 3,\n  "examples": [\n    {\n      "example_id": "a\\u00e9",\n      "source_row": 0,\n      "fingerprint": "ff"\n    }\n  ],\n  "e": [],\n  "d": {}\n}',
    );
  });

  it('keeps integers and floats apart and refuses what json.loads refuses', () => {
    expect(pyLoads('[2, 2.0, -0, 1E2]')).toEqual([2n, new PyFloat(2), 0n, new PyFloat(100)]);
    expect(pyDumps(pyLoads('[2, 2.0, "\\u007f\\n"]'))).toBe('[2,2.0,"\\u007f\\n"]');
    for (const bad of ['{"a":1,}', '[1 2]', "{'a':1}", '01', '"\u0001"', '[1]x'])
      expect(() => pyLoads(bad)).toThrow(SyntaxError);
  });
});
