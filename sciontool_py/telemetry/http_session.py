"""The HTTP exporters' session: what an OTLP/HTTP export needs from a response, and no more.

The OpenTelemetry HTTP exporters post through a requests.Session that
follows redirects (a POST answered 302 becomes a GET elsewhere, and a 3xx
left unfollowed counts as success: `ok` is any status under 400) and reads
the whole body (an endless 200 body fills memory).  This session follows
none, fails a 3xx, and reads no body: the status is the answer.
"""

from __future__ import annotations

from typing import Any

import requests


class StatusOnly(requests.Session):
    """The HTTP exporters' session: no redirect followed (a 3xx is a failure, not an export) and
    no body read (the status is all an export needs, and a body may never end)."""

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.update(allow_redirects=False, stream=True)
        response = super().request(method, url, *args, **kwargs)
        response.close()  # the connection goes with the unread body
        response._content = b""  # what .text and .content give now
        if 300 <= response.status_code < 400:
            raise requests.exceptions.RequestException(
                f"the receiver answered {response.status_code} {response.reason}: a redirect is not followed"
            )
        return response
