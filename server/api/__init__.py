"""The HTTP API under ``/api``: sessions, their transcripts and live streams, approvals, schedules, status."""

from fastapi import APIRouter

from server.api import approvals, rewind, schedules, sessions, status, stream

router = APIRouter(prefix="/api")
router.include_router(sessions.router)
router.include_router(approvals.router)
router.include_router(stream.router)
router.include_router(schedules.router)
router.include_router(status.router)
router.include_router(rewind.router)

__all__ = ["router"]
