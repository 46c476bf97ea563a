// A page that waits on something reloads itself (or moves on to data-reload-url) after a
// few seconds: a run in the background whose progress should stay fresh, a participant
// about to be taken back to their platform. A meta refresh would do that too, but a person
// could not stop it; here the note that says so has a button that does (WCAG 2.2.1).
const note = document.querySelector("[data-reload-seconds]");
if (note) {
  const go = () => (note.dataset.reloadUrl ? window.location.assign(note.dataset.reloadUrl) : window.location.reload());
  const timer = window.setTimeout(go, Number(note.dataset.reloadSeconds) * 1000);
  note.querySelector("button").addEventListener("click", () => {
    window.clearTimeout(timer);
    note.textContent = note.dataset.stoppedText || "Reloading stopped: reload the page to see the progress.";
  });
}
