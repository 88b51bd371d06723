// The account page's Web Push section (templates/push/_account.html): subscribe this browser with
// the portal's VAPID public key, send the subscription to the portal, or take it back.
(function () {
  const section = document.getElementById("push");
  if (!section || !section.dataset.pushKey) return;
  const subscribeButton = section.querySelector("[data-push-subscribe]");
  const unsubscribeButton = section.querySelector("[data-push-unsubscribe]");
  const status = section.querySelector("[data-push-status]");

  function say(text) {
    status.textContent = text;
  }

  function show(subscribed) {
    subscribeButton.hidden = subscribed;
    unsubscribeButton.hidden = !subscribed;
  }

  function csrfToken() {
    const found = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
    return found ? decodeURIComponent(found.slice("csrftoken=".length)) : "";
  }

  function keyBytes(base64url) {
    const padded = (base64url + "===".slice((base64url.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    return Uint8Array.from(atob(padded), (char) => char.charCodeAt(0));
  }

  async function tell(method, body, query) {
    const url = query ? `${section.dataset.pushApi}?${new URLSearchParams(query)}` : section.dataset.pushApi;
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) {
      let message = `the portal answered ${response.status}`;
      try {
        message = (await response.json()).error.message || message;
      } catch (error) {
        // keep the status
      }
      throw new Error(message);
    }
  }

  async function registration() {
    return navigator.serviceWorker.register(section.dataset.pushWorker, { scope: section.dataset.pushScope });
  }

  async function subscribe() {
    subscribeButton.disabled = true;
    try {
      if ((await Notification.requestPermission()) !== "granted") {
        say("This browser does not allow notifications from the portal: allow them in its site settings.");
        return;
      }
      say("Subscribing…");
      const worker = await registration();
      await navigator.serviceWorker.ready;
      const subscription = await worker.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(section.dataset.pushKey),
      });
      await tell("POST", subscription.toJSON());
      show(true);
      say("This browser is notified when a request waits for you.");
    } catch (error) {
      say(`Could not subscribe this browser: ${error.message}`);
    } finally {
      subscribeButton.disabled = false;
    }
  }

  async function unsubscribe() {
    unsubscribeButton.disabled = true;
    try {
      const worker = await registration();
      const subscription = await worker.pushManager.getSubscription();
      if (subscription) {
        await tell("DELETE", null, { endpoint: subscription.endpoint });
        await subscription.unsubscribe();
      }
      show(false);
      say("This browser is no longer notified.");
    } catch (error) {
      say(`Could not unsubscribe this browser: ${error.message}`);
    } finally {
      unsubscribeButton.disabled = false;
    }
  }

  async function start() {
    if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
      say("This browser cannot receive push notifications (on an iPhone, add the portal to the Home Screen first).");
      return;
    }
    subscribeButton.addEventListener("click", subscribe);
    unsubscribeButton.addEventListener("click", unsubscribe);
    try {
      const worker = await registration();
      const subscription = await worker.pushManager.getSubscription();
      show(Boolean(subscription));
      say(subscription ? "This browser is notified when a request waits for you." : "This browser is not notified.");
    } catch (error) {
      show(false);
      say("This browser is not notified.");
    }
  }

  start();
})();
