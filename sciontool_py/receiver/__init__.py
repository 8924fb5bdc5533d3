"""The receiving end of the pipe: an envelope in, its canonical event, the status files.

hook.py runs one event through the dialect and the handlers (what an event does to
agent-info.json, agent.log, the limits, the hub); stdin.py reads the envelope; status.py is
`sciontool status`; harness_exit.py watches the harness for the end it does not say.
"""
