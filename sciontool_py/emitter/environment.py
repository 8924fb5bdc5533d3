"""Which of the agent's environment variables reach a hook command.

A hook command comes from a file the model may be able to write, so it must
not see the agent's credentials by default: every variable whose name looks
like one is withheld unless the caller passes it on by name.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

# Name patterns (matched against the upper-cased name) of variables that hold a credential.
CREDENTIAL_PATTERNS: tuple[str, ...] = (
    "*_API_KEY",
    "API_KEY",
    "*_TOKEN",
    "TOKEN",
    "*_SECRET*",
    "SECRET_*",
    "*_PASSWORD*",
    "PASSWORD",
    "*_PRIVATE_KEY",
)
# Named credentials the patterns do not catch, and the variables that point at a cloud credential file.
CREDENTIAL_NAMES: frozenset[str] = frozenset(
    {
        "AWS_SECRET_ACCESS_KEY",
        "SCION_AUTH_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_GHA_CREDS_PATH",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
        "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AZURE_FEDERATED_TOKEN_FILE",
        "AZURE_CLIENT_CERTIFICATE_PATH",
    }
)


def looks_like_credential(name: str) -> bool:
    upper = name.upper()
    return upper in CREDENTIAL_NAMES or any(fnmatch.fnmatchcase(upper, p) for p in CREDENTIAL_PATTERNS)


class HookEnvironment:
    """The environment for hook commands: the agent's, less credentials and named variables.

    ``passed`` names credential-looking variables a hook needs (e.g.
    SCION_AUTH_TOKEN for a `sciontool hook` without a token file); ``withheld``
    names more variables to keep back, and wins over ``passed``.
    """

    def __init__(self, withheld: Iterable[str] = (), passed: Iterable[str] = ()) -> None:
        self.withheld = frozenset(name for name in withheld if name)
        self.passed = frozenset(name for name in passed if name) - self.withheld

    def admits(self, name: str) -> bool:
        if name in self.withheld:
            return False
        return name in self.passed or not looks_like_credential(name)

    def build(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {name: value for name, value in environ.items() if self.admits(name)}
