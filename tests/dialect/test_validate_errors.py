"""dialect.yaml shapes a hand-written file gets wrong, each reported at its line and column as
`dialect check` prints it, and the dialect refused (no half-valid spec reaches the hook)."""

from __future__ import annotations

import pytest

from sciontool_py.dialect.validate import check_text

HEAD = "dialect: mine\nevent_name_field: hook_event_name\nmappings:\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "  ~: {event: tool-start}\n  [a, b]: {event: tool-end}\n",
            [
                "d.yaml:4:3: 'mappings': key None must be a string",
                "d.yaml:5:3: 'mappings': key ['a', 'b'] must be a string",
            ],
        ),
        ("  Stop: agent-end\n", ["d.yaml:4:9: mappings.Stop must be a mapping"]),
        (
            '  Stop: {event: agent-end}\noptions:\n  stamp_field: "a..b"\n  call_id_fields: [.id, "x..y", " .z"]\n',
            [
                "d.yaml:6:16: options.stamp_field: 'a..b' is not a path (.a.b.c)",
                "d.yaml:7:25: options.call_id_fields: 'x..y' is not a path (.a.b.c)",
                "d.yaml:7:33: options.call_id_fields: ' .z' is not a path (.a.b.c)",
            ],
        ),
    ],
    ids=["keys-not-strings", "entry-not-a-mapping", "option-paths"],
)
def test_a_malformed_shape_is_refused_at_its_place(body: str, expected: list[str]) -> None:
    spec, found = check_text(HEAD + body, "d.yaml")
    assert spec is None
    assert [str(p) for p in found] == expected
