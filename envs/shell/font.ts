// A tiny bitmap font for the shell labels 1, 2, 3. Pixel glyphs stay crisp and readable at the built-in model's
// 64 px (3×5 cells, drawn 2 px per cell) and at the 512 px chat size (5×7 cells, drawn about 10 px per cell), and
// their solid colours make the labels exactly decodable from pixels. Glyphs are drawn by hand for this project.

interface Glyph {
  width: number;
  height: number;
  /** Row-major, true = ink. */
  cells: boolean[];
}

export interface PixelFont {
  name: string;
  width: number;
  height: number;
  glyphs: Record<string, Glyph>;
}

function glyph(rows: string[]): Glyph {
  return {
    width: rows[0].length,
    height: rows.length,
    cells: rows
      .join('')
      .split('')
      .map((c) => c === '#'),
  };
}

/** 3×5 cells: for small images. */
export const FONT_3X5: PixelFont = {
  name: '3x5',
  width: 3,
  height: 5,
  glyphs: {
    '1': glyph(['.#.', '##.', '.#.', '.#.', '###']),
    '2': glyph(['##.', '..#', '.#.', '#..', '###']),
    '3': glyph(['##.', '..#', '.#.', '..#', '##.']),
  },
};

/** 5×7 cells: for chat-size images. */
export const FONT_5X7: PixelFont = {
  name: '5x7',
  width: 5,
  height: 7,
  glyphs: {
    '1': glyph(['..#..', '.##..', '..#..', '..#..', '..#..', '..#..', '.###.']),
    '2': glyph(['.###.', '#...#', '....#', '...#.', '..#..', '.#...', '#####']),
    '3': glyph(['#####', '...#.', '..#..', '...#.', '....#', '#...#', '.###.']),
  },
};
