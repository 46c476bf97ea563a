// A refresh is queued: reload in a few seconds to show the new snapshot. The server tells
// when it is done (or stuck, after two minutes), and then this script is not loaded.
const RELOAD_AFTER_MS = 4000;
window.setTimeout(() => window.location.reload(), RELOAD_AFTER_MS);
