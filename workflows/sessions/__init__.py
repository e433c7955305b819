"""Sessions as their clients see them: the one options model (:mod:`.options`) and the one service
(:mod:`.service`) every front door (the CLI, the SDK's stream-json door, the team server, schedules)
opens, resumes and drives a session through."""

from workflows.models.options import RemoteOptions, SessionOptions, SessionSetup

__all__ = ["RemoteOptions", "SessionOptions", "SessionSetup"]
