"""The helper: one process per HOME, outside Scion, that serves the hooks relayed to it and says
the end of every agent whose harness exits without one (docs/receiver.md, "The helper").

- client.py: what a hook process loads first: hands its hook to the helper, or says it cannot.
- relay.bash: the same for a hook that is a bash process (what `harness install` wires).
- wire.py: the unix socket's wire format, for client.py and server.py alike.
- server.py: the helper's own loop: its doors, the agents it watches, its life.
- bash.py: the helper's side of relay.bash, on 127.0.0.1.
- relayed.py: a hook run inside the helper as its own process would have run it.
- standby.py: the second, small process that takes the helper's place when it dies.

`ps` shows the helper as `scion-helper` (`sciontool_py.helper.server --home HOME`) and its
standby, a shell, as `scion-standby -c ... HOME ...`.
"""

import os

RELAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.bash")
