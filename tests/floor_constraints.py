"""Print pip constraints pinning every dependency of pyproject.toml to its floor (`>=X` -> `==X`).

`make test-floor` installs the package with these and runs the CLI smoke tests, so a floor in
pyproject.toml is a version that was tried, not a guess.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def floors(text: str) -> list[str]:
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M)
    if block is None:
        raise SystemExit("pyproject.toml: no dependencies list")
    out = []
    # `>=X` alone or with a cap (`>=X,<Y`); a line with a marker (`; python_version ...`) is left out.
    for name, version in re.findall(
        r'^\s*"([A-Za-z0-9_.-]+)>=([^",;<]+)(?:,<[^",;]+)?"', block.group(1), re.M
    ):
        out.append(f"{name}=={version}")
    return out


if __name__ == "__main__":
    sys.stdout.write("".join(f"{line}\n" for line in floors(PYPROJECT.read_text())))
