// The installable portal: register the service worker (static/js/sw.js, served from /hitl/sw.js),
// which shows an offline page instead of a stale one and receives Web Push messages.
// base.html names it (<meta name="hitl-service-worker">), so no URL is written here.
(function () {
  if (!("serviceWorker" in navigator)) return;
  const meta = document.querySelector('meta[name="hitl-service-worker"]');
  if (!meta) return;
  window.addEventListener("load", () => {
    navigator.serviceWorker.register(meta.content, { scope: meta.dataset.scope }).catch(() => {
      // Without a worker the portal works as a plain website: nothing to tell the person.
    });
  });
})();
