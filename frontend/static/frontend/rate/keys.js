// What Enter does on the rating page and in the quiz, free of DOM code.
//
// Enter submits only from the slider (the Submit button submits by its own click). On
// every other control Enter keeps the control's meaning: Skip skips, Flag flags, the
// instructions' summary opens them. A page-wide "Enter submits" stored ratings that
// keyboard raters meant to skip or report.

/** The focused control, as the key rules know it. */
export const Focus = Object.freeze({ SLIDER: "slider", FLAG_NOTE: "flag-note", OTHER: "other" });

/** What the page does with an Enter key press.
 *
 * `focus` is a Focus value; `canSubmit`: a pair is on screen and the slider is set;
 * `canFlag`: a reason is chosen. Returns "submit" or "flag" (the page acts and keeps the
 * key from the focused element) or null (the focused element's own action runs, if any).
 */
export function enterAction(focus, { canSubmit, canFlag }) {
  if (focus === Focus.SLIDER) return canSubmit ? "submit" : null;
  // Enter in the flag's note sends the report, never the rating.
  if (focus === Focus.FLAG_NOTE) return canFlag ? "flag" : null;
  return null;
}
