"""Steps: the table of step kinds, running one claimed step (claim, heartbeat, run, commit), each kind's runner, and a tool call's run."""
