"""One POST to the Scion Hub, over http.client.

No redirect is ever followed: the token must reach the configured hub and
nothing else.  As Go's client does, the endpoint's user and password go as
basic auth and HTTP_PROXY / HTTPS_PROXY / NO_PROXY are honoured.  A failure
is HubError (worth a retry) or Refused (not); what the server sent is
attached unedited, for the caller to scrub of credentials before showing it.
"""

from __future__ import annotations

import binascii
import http.client
from urllib.parse import SplitResult, unquote, urlsplit

from sciontool_py.errors import HubError, Refused

REPLY_READ = 4096  # bytes of an error reply read, of which the log shows less


def post(endpoint: str, path: str, headers: dict[str, str], body: bytes, timeout: float) -> None:
    """POST body to {endpoint}/{path}; returns on a 2xx answer."""
    connection, target, headers = _request(endpoint, path, headers, timeout)
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        status = response.status
        reply = response.read(REPLY_READ + 1)
    except http.client.HTTPException as exc:  # a status line or header HTTP cannot parse
        raise HubError(f"malformed reply: {type(exc).__name__}", str(exc)) from None
    except ValueError:  # a token or agent id that HTTP cannot carry; never echo the value
        raise Refused("the token or agent id holds characters HTTP headers cannot carry") from None
    except OSError as exc:  # refused, reset, timed out, TLS, a proxy's refusal
        raise HubError(str(getattr(exc, "strerror", None) or exc)) from None
    finally:
        connection.close()
    if 200 <= status < 300:
        return
    if 300 <= status < 400:
        # Following it would send the token to wherever the reply points.
        raise Refused(f"hub answered {status} (a redirect, never followed)")
    error = Refused if 400 <= status < 500 else HubError
    text = reply[:REPLY_READ].decode("utf-8", "replace")
    raise error(f"hub returned error {status}", text, len(reply) > REPLY_READ)


def _request(
    endpoint: str, path: str, headers: dict[str, str], timeout: float
) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection (direct or through a proxy), the request target and headers."""
    hub = _parse(endpoint, "the hub endpoint")
    headers = dict(headers)
    if hub.username is not None:
        headers["Authorization"] = _basic(hub)
    host, port = hub.hostname or "", hub.port
    target = f"{hub.path.rstrip('/')}/api/v1/agents/{path}"
    secure = hub.scheme == "https"
    proxy = _proxy_for(hub)
    if proxy is None:
        kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        return kind(host, port, timeout=timeout), target, headers
    auth = {"Proxy-Authorization": _basic(proxy)} if proxy.username is not None else {}
    if secure:  # a CONNECT tunnel through the proxy, TLS to the hub inside it
        tunnel = http.client.HTTPSConnection(proxy.hostname or "", proxy.port, timeout=timeout)
        tunnel.set_tunnel(host, port, headers=auth)
        return tunnel, target, headers
    # Plain HTTP: the proxy gets the absolute URL (without the credentials).
    netloc = hub.netloc.rpartition("@")[2]
    relay = http.client.HTTPConnection(proxy.hostname or "", proxy.port, timeout=timeout)
    return relay, f"http://{netloc}{target}", {**headers, **auth}


def _parse(url: str, what: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise Refused(f"{what} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f"{what} must be an http:// or https:// URL with a host")
    return parts


def _basic(parts: SplitResult) -> str:
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return "Basic " + binascii.b2a_base64(pair, newline=False).decode()


def _proxy_for(hub: SplitResult) -> SplitResult | None:
    """The proxy the environment names for this hub, as Go's ProxyFromEnvironment picks it."""
    from urllib.request import getproxies, proxy_bypass

    proxy = getproxies().get(hub.scheme)
    if not proxy or proxy_bypass(hub.netloc.rpartition("@")[2]):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    return _parse(proxy, "the proxy")


def proxy_passwords() -> list[str]:
    """The passwords in the proxy URLs the environment names: never to be logged either."""
    from urllib.request import getproxies

    found = []
    for scheme, proxy in getproxies().items():
        if scheme != "no":
            try:
                found.append(urlsplit(proxy if "://" in proxy else "http://" + proxy).password or "")
            except ValueError:
                continue
    return [p for p in found if p]
