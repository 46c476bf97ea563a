// Sorting the rater table: pure, no DOM. A cell's sort value is a string from data-sort;
// an empty one (no number yet) always goes last, whichever the direction.

export function compareValues(a, b, type) {
  if (type === "number") return Number(a) - Number(b);
  return a.localeCompare(b, undefined, { sensitivity: "base", numeric: true });
}

export function sortRows(rows, valueOf, type, direction) {
  const sign = direction === "descending" ? -1 : 1;
  return [...rows].sort((x, y) => {
    const a = valueOf(x);
    const b = valueOf(y);
    if (a === "" || b === "") return (a === "") - (b === "");
    return sign * compareValues(a, b, type);
  });
}

// A first click sorts numbers largest first (what one looks for in a rater table) and
// text A to Z; a second click on the same column reverses.
export function nextDirection(current, type) {
  if (current === "ascending") return "descending";
  if (current === "descending") return "ascending";
  return type === "number" ? "descending" : "ascending";
}
