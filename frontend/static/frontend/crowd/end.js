// A participant's end page: a button that copies the code (shown only where the browser
// lets a page write to the clipboard); the code stays selectable text either way.
const code = document.getElementById("code");
const button = document.getElementById("copy-code");
const status = document.getElementById("copy-status");

if (code && button && navigator.clipboard && window.isSecureContext) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(code.textContent.trim());
      status.textContent = "Copied. Paste it on the platform.";
    } catch {
      status.textContent = "Could not copy: select the code and copy it yourself.";
    }
  });
}
