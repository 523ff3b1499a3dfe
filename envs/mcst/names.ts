// Entity names from several regions (the paper draws on 25+ regions and shows a few names per region in its
// Table 12; these lists are our own). A scenario takes all its names from one region, so accuracy can be broken down
// by region with the scenario structure unchanged. Names are single words, 3-8 letters, unique across regions, and
// none is an English word used elsewhere in the scenarios.

export const NAME_REGIONS: Readonly<Record<string, readonly string[]>> = {
  western: ['Emma', 'Noah', 'Olivia', 'Liam', 'Sophia', 'Jackson', 'Harper', 'Ethan', 'Chloe', 'Owen'],
  'east-asian': ['Yuki', 'Ming', 'Hana', 'Jin', 'Mei', 'Kenji', 'Soyeon', 'Haruto', 'Xiulan', 'Daiki'],
  african: ['Amara', 'Kofi', 'Zara', 'Jabari', 'Nia', 'Kwame', 'Chinedu', 'Ayodele', 'Thandiwe', 'Femi'],
  'south-asian': ['Priya', 'Arjun', 'Anika', 'Rohan', 'Diya', 'Kiran', 'Aanya', 'Vikram', 'Meera', 'Sanjay'],
  'latin-american': [
    'Sofia',
    'Diego',
    'Valentina',
    'Mateo',
    'Isabella',
    'Santiago',
    'Camila',
    'Joaquin',
    'Lucia',
    'Emilio',
  ],
  'middle-eastern': ['Layla', 'Omar', 'Yasmin', 'Karim', 'Noor', 'Tariq', 'Leila', 'Samir', 'Dalia', 'Rami'],
  'eastern-european': ['Milena', 'Dmitri', 'Katya', 'Bogdan', 'Zofia', 'Pavel', 'Irina', 'Marek', 'Vesna', 'Andrei'],
  nordic: ['Astrid', 'Erik', 'Freya', 'Lars', 'Ingrid', 'Sven', 'Sigrid', 'Nils', 'Maja', 'Bjorn'],
  'southeast-asian': ['Minh', 'Siti', 'Anh', 'Putri', 'Thanh', 'Rizal', 'Linh', 'Bayani', 'Dewi', 'Arif'],
};

export const REGION_KEYS = Object.keys(NAME_REGIONS);
