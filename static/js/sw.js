// The portal's service worker (served from /hitl/sw.js, scope /hitl/): offline-safe pages and Web Push.
//
// It keeps no page of the portal. A page opened offline — a request's page, the Approvals tab —
// shows the offline page instead, never a copy kept from earlier: its buttons would decide on facts
// that may have changed (decided by someone else, expired). Only the offline page and the static
// files it uses are kept, fetched when the worker installs.

const CACHE = "hitl-offline-v1";
const OFFLINE_URL = "/hitl/offline/";
const QUEUE_PATH = "/hitl/approvals/";

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      const response = await fetch(OFFLINE_URL, { credentials: "omit", cache: "no-store" });
      if (!response.ok) throw new Error(`the offline page answered ${response.status}`);
      const html = await response.clone().text();
      await cache.put(OFFLINE_URL, response);
      // The offline page's own stylesheet and icon, so it looks like the portal.
      const assets = [...html.matchAll(/(?:href|src)="(\/static\/[^"]+)"/g)].map((found) => found[1]);
      await cache.addAll(assets);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name !== CACHE) await caches.delete(name);
      }
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.mode === "navigate") {
    // Network first, never the HTTP cache either; the offline page when the network is gone.
    event.respondWith(
      fetch(new Request(request, { cache: "no-store" })).catch(async () => {
        const offline = await caches.match(OFFLINE_URL);
        return offline || Response.error();
      }),
    );
    return;
  }
  const url = new URL(request.url);
  if (request.method === "GET" && url.origin === self.location.origin && url.pathname.startsWith("/static/")) {
    // Static files from the network too; the kept copies (the offline page's) only when it is gone.
    event.respondWith(
      fetch(request).catch(async () => (await caches.match(request)) || Response.error()),
    );
  }
  // Everything else (htmx's refreshes, the decide form's POST) goes to the network as if no worker were here.
});

// Web Push: the portal's message is {title, body, url, tag, icon} (push/services.py Message).
self.addEventListener("push", (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch (error) {
    message = {};
  }
  const title = message.title || "HITL Portal";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: message.body || "",
      tag: message.tag || undefined,
      renotify: Boolean(message.tag),
      icon: message.icon || undefined,
      data: { url: message.url || QUEUE_PATH },
    }),
  );
});

// A click opens the request's page — on this portal only: the path is taken, never another origin.
function clickTarget(url) {
  const given = new URL(url || QUEUE_PATH, self.location.origin);
  return new URL(given.pathname + given.search, self.location.origin).href;
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = clickTarget(event.notification.data && event.notification.data.url);
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
      const open = windows.find((client) => client.url === target);
      if (open) return open.focus();
      return self.clients.openWindow(target);
    })(),
  );
});
