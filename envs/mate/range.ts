// Count options given as one whole number or a range ("5", 5, "3-10"), validated with zod; shared by MATE's and
// REM's --objects and --duplicates.
import { z } from 'zod';

/** "5", 5 or "3-10" → [lo, hi], checked against [min, max]. */
export function rangeSchema(min: number, max: number) {
  return z.union([z.number(), z.string()]).transform((v, ctx): [number, number] => {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(String(v));
    const lo = m ? Number(m[1]) : NaN;
    const hi = m ? Number(m[2] ?? m[1]) : NaN;
    if (!m || !(lo >= min && hi <= max && lo <= hi)) {
      ctx.addIssue({ code: 'custom', message: `must be a whole number or a range A-B within ${min}-${max}` });
      return z.NEVER;
    }
    return [lo, hi];
  });
}
