"""Outgoing requests a workspace can aim — webhook URLs, Web Push endpoints — reach public addresses only.

Each goes through `session()`. Its adapter resolves the URL's host once and refuses the request when
an address it resolves to is loopback, private, link-local, multicast, reserved or unspecified (IPv4
or IPv6; an IPv6 address carrying an IPv4 one — mapped, 6to4, Teredo, NAT64 — is judged by the IPv4
one). It then connects to the address it checked, the Host header and TLS (SNI, the certificate's
name) still naming the host, so no second lookup can send the connection elsewhere (DNS rebinding).
It follows no redirect: a 3xx is the answer. The host lets internal receivers through explicitly
with HITL_OUTBOUND_ALLOW (CIDRs and host names). `url_refusal` is the same judgement at save time.

requests-hardened does the same pinning but allows only loopback, as a switch; the host's allowance
here names networks and hosts. Slack's and Telegram's API bases and the SMTP server are the host's
own settings, not aimed by a workspace, and do not come through here.
"""

import ipaddress
import socket
import threading
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.ip_network("64:ff9b::/96")
ALLOW_SETTING = "HITL_OUTBOUND_ALLOW"
# An endpoint that does not even accept a connection within this long is down: fail the send and let
# its retry come, rather than hold a send thread for the whole read timeout.
CONNECT_TIMEOUT_SECONDS = 3


def send_timeout() -> tuple[float, float]:
    """(connect, read) for a webhook's or a push service's request."""
    return (CONNECT_TIMEOUT_SECONDS, settings.HITL_WEBHOOK_TIMEOUT_SECONDS)


class OutboundRefused(requests.RequestException):
    """The address is not one the portal sends to; `message` ("reaches a loopback address; …") says which
    kind, never the address."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def kind_of(address: Address) -> str | None:
    """Why the portal does not send to `address` ("loopback", "private", …), or None for a public one."""
    if address.version == 6:
        carried = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if carried is None and address in NAT64:
            carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if carried is not None:
            return kind_of(carried)
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


def _allowed(host: str, address: Address) -> bool:
    """Whether the host's HITL_OUTBOUND_ALLOW lets this host name or address through."""
    candidates = [address]
    if address.version == 6 and address.ipv4_mapped:
        candidates.append(address.ipv4_mapped)
    for entry in settings.HITL_OUTBOUND_ALLOW:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            if entry.lower().rstrip(".") == host.lower().rstrip("."):
                return True
            continue
        if any(candidate.version == network.version and candidate in network for candidate in candidates):
            return True
    return False


def resolve_checked(host: str, port: int) -> Address:
    """The address to connect to: the first `host` resolves to, once every one it resolves to is allowed.

    Raises OutboundRefused, or socket.gaierror when the name does not resolve."""
    host = host.strip("[]")
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in found]
    for address in addresses:
        kind = kind_of(address)
        if kind is not None and not _allowed(host, address):
            # One forbidden answer is enough: a name that also resolves inward is not a public receiver.
            raise OutboundRefused(
                f"reaches a {kind} address; the portal sends only to public addresses unless the host allows "
                f"this one in {ALLOW_SETTING}"
            )
    return addresses[0]


def url_refusal(url: str) -> str | None:
    """At save time: why the portal would not send to `url` ("reaches a private address; …"), or None.
    A name that does not resolve now is not refused here (DNS may be down for a moment); the send checks again."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "is not a URL"
    if not host:
        return "is not a URL"
    try:
        resolve_checked(host, port or (443 if parts.scheme == "https" else 80))
    except OutboundRefused as refused:
        return refused.message
    except (OSError, UnicodeError):
        return None
    return None


class PinnedAdapter(HTTPAdapter):
    """Connects to the address `resolve_checked` allowed, not to whatever the host name resolves to next."""

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        host, port, scheme = host_params["host"], host_params["port"], host_params["scheme"]
        try:
            address = resolve_checked(host, port or (443 if scheme == "https" else 80))
        except socket.gaierror:
            raise requests.ConnectionError("the endpoint's host name does not resolve") from None
        shown = f"[{host}]" if ":" in host else host
        request.headers["Host"] = f"{shown}:{port}" if port else shown
        if scheme == "https":
            # The certificate must still name the host, and SNI ask for it: only the route is pinned.
            pool_kwargs["assert_hostname"] = host
            pool_kwargs["server_hostname"] = host
        host_params["host"] = f"[{address}]" if address.version == 6 else str(address)
        return host_params, pool_kwargs


class OutboundSession(requests.Session):
    """A session that never follows a redirect: where a 3xx points was not checked, and would carry
    the request's signed headers along."""

    def send(self, request, **kwargs):
        kwargs["allow_redirects"] = False
        return super().send(request, **kwargs)


_local = threading.local()


def session() -> requests.Session:
    """This thread's session: keep-alive to the same receiver instead of a handshake per send."""
    if not hasattr(_local, "session"):
        outbound = OutboundSession()
        adapter = PinnedAdapter()
        outbound.mount("http://", adapter)
        outbound.mount("https://", adapter)
        _local.session = outbound
    return _local.session
