// Object vocabularies for the boxes domain (Kim & Schuster). The paper's 100 nouns are not printed, so these lists are
// our own: COMMON_NOUNS are everyday things that plausibly fit in a box (100, single words), RARE_NOUNS are uncommon
// object names for the Vocab and AltForms splits (disjoint from the common list, also 100), and ADJECTIVES modify nouns
// in the AmbiRef split ("the big bell", "the red bell"). No noun contains the word "and", which answers use as a
// separator, and none is "box", "container", "nothing" or "empty".

export const COMMON_NOUNS: readonly string[] = [
  'apple', 'bag', 'ball', 'banana', 'battery', 'bell', 'belt', 'blanket', 'bone', 'book',
  'boot', 'bottle', 'bowl', 'bread', 'brick', 'brush', 'bucket', 'button', 'cake', 'camera',
  'candle', 'cap', 'card', 'carrot', 'chain', 'cheese', 'clock', 'coat', 'coin', 'comb',
  'cookie', 'cup', 'disk', 'doll', 'dress', 'drum', 'egg', 'envelope', 'fan', 'feather',
  'flag', 'flower', 'fork', 'glass', 'glove', 'guitar', 'hammer', 'hat', 'jacket', 'jar',
  'key', 'kettle', 'knife', 'lamp', 'leaf', 'lemon', 'letter', 'lock', 'magnet', 'map',
  'mask', 'medal', 'mirror', 'mug', 'nail', 'napkin', 'necklace', 'needle', 'notebook', 'onion',
  'orange', 'painting', 'pan', 'paper', 'pen', 'pencil', 'phone', 'photo', 'pillow', 'pipe',
  'plate', 'potato', 'purse', 'radio', 'ring', 'rope', 'ruler', 'scarf', 'shell', 'shirt',
  'shoe', 'sock', 'spoon', 'stamp', 'stone', 'tape', 'ticket', 'towel', 'watch', 'wire',
];

export const RARE_NOUNS: readonly string[] = [
  'pomelo', 'furby', 'spork', 'kumquat', 'abacus', 'ocarina', 'monocle', 'thimble', 'kazoo', 'zither',
  'gyroscope', 'astrolabe', 'sextant', 'trowel', 'ladle', 'colander', 'whisk', 'lorgnette', 'quill', 'inkwell',
  'sporran', 'fez', 'beret', 'tiara', 'diadem', 'brooch', 'cameo', 'locket', 'amulet', 'talisman',
  'figurine', 'harmonica', 'metronome', 'kaleidoscope', 'periscope', 'hourglass', 'barometer', 'protractor', 'slingshot', 'boomerang',
  'pinwheel', 'rattle', 'durian', 'rambutan', 'lychee', 'persimmon', 'quince', 'kohlrabi', 'jicama', 'yuzu',
  'tamarind', 'loquat', 'dreidel', 'domino', 'meeple', 'shuttlecock', 'kettlebell', 'gavel', 'scepter', 'chalice',
  'goblet', 'tankard', 'carafe', 'decanter', 'tureen', 'ramekin', 'cloche', 'trivet', 'mortar', 'pestle',
  'grater', 'corkscrew', 'nutcracker', 'ukulele', 'mandolin', 'castanet', 'tambourine', 'maraca', 'cowbell', 'piccolo',
  'theremin', 'kalimba', 'zoetrope', 'stereoscope', 'phonograph', 'gramophone', 'dictaphone', 'pager', 'cassette', 'tamagotchi',
  'samovar', 'lute', 'bonsai', 'cufflink', 'snowglobe', 'quoit', 'bobbin', 'crampon', 'sundial', 'yo-yo',
];

/** Adjectives for AmbiRef objects: colours and sizes, as in the paper's examples. */
export const ADJECTIVES: readonly string[] = ['red', 'blue', 'green', 'yellow', 'black', 'white', 'big', 'small'];
