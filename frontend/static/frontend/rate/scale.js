// The 0-5 scale. Level names and descriptions come from the server (frontend/instructions.py)
// in the page's config, so the slider and the worked examples share one text.

export const MIN = 0;
export const MAX = 5;

/** The level nearest to a value: levels is [{level, name, detail}], lowest first. */
export function nearestLevel(levels, value) {
  const index = Math.min(levels.length - 1, Math.max(0, Math.round(value)));
  return levels[index];
}
