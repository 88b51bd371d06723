// Passkeys (WebAuthn) in the browser: registering one on the account page, and step-up — approving
// a request whose rule needs a passkey, on its page. The server makes every challenge and checks
// every answer (passkeys/); this file only carries them between it and navigator.credentials.
(function () {
  "use strict";

  function toBytes(base64url) {
    const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "===".slice((base64.length + 3) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  }

  function toBase64url(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function csrf(form) {
    const field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  async function post(url, form, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf(form) },
      body: JSON.stringify(body || {}),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error((data.error && data.error.message) || "The portal answered HTTP " + response.status + ".");
    }
    return data;
  }

  function say(form, text) {
    const place = form.querySelector(".passkey-error");
    if (!place) return;
    place.textContent = text;
    place.hidden = !text;
  }

  function failure(error) {
    // The browser's own words for a cancelled or timed-out dialog say little to a reviewer.
    if (error && error.name === "NotAllowedError") return "The passkey dialog was closed or timed out; nothing was done.";
    return (error && error.message) || String(error);
  }

  function descriptors(list) {
    return (list || []).map((item) => Object.assign({}, item, { id: toBytes(item.id) }));
  }

  function credentialJSON(credential) {
    const response = credential.response;
    const json = {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: { clientDataJSON: toBase64url(response.clientDataJSON) },
      clientExtensionResults: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
    };
    if (credential.authenticatorAttachment) json.authenticatorAttachment = credential.authenticatorAttachment;
    if (response.attestationObject) {
      json.response.attestationObject = toBase64url(response.attestationObject);
      if (response.getTransports) json.response.transports = response.getTransports();
    } else {
      json.response.authenticatorData = toBase64url(response.authenticatorData);
      json.response.signature = toBase64url(response.signature);
      if (response.userHandle) json.response.userHandle = toBase64url(response.userHandle);
    }
    return json;
  }

  // Step-up: Approve (or a run grant) on a request's page asks the passkey first, then submits the
  // form with its answer in the hidden field. Reject goes through untouched.
  document.addEventListener("submit", async function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.stepUp) return;
    const button = event.submitter;
    const approving = button && ((button.name === "decision" && button.value === "approve") || button.name === "grant");
    const field = form.querySelector("input[name=passkey_assertion]");
    if (!approving || !field || field.value) return;
    event.preventDefault();
    say(form, "");
    try {
      // The challenge binds the call being approved: the edited arguments, when the card has an editor.
      const editor = form.querySelector("textarea[name=arguments]");
      const options = await post(form.dataset.stepUp, form, editor ? { arguments: editor.value } : {});
      options.challenge = toBytes(options.challenge);
      options.allowCredentials = descriptors(options.allowCredentials);
      const credential = await navigator.credentials.get({ publicKey: options });
      field.value = JSON.stringify(credentialJSON(credential));
      form.requestSubmit(button);
    } catch (error) {
      field.value = "";
      say(form, failure(error));
    }
  });

  // Adding or removing a passkey needs proof beyond the session (passkeys/reauth.py): the password typed
  // in the form, or else — for someone who has a passkey — an assertion made with one of them.
  async function confirmation(form) {
    const password = form.querySelector("input[name=password]");
    if (password && password.value) return { password: password.value };
    if (!form.dataset.reauth) throw new Error("Enter your password to confirm it is you; nothing was changed.");
    const options = await post(form.dataset.reauth, form);
    options.challenge = toBytes(options.challenge);
    options.allowCredentials = descriptors(options.allowCredentials);
    const credential = await navigator.credentials.get({ publicKey: options });
    return { assertion: credentialJSON(credential) };
  }

  // Registering a passkey on the account page.
  const register = document.getElementById("passkey-register");
  if (register) {
    register.addEventListener("submit", async function (event) {
      event.preventDefault();
      say(register, "");
      try {
        if (!window.PublicKeyCredential) throw new Error("This browser does not support passkeys.");
        const options = await post(register.dataset.options, register, await confirmation(register));
        options.challenge = toBytes(options.challenge);
        options.user.id = toBytes(options.user.id);
        options.excludeCredentials = descriptors(options.excludeCredentials);
        const credential = await navigator.credentials.create({ publicKey: options });
        const name = register.querySelector("input[name=name]").value;
        await post(register.action, register, { name: name, credential: credentialJSON(credential) });
        window.location.reload();
      } catch (error) {
        say(register, failure(error));
      }
    });
  }

  // Removing one: with the password typed, the form goes as it is; without, a passkey confirms first.
  document.addEventListener("submit", async function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("passkey-remove")) return;
    const field = form.querySelector("input[name=assertion]");
    const password = form.querySelector("input[name=password]");
    if (!field || field.value || (password && password.value) || !form.dataset.reauth) return;
    event.preventDefault();
    try {
      const proof = await confirmation(form);
      field.value = JSON.stringify(proof.assertion);
      form.submit();
    } catch (error) {
      field.value = "";
      say(form, failure(error));
    }
  });
})();
