// Chess prompts: the reference wording and layout, images as references followed by their caption, few-shot turns,
// and the single-image perception probe.
import { describe, expect, it } from 'vitest';
import { chessEnv } from '../../envs/chess/index.ts';
import { QUESTIONS } from '../../envs/chess/prompt.ts';
import { toChatMessages } from '../../core/chat.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const episode: Episode = {
  id: 'chess-test-00000-abcdef01',
  domain: 'chess',
  split: 'test',
  initialState: START,
  actions: [
    { text: 'e2e4', modality: 'text' },
    { text: 'e7e5', modality: 'image' },
  ],
  target: 'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2',
  meta: {},
};

function text(messages: PromptMessage[]): string {
  return messages
    .flatMap((m) => m.parts)
    .map((p) => (p.type === 'text' ? p.text : `<image ${p.ref.index}>`))
    .join('');
}

describe('chess prompts', () => {
  it('zero-shot follows the reference layout, with the image and its caption in place of the move', () => {
    const messages = chessEnv.prompt(episode, { style: 'zero-shot', shots: [] });
    expect(messages).toHaveLength(1);
    expect(messages[0].role).toBe('user');
    // The harness's zero-shot question and layout (metbench/prompts.py, ICML 2026 version), written out.
    const question =
      'Now what is the final FEN? Only output the FEN and nothing else. If there are no moves you must still just predict the FEN. Start the next message with FINAL ANSWER:';
    expect(QUESTIONS['zero-shot']).toBe(question);
    expect(text(messages)).toBe(
      `You are a helpful assistant that tracks chess moves in a game and produces the final FEN.\n\n${question}\nThe initial state is: ${START}\nHere are the moves played:\n` +
        `e2e4\n<image 1>The move is from the green square to the red square.\n\n${question}`,
    );
    const image = messages[0].parts.find((p) => p.type === 'image');
    expect(image?.type === 'image' && image.ref.episode === episode && image.ref.index === 1).toBe(true);
  });

  it('uses the reference questions', () => {
    expect(text(chessEnv.prompt(episode, { style: 'cot', shots: [] }))).toContain(
      'What is the final FEN? Think step by step then output the final FEN as FINAL ANSWER: [FEN HERE].',
    );
    expect(text(chessEnv.prompt(episode, { style: 'zero-shot', shots: [] }))).toContain(
      'Start the next message with FINAL ANSWER:',
    );
    expect(text(chessEnv.prompt(episode, { style: 'fen-trace', shots: [] }))).toContain(
      'Track the game one move at a time. After each move, write the board placement FEN using exactly this format: BOARD_AFTER_MOVE_1: [board placement FEN], BOARD_AFTER_MOVE_2: [board placement FEN], and so on.',
    );
  });

  it('few-shot shows each solved example as a user turn and its answer before the question', () => {
    const shot = { ...episode, id: 'shot', actions: [{ text: 'd2d4', modality: 'text' as const }], target: 'X' };
    const messages = chessEnv.prompt(episode, { style: 'few-shot', shots: [shot, shot] });
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(text([messages[1]])).toBe('FINAL ANSWER: X');
    expect(text([messages[0]])).toContain('d2d4');
  });

  it('turns into OpenAI chat messages with image_url parts', () => {
    const chat = toChatMessages(
      chessEnv.prompt(episode, { style: 'zero-shot', shots: [] }),
      (ref) => `images/${ref.index}.png`,
    );
    const content = chat[0].content;
    expect(Array.isArray(content)).toBe(true);
    expect((content as Array<{ type: string }>).map((p) => p.type)).toEqual(['text', 'image_url', 'text']);
  });

  it('rejects an unknown style', () => {
    expect(() => chessEnv.prompt(episode, { style: 'poetry', shots: [] })).toThrow(/unknown chess prompt style/);
  });

  it('perception probe: one image of the move, the UCI as the answer (paper Figure 8)', () => {
    const probe = chessEnv.perceptionProbe!(episode, 0);
    expect(probe.target).toBe('e2e4');
    expect(probe.messages).toHaveLength(1);
    const parts = probe.messages[0].parts;
    expect(parts.filter((p) => p.type === 'image')).toHaveLength(1);
    expect(text(probe.messages)).toContain('In UCI notation, what move does the arrow on the chessboard represent?');
    expect(chessEnv.renderAction(episode, 0, 64).width).toBe(64);
  });
});
