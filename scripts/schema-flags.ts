// Command-line flags generated from a zod object schema, so that a config's fields are described once (TRL's habit):
// every field with a `.describe()` text becomes a flag named in kebab-case, of the field's type, its help line that
// text with the schema's default appended. The command validates only the flag's type; the values are checked by the
// schema itself when the config is resolved, so messages name the config field.
import type { Options } from 'yargs';
import { z } from 'zod';

/** A flag's value type; arrays are repeatable flags (`--reward a --reward b`). */
type FlagType = 'number' | 'string' | 'boolean' | 'numbers' | 'strings';

export interface SchemaFlag {
  /** The flag's name: the field's name in kebab-case (learningRate → learning-rate). */
  flag: string;
  /** The field it sets. */
  key: string;
  type: FlagType;
  /** The field's description, with its default when it has one. */
  describe: string;
}

/** One flag per described field of `schema`, in the schema's order. */
export function schemaFlags(schema: z.ZodObject): SchemaFlag[] {
  const defaults = schema.parse({}) as Record<string, unknown>;
  const flags: SchemaFlag[] = [];
  for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
    if (field.description === undefined) continue;
    flags.push({
      flag: kebab(key),
      key,
      type: flagType(field, key),
      describe: withDefault(field.description, defaults[key]),
    });
  }
  return flags;
}

/** yargs option specs for the flags, in one help group. */
export function flagOptions(flags: readonly SchemaFlag[], group: string): Record<string, Options> {
  return Object.fromEntries(
    flags.map((f) => {
      const spec: Options =
        f.type === 'numbers' || f.type === 'strings'
          ? { type: f.type === 'numbers' ? 'number' : 'string', array: true, describe: f.describe, group }
          : { type: f.type, describe: f.describe, group };
      return [f.flag, spec];
    }),
  );
}

/** zod shape for the parsed flags: each optional, of its type. */
export function flagShape(flags: readonly SchemaFlag[]): Record<string, z.ZodOptional<z.ZodType>> {
  const of = (type: FlagType): z.ZodType =>
    type === 'number'
      ? z.number()
      : type === 'boolean'
        ? z.boolean()
        : type === 'string'
          ? z.string()
          : z.array(type === 'numbers' ? z.number() : z.string());
  return Object.fromEntries(flags.map((f) => [f.flag, of(f.type).optional()]));
}

/** The schema fields set by the given flags (camelCase keys), leaving out flags not given. */
export function valuesFromFlags(
  flags: readonly SchemaFlag[],
  parsed: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { flag, key } of flags) if (parsed[flag] !== undefined) out[key] = parsed[flag];
  return out;
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The type of a field under its default and optional wrappers. */
function flagType(field: z.ZodType, key: string): FlagType {
  let inner: z.ZodType = field;
  while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
  if (inner instanceof z.ZodNumber) return 'number';
  if (inner instanceof z.ZodBoolean) return 'boolean';
  if (inner instanceof z.ZodString || inner instanceof z.ZodEnum) return 'string';
  if (inner instanceof z.ZodArray) {
    const element = inner.element as z.ZodType;
    if (element instanceof z.ZodNumber) return 'numbers';
    if (element instanceof z.ZodString) return 'strings';
  }
  throw new Error(`schemaFlags: field ${key} has a type no flag can give`);
}

/** The description with the default appended, so that `--help` cannot drift from the schema. */
function withDefault(describe: string, value: unknown): string {
  if (value === undefined) return describe;
  return `${describe} (default ${typeof value === 'boolean' ? (value ? 'on' : 'off') : Array.isArray(value) ? value.join(', ') : String(value)})`;
}
