// The failure review's state apart from the page: which marks are ticked (a fair
// alternative stands alone: ticking it clears the misreadings, ticking a misreading
// clears it) and the submission sent for a review.
export const FAIR_ALTERNATIVE = "fair_alternative";

/** The marks ticked after ``mark`` was set to ``checked``, from the ticked ``marks``. */
export function toggleMark(marks, mark, checked) {
  if (!checked) return marks.filter((m) => m !== mark);
  if (mark === FAIR_ALTERNATIVE) return [FAIR_ALTERNATIVE];
  return [...marks.filter((m) => m !== FAIR_ALTERNATIVE && m !== mark), mark];
}

/** The review API's submit body for one shown review. */
export function reviewSubmission({ score, marks, shownAt, firstMoveAt, adjustments, key, now }) {
  return {
    score,
    marks,
    time_on_item_ms: Math.max(0, Math.round(now - shownAt)),
    time_to_first_move_ms: firstMoveAt === null ? null : Math.max(0, Math.min(Math.round(firstMoveAt - shownAt), Math.round(now - shownAt))),
    adjustments,
    idempotency_key: key,
  };
}
