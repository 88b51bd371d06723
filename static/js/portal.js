// Small behaviours the server-rendered pages share. No framework: htmx does the swapping.

// Confirm before a form marked data-confirm is submitted (pin, roll back, delete).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
