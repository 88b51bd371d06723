// Small behaviours the server-rendered pages share. No framework: htmx does the swapping.

// No inline handlers anywhere (the Content-Security-Policy forbids them): behaviour hangs on data- attributes.

// A <select data-autosubmit> submits its form when changed (the workspace switcher);
// a <select data-navigate> goes to the URL of the chosen option (the config picker).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (!(select instanceof HTMLSelectElement)) return;
  if (select.hasAttribute("data-autosubmit") && select.form) select.form.submit();
  if (select.hasAttribute("data-navigate")) window.location.href = select.value;
});

// Token meters: the bar's width from data-percent (an inline style="" would be refused).
function sizeMeters() {
  document.querySelectorAll("[data-percent]").forEach((el) => {
    el.style.width = `${Number(el.dataset.percent) || 0}%`;
  });
}
document.addEventListener("DOMContentLoaded", sizeMeters);
document.addEventListener("htmx:afterSettle", sizeMeters);

// Confirm before a form marked data-confirm is submitted (pin, roll back, delete).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

// Rule editor: an input with data-checks="<radio id>" checks that radio once something is typed
// in it (a selector picks "This one"). The "Which one" label and hint come from the server (htmx).
document.addEventListener("input", (event) => {
  const radio = event.target.dataset && event.target.dataset.checks && document.getElementById(event.target.dataset.checks);
  if (radio && event.target.value) radio.checked = true;
});

// Approvals queue: say so when a refresh fails, and hide the message once one succeeds again.
// htmx keeps polling on its own schedule either way; a failed response is not swapped in.
function queueRefreshFailed(event) {
  if (event.detail.elt && event.detail.elt.id === "queue") {
    const notice = document.getElementById("queue-unavailable");
    if (notice) notice.hidden = false;
  }
}
document.addEventListener("htmx:responseError", queueRefreshFailed);
document.addEventListener("htmx:sendError", queueRefreshFailed);
document.addEventListener("htmx:timeout", queueRefreshFailed);
document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.elt && event.detail.elt.id === "queue" && event.detail.successful) {
    const notice = document.getElementById("queue-unavailable");
    if (notice) notice.hidden = true;
  }
});

// The queue's poll skips a hidden tab, and refreshes at once when the tab shows again.
document.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt && event.detail.elt.id === "queue" && document.visibilityState !== "visible") {
    event.preventDefault();
  }
});
document.addEventListener("visibilitychange", () => {
  const queue = document.getElementById("queue");
  if (queue && window.htmx && document.visibilityState === "visible") window.htmx.trigger(queue, "queue-refresh");
});

// Live countdown to each card's deadline (from data-expires, an ISO 8601 time).
function countdownText(expires) {
  let seconds = Math.floor((expires - Date.now()) / 1000);
  if (seconds <= 0) return "expired — counts as rejected";
  const days = Math.floor(seconds / 86400); seconds -= days * 86400;
  const hours = Math.floor(seconds / 3600); seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60); seconds -= minutes * 60;
  const pad = (n) => String(n).padStart(2, "0");
  if (days) return `expires in ${days}d ${hours}h`;
  if (hours) return `expires in ${hours}h ${pad(minutes)}m`;
  return `expires in ${minutes}m ${pad(seconds)}s`;
}
function tickCountdowns() {
  document.querySelectorAll("[data-expires]").forEach((el) => {
    const expires = Date.parse(el.dataset.expires);
    if (!Number.isNaN(expires)) {
      el.textContent = countdownText(expires);
      el.classList.toggle("soon", expires - Date.now() < 15 * 60 * 1000);
    }
  });
}
document.addEventListener("DOMContentLoaded", tickCountdowns);
document.addEventListener("htmx:afterSettle", tickCountdowns);
setInterval(tickCountdowns, 1000);

// Tables stack into cards on a phone (portal.css): each cell is labelled with its column's header.
function labelCells(root) {
  (root || document).querySelectorAll("table").forEach((table) => {
    const headers = Array.from(table.querySelectorAll("thead th")).map((th) => th.textContent.trim());
    if (!headers.length) return;
    table.querySelectorAll("tbody tr").forEach((row) => {
      Array.from(row.children).forEach((cell, index) => {
        if (cell.colSpan === 1 && headers[index] && !cell.hasAttribute("data-label")) cell.dataset.label = headers[index];
      });
    });
  });
}
document.addEventListener("DOMContentLoaded", () => labelCells());
document.addEventListener("htmx:afterSettle", (event) => labelCells(event.detail.elt && event.detail.elt.parentNode));
