// Swagger UI (served from drf-spectacular's sidecar) renders markup that fails WCAG 2.1
// A/AA in a few places; each is mended as soon as Swagger UI draws it:
// - an operation's summary is a button with a link inside (its path): the link becomes
//   plain text, since the button already opens the operation and sets the address (4.1.2);
// - the file input of "Try it out" has no label: it is named by its parameter (1.3.1);
// - the curl command scrolls sideways in a box no key could reach: it takes focus (2.1.1).
{
  const mend = (root) => {
    for (const link of root.querySelectorAll(".opblock-summary-control a[href]")) link.removeAttribute("href");
    for (const input of root.querySelectorAll("tr input[type=file]:not([aria-label])")) {
      const row = input.closest("tr").dataset;
      input.setAttribute("aria-label", row.paramName || row.propertyName || "file");
    }
    for (const box of root.querySelectorAll(".curl:not([tabindex])")) {
      box.tabIndex = 0;
      box.setAttribute("aria-label", "curl command");
    }
  };
  const root = document.getElementById("swagger-ui");
  new MutationObserver(() => mend(root)).observe(root, { childList: true, subtree: true });
  mend(root);
}
