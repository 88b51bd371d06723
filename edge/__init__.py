"""The edge: the calls engines make in a loop, answered in the ASGI server's event loop.

Like Zulip's Tornado server beside its Django app, this folder owns a few hot calls end to end
and hands everything else, untouched, to Django + DRF (one handler, the full middleware). It owns:

- `GET|HEAD /api/v1/approvals/{apr}` with a Bearer token — the plain poll and the long-poll
  (`?wait=S`, however the query spells it): the one wait path (hub.py). A browser session's
  `?wait` is not the edge's: Django answers it as a plain poll.
- `POST /api/v1/approvals` with a Bearer token — registration.

And, for every request whoever answers it (app.py): the body, refused by Content-Length before
it is read and cut off at the limit when chunked (256 KiB), read within a time limit; and the
threads' database connections, handed back after every job (threads.py).

Its contract with the core, and nothing else:

- the one token lookup: `workspaces.authentication.token_for_authorization` (DRF's Bearer
  authentication asks it too), after the body is read, so a key revoked during an upload is refused;
- the actor: `workspaces.access.actor_for_token`;
- one call per answer, the same ones DRF's views make: `approvals.engine.api.approval_poll`
  (read, the workspace scope, an overdue request expired) and `registration_answer` (validation
  by the registration serializers, then `approvals.engine.register.register`), `wait_of`
  (the `wait` parameter's serializer);
- the answer: `approval_as_dict` rendered by DRF's JSONRenderer; refusals: the one error
  mapper, `common.errors.api_exception_handler`; a failure: Django's own 500 handling
  (`response_for_exception`, logged by django.request);
- Host, proxy and security headers: Django's own — the request is a Django `ASGIRequest`
  (`get_host()` applies ALLOWED_HOSTS and the proxy settings) and the response goes through
  `SecurityMiddleware`, the same object the Django side runs (http.py).

It never replays a request into Django: once the edge takes a call, it answers it.
"""
