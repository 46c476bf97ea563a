// Sortable tables: each column heading becomes a button (so keyboard users reach it with
// Tab and press it with Enter or Space); aria-sort tells screen readers the order.
import { nextDirection, sortRows } from "./sort.js";

export function makeSortable(table) {
  const headers = [...table.tHead.rows[0].cells];
  const body = table.tBodies[0];
  headers.forEach((th, index) => {
    if (th.hasAttribute("data-nosort")) return; // buttons, not values
    const button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.append(...th.childNodes);
    th.append(button);
    button.addEventListener("click", () => {
      const type = th.dataset.type || "text";
      const direction = nextDirection(th.getAttribute("aria-sort"), type);
      for (const other of headers) other.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", direction);
      const rows = sortRows([...body.rows], (row) => row.cells[index].dataset.sort ?? "", type, direction);
      body.append(...rows);
    });
  });
}
