// Approve with edits: the card's arguments editor (templates/approvals/_edit.html).
// The check itself is the server's (htmx posts the text as it changes; approvals/edits/checks.py answers with
// the schema's errors or the diff), so this file only does what a page cannot without script.
// No inline handlers (the Content-Security-Policy forbids them): behaviour hangs on data- attributes.

// "Reset to the proposed arguments": put the proposal back (kept in a <template>) and check it again.
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("[data-reset-arguments]");
  if (!button) return;
  const id = button.dataset.resetArguments;
  const box = document.getElementById(`arguments-${id}`);
  const proposed = document.getElementById(`proposed-${id}`);
  if (!box || !proposed) return;
  box.value = proposed.content.textContent;
  box.dispatchEvent(new Event("input", { bubbles: true }));
  box.focus();
});

// Tab in the editor indents (two spaces, as the proposal is laid out) instead of leaving the box;
// Escape then Tab leaves it, so the keyboard is never trapped.
let escaped = false;
document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLTextAreaElement) || !box.classList.contains("arguments-editor")) return;
  if (event.key === "Escape") { escaped = true; return; }
  if (event.key !== "Tab" || event.shiftKey || escaped) { escaped = false; return; }
  event.preventDefault();
  box.setRangeText("  ", box.selectionStart, box.selectionEnd, "end");
  box.dispatchEvent(new Event("input", { bubbles: true }));
});
