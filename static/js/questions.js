// Answering a question from the keyboard (templates/approvals/_ask_card.html), on the Approvals tab
// and a request's page. A static file: the Content-Security-Policy refuses inline scripts.
//
// Number keys 1–9 pick that option of the question in focus (or, with nothing focused, of the first
// question still unanswered); Enter sends the answers. Typing in a text box types, as ever: there a
// digit is a digit, and Enter in the reason box or with Shift held is a new line.
(() => {
  const TYPING = new Set(["text", "number", "search", "email", "url", "tel", "password"]);

  function isTyping(el) {
    if (el instanceof HTMLTextAreaElement) return true;
    return el instanceof HTMLInputElement && TYPING.has(el.type);
  }

  function askForms() {
    return Array.from(document.querySelectorAll("form[data-ask-form]")).filter(
      (form) => form.querySelector("[data-answer]"),
    );
  }

  // The form a key is for: the one holding the focus, or the only question on the page.
  function formFor(target) {
    const form = target instanceof Element ? target.closest("form[data-ask-form]") : null;
    if (form) return form.querySelector("[data-answer]") ? form : null;
    const forms = askForms();
    return forms.length === 1 ? forms[0] : null;
  }

  function questionFor(target, form) {
    const here = target instanceof Element ? target.closest("fieldset.question") : null;
    if (here && here.querySelector("input[data-key]")) return here;
    const choices = Array.from(form.querySelectorAll("fieldset.question")).filter((fs) =>
      fs.querySelector("input[data-key]"),
    );
    return choices.find((fs) => !fs.querySelector("input[data-key]:checked")) || choices[0] || null;
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const target = event.target;
    const form = formFor(target);
    if (!form) return;
    if (/^[1-9]$/.test(event.key) && !isTyping(target)) {
      const question = questionFor(target, form);
      const option = question && question.querySelector(`input[data-key="${event.key}"]`);
      if (!option) return;
      event.preventDefault();
      option.checked = option.type === "checkbox" ? !option.checked : true;
      option.focus();
      option.dispatchEvent(new Event("change", { bubbles: true }));
      return;
    }
    if (event.key === "Enter" && !event.shiftKey) {
      if (target instanceof HTMLButtonElement || target instanceof HTMLAnchorElement) return;
      if (target instanceof HTMLTextAreaElement && target.name === "reason") return;
      event.preventDefault();
      // A click, not requestSubmit(): htmx and the browser both send the button's decision=answer.
      form.querySelector("[data-answer]").click();
    }
  });
})();
