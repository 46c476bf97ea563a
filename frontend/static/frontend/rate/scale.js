// The rating scale in the project's own words. Level names carry no digits: the
// screen-reader text names the nearest level, never a number.

const SHARED = [
  { level: 0, name: "Unrelated" },
  { level: 1, name: "Same topic only" },
  { level: 2, name: "Some shared details" },
  { level: 3, name: "Roughly equivalent" },
  { level: 4, name: "Mostly equivalent" },
  { level: 5, name: "Equivalent" },
];

const DETAILS = {
  STS: [
    "The two sentences are about different things.",
    "Not equivalent; they only touch the same topic or a loosely related theme.",
    "Not equivalent, but they share some details: people, actions, objects or setting.",
    "Roughly the same meaning, but an important detail differs or is missing.",
    "Mostly the same meaning; only unimportant details differ.",
    "The two sentences mean the same thing.",
  ],
  SIS: [
    "The two pictures are completely dissimilar.",
    "Not the same kind of scene; only the general theme is related.",
    "Different scenes that share some details: people, actions, objects or background.",
    "Roughly the same kind of scene, but an important part differs or is missing.",
    "Mostly the same kind of scene; similar participants, actions, objects and background, small differences.",
    "Near-duplicate scenes, possibly seen from another viewpoint.",
  ],
  SITS: [
    "The sentence and the picture are completely unmatched.",
    "The sentence only shares the picture's general topic or theme.",
    "The sentence does not describe the picture, but names some of its details: people, actions, objects or background.",
    "The sentence roughly describes the picture, but gets an important detail wrong or leaves it out.",
    "The sentence describes the picture well; only unimportant details are off or missing.",
    "The sentence is an almost perfect description of the picture.",
  ],
};

export const MIN = 0;
export const MAX = 5;

/** Levels of a task kind: [{level, name, detail}], lowest first. */
export function levelsFor(kind) {
  const details = DETAILS[kind];
  if (!details) throw new Error(`unknown task kind ${kind}`);
  return SHARED.map((entry, i) => ({ ...entry, detail: details[i] }));
}

/** The level nearest to a value on the 0-5 scale. */
export function nearestLevel(kind, value) {
  const levels = levelsFor(kind);
  const index = Math.min(levels.length - 1, Math.max(0, Math.round(value)));
  return levels[index];
}
