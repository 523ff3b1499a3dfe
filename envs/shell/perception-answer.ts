// Reading a perception probe's answer as a shell swap: the probe asks which two shells an image swaps. Models write
// the pair in many ways ("1 swap 3", "shells 1 and 3", "3-1", "1 ↔ 3"); a swap is an unordered pair, so every such
// answer is written back as "a swap b" with a < b, the form the targets take.

const SHELL_SWAP = /^(?:shells?\s+)?([1-3])\s*(?:swap|-|,|and|↔|<->)\s*([1-3])$/;

/** The swap a cleaned answer names, as "a swap b" with a < b, or null when it names none (or a shell with itself). */
export function readShellSwap(cleaned: string): string | null {
  const m = SHELL_SWAP.exec(cleaned);
  if (!m || m[1] === m[2]) return null;
  const [a, b] = [m[1], m[2]].sort();
  return `${a} swap ${b}`;
}
