// The twelve MCST domains (paper Table 2: Office, Home, Healthcare, Education, Travel, Retail, Restaurant,
// Hospitality, Recreation, Cultural, Manufacturing, Technology). The paper lists only a few objects per domain and
// part of the Office ontology, so the lists here are our own: objects that a person can carry, places with the
// preposition used for objects there ("on the desk", "in the drawer"), and domain-specific verb variants added to the
// generic ones in text.ts. Within a domain, no object name is a place name and no name contains another's last word
// as a separate entry, so references stay unambiguous.

export interface Place {
  name: string;
  /** Preposition for an object there: "on", "in", "at", "under". */
  prep: string;
}

/** A verb as [third person singular, base form], e.g. ["picks up", "pick up"]. */
export type Verb = readonly [string, string];

export interface DomainSpec {
  key: string;
  /** "in the office": where the scenario happens. */
  setting: string;
  objects: readonly string[];
  places: readonly Place[];
  verbs: { pick: readonly Verb[]; place: readonly Verb[]; give: readonly Verb[] };
}

const p = (name: string, prep: string): Place => ({ name, prep });

export const DOMAINS: readonly DomainSpec[] = [
  {
    key: 'office',
    setting: 'in the office',
    objects: ['stapler', 'badge', 'keyboard', 'pen', 'notebook', 'folder', 'binder', 'laptop', 'mouse', 'charger', 'calendar', 'report', 'mug', 'highlighter'],
    places: [p('desk', 'on'), p('drawer', 'in'), p('shelf', 'on'), p('filing cabinet', 'in'), p('printer', 'on'), p('conference table', 'on'), p('mail tray', 'in')],
    verbs: { pick: [['collects', 'collect']], place: [['files', 'file']], give: [['passes', 'pass']] },
  },
  {
    key: 'home',
    setting: 'at home',
    objects: ['remote', 'pillow', 'spatula', 'keys', 'magazine', 'blanket', 'candle', 'towel', 'cup', 'novel', 'charger', 'vase', 'wallet', 'umbrella'],
    places: [p('sofa', 'on'), p('kitchen counter', 'on'), p('fridge', 'in'), p('bed', 'on'), p('closet', 'in'), p('coffee table', 'on'), p('bathtub', 'in')],
    verbs: { pick: [['fetches', 'fetch']], place: [['leaves', 'leave']], give: [['tosses', 'toss']] },
  },
  {
    key: 'healthcare',
    setting: 'at the clinic',
    objects: ['stethoscope', 'chart', 'syringe', 'thermometer', 'bandage', 'clipboard', 'glove box', 'pill bottle', 'scalpel', 'x-ray', 'mask', 'gauze', 'inhaler', 'tablet'],
    places: [p('bedside table', 'on'), p('supply cart', 'on'), p('cabinet', 'in'), p('nursing station', 'at'), p('sink', 'by'), p('tray', 'on'), p('locker', 'in')],
    verbs: { pick: [['collects', 'collect']], place: [['stows', 'stow']], give: [['hands over', 'hand over']] },
  },
  {
    key: 'education',
    setting: 'at school',
    objects: ['textbook', 'microscope', 'chalk', 'eraser', 'calculator', 'ruler', 'globe', 'beaker', 'atlas', 'marker', 'worksheet', 'protractor', 'flashcard', 'dictionary'],
    places: [p('lab bench', 'on'), p('bookshelf', 'on'), p('teacher desk', 'on'), p('cupboard', 'in'), p('windowsill', 'on'), p('backpack', 'in'), p('whiteboard ledge', 'on')],
    verbs: { pick: [['borrows', 'borrow']], place: [['stores', 'store']], give: [['lends', 'lend']] },
  },
  {
    key: 'travel',
    setting: 'at the airport',
    objects: ['passport', 'boarding pass', 'luggage tag', 'suitcase', 'neck pillow', 'guidebook', 'sunglasses', 'water bottle', 'headphones', 'visa', 'map', 'camera', 'snack bag', 'jacket'],
    places: [p('check-in counter', 'at'), p('bench', 'on'), p('security tray', 'in'), p('departure gate', 'at'), p('overhead bin', 'in'), p('kiosk', 'by'), p('cafe table', 'on')],
    verbs: { pick: [['collects', 'collect']], place: [['stows', 'stow']], give: [['passes', 'pass']] },
  },
  {
    key: 'retail',
    setting: 'in the store',
    objects: ['receipt', 'price tag', 'barcode scanner', 'credit card', 'coupon', 'gift card', 'shopping bag', 'hanger', 'sweater', 'shoebox', 'perfume', 'watch', 'catalog', 'belt'],
    places: [p('checkout', 'at'), p('display shelf', 'on'), p('fitting room', 'in'), p('stockroom', 'in'), p('service desk', 'at'), p('sale bin', 'in'), p('window display', 'in')],
    verbs: { pick: [['picks out', 'pick out']], place: [['stocks', 'stock']], give: [['hands', 'hand']] },
  },
  {
    key: 'restaurant',
    setting: 'at the restaurant',
    objects: ['menu', 'tray', 'napkin', 'ladle', 'teapot', 'pepper mill', 'wine glass', 'bread basket', 'order pad', 'candle', 'saucer', 'salad bowl', 'corkscrew', 'bill folder'],
    places: [p('dining table', 'on'), p('bar', 'at'), p('service window', 'at'), p('dish rack', 'in'), p('host stand', 'at'), p('pantry', 'in'), p('side station', 'at')],
    verbs: { pick: [['grabs', 'grab']], place: [['sets', 'set']], give: [['serves', 'serve']] },
  },
  {
    key: 'hospitality',
    setting: 'at the hotel',
    objects: ['key card', 'towel', 'room service menu', 'duffel bag', 'robe', 'slippers', 'minibar key', 'brochure', 'ice bucket', 'hair dryer', 'umbrella', 'newspaper', 'pillow', 'garment bag'],
    places: [p('front desk', 'at'), p('luggage cart', 'on'), p('guest room', 'in'), p('concierge desk', 'at'), p('laundry room', 'in'), p('lobby sofa', 'on'), p('elevator', 'in')],
    verbs: { pick: [['collects', 'collect']], place: [['leaves', 'leave']], give: [['delivers', 'deliver']] },
  },
  {
    key: 'recreation',
    setting: 'at the park',
    objects: ['frisbee', 'fishing rod', 'ball', 'racket', 'kite', 'skateboard', 'jump rope', 'helmet', 'whistle', 'water bottle', 'picnic basket', 'sunscreen', 'cap', 'shuttlecock'],
    places: [p('playground', 'at'), p('picnic table', 'on'), p('bleachers', 'on'), p('equipment shed', 'in'), p('sandbox', 'in'), p('dock', 'on'), p('bike rack', 'by')],
    verbs: { pick: [['grabs', 'grab']], place: [['drops', 'drop']], give: [['tosses', 'toss']] },
  },
  {
    key: 'cultural',
    setting: 'at the museum',
    objects: ['audio guide', 'ticket', 'painting', 'catalog', 'sculpture', 'brochure', 'lanyard', 'magnifier', 'postcard', 'program', 'sketchbook', 'vase', 'scroll', 'medal'],
    places: [p('gallery', 'in'), p('display case', 'in'), p('information desk', 'at'), p('gift shop', 'in'), p('archive', 'in'), p('pedestal', 'on'), p('coat check', 'at')],
    verbs: { pick: [['retrieves', 'retrieve']], place: [['displays', 'display']], give: [['lends', 'lend']] },
  },
  {
    key: 'manufacturing',
    setting: 'at the factory',
    objects: ['safety goggles', 'wrench', 'blueprint', 'hard hat', 'tape measure', 'drill', 'clipboard', 'gauge', 'screwdriver', 'work gloves', 'bolt bin', 'soldering iron', 'caliper', 'ear plugs'],
    places: [p('assembly line', 'at'), p('workbench', 'on'), p('tool rack', 'on'), p('storage bay', 'in'), p('loading dock', 'at'), p('inspection table', 'on'), p('parts shelf', 'on')],
    verbs: { pick: [['lifts', 'lift']], place: [['racks', 'rack']], give: [['passes', 'pass']] },
  },
  {
    key: 'technology',
    setting: 'at the tech lab',
    objects: ['USB drive', 'prototype', 'router', 'tablet', 'smartwatch', 'cable', 'circuit board', 'headset', 'webcam', 'hard drive', 'stylus', 'power bank', 'sensor', 'dev kit'],
    places: [p('server rack', 'on'), p('testing bench', 'on'), p('charging station', 'at'), p('supply closet', 'in'), p('standing desk', 'on'), p('anti-static bag', 'in'), p('demo table', 'on')],
    verbs: { pick: [['unplugs', 'unplug']], place: [['docks', 'dock']], give: [['passes', 'pass']] },
  },
];

export const DOMAIN_KEYS = DOMAINS.map((d) => d.key);

/** Object names that take a plural verb ("the keys are on the table"). */
const PLURAL_OBJECTS = new Set(['keys', 'headphones', 'sunglasses', 'safety goggles', 'work gloves', 'ear plugs', 'slippers']);

/** "is" or "are" for an object name. */
export function beFor(object: string): 'is' | 'are' {
  return PLURAL_OBJECTS.has(object) ? 'are' : 'is';
}

export function domainSpec(key: string): DomainSpec {
  const spec = DOMAINS.find((d) => d.key === key);
  if (!spec) throw new RangeError(`mcst: no domain ${key}`);
  return spec;
}
