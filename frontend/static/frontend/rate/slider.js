// A continuous 0-5 slider that never shows its value.
//
// - No default position: the handle is hidden and `value` is null until the rater sets it.
// - The value lives only in this closure. The handle is placed through an adopted
//   stylesheet, so no attribute or text in the page carries a number derived from it.
// - Keyboard: arrows move in fine steps, shift+arrows (and PageUp/PageDown) in coarse
//   steps, Home/End go to the ends. Screen readers hear the nearest level's name.
import { MAX, MIN, nearestLevel } from "./scale.js";

const FINE_STEP = 0.05;
const COARSE_STEP = 0.5;

export function createSlider(root, { kind, levels, onChange }) {
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];

  root.classList.add("scale");
  root.dataset.kind = kind;
  root.innerHTML = "";
  // Native buttons are focusable without a tabindex attribute, keeping the markup free
  // of digits; role=slider tells assistive technology what it is.
  const track = document.createElement("button");
  track.type = "button";
  track.className = "scale-track";
  track.setAttribute("role", "slider");
  track.setAttribute("aria-label", "Similarity");
  track.setAttribute("aria-valuetext", "Not set");
  const fill = document.createElement("span");
  fill.className = "scale-fill";
  const handle = document.createElement("span");
  handle.className = "scale-handle";
  handle.setAttribute("aria-hidden", "true");
  track.append(fill, handle);

  const labels = document.createElement("ol");
  labels.className = "scale-labels";
  // Ids carry letters only: no digit anywhere in the slider's markup.
  const idFor = (level) => `scale-detail-${"abcdef"[levels.indexOf(level)]}`;
  for (const level of levels) {
    const item = document.createElement("li");
    item.className = "scale-label";
    item.dataset.level = level.name;
    // Plain text, not buttons: six Tab stops that do nothing would stand between the
    // slider and Submit. Screen readers still read the list, and the slider's value
    // text names the nearest level and is described by its detail.
    const name = document.createElement("span");
    name.className = "scale-name";
    name.textContent = level.name;
    const detail = document.createElement("span");
    detail.className = "scale-detail";
    detail.id = idFor(level);
    detail.textContent = level.detail;
    item.append(name, detail);
    labels.append(item);
  }
  // Nothing hovers on a touch screen: a tapped name shows its description until another
  // name is tapped or the handle moves (then the nearest level's shows, as with a mouse).
  labels.addEventListener("click", (event) => {
    const item = event.target.closest(".scale-name")?.parentElement;
    if (!item || event.pointerType === "mouse") return;
    pick(item);
  });
  function pick(item) {
    for (const other of labels.children) other.classList.toggle("picked", other === item);
  }
  root.append(track, labels);

  let value = null;
  let dragging = false;

  function render() {
    // Each pair starts with no level marked: a mark left from the previous pair would
    // hint where to put this one.
    const level = value === null ? null : nearestLevel(levels, value);
    for (const item of labels.children) {
      item.classList.toggle("nearest", item.dataset.level === level?.name);
    }
    if (level === null) {
      root.dataset.state = "unset";
      sheet.replaceSync("");
      track.setAttribute("aria-valuetext", "Not set");
      track.removeAttribute("aria-describedby");
      return;
    }
    root.dataset.state = "set";
    const percent = ((value - MIN) / (MAX - MIN)) * 100;
    sheet.replaceSync(`.scale-handle { left: ${percent}%; } .scale-fill { width: ${percent}%; }`);
    track.setAttribute("aria-valuetext", level.name);
    track.setAttribute("aria-describedby", idFor(level));
  }

  function set(next, source) {
    const clamped = Math.min(MAX, Math.max(MIN, next));
    if (clamped === value) return;
    value = clamped;
    pick(null);
    render();
    onChange?.(value, source);
  }

  function fromPointer(event) {
    const box = track.getBoundingClientRect();
    return MIN + ((event.clientX - box.left) / box.width) * (MAX - MIN);
  }

  track.addEventListener("pointerdown", (event) => {
    dragging = true;
    track.setPointerCapture(event.pointerId);
    track.focus();
    set(fromPointer(event), "pointer");
  });
  track.addEventListener("pointermove", (event) => {
    if (dragging) set(fromPointer(event), "drag");
  });
  const stop = () => {
    dragging = false;
  };
  track.addEventListener("pointerup", stop);
  track.addEventListener("pointercancel", stop);

  track.addEventListener("keydown", (event) => {
    const coarse = event.shiftKey;
    const step = coarse ? COARSE_STEP : FINE_STEP;
    const start = value ?? (MIN + MAX) / 2;
    const moves = {
      ArrowRight: start + step,
      ArrowUp: start + step,
      ArrowLeft: start - step,
      ArrowDown: start - step,
      PageUp: start + COARSE_STEP,
      PageDown: start - COARSE_STEP,
      Home: MIN,
      End: MAX,
    };
    if (!(event.key in moves)) return;
    event.preventDefault();
    // From the unset state an arrow only places the handle in the middle, so a rater
    // never starts from an end they did not choose; Home and End choose an end.
    const jumps = event.key === "Home" || event.key === "End";
    set(value === null && !jumps ? start : moves[event.key], "keyboard");
  });

  render();
  return {
    get value() {
      return value;
    },
    reset() {
      value = null;
      pick(null);
      render();
    },
    focus() {
      track.focus();
    },
    hasFocus() {
      return document.activeElement === track;
    },
  };
}
