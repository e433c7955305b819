"""The HTTP API under ``/api``: sessions, their transcripts and live streams, approvals, schedules, status,
notification webhooks, costs and budgets."""

from fastapi import APIRouter

from server.api import approvals, costs, notify, rewind, schedules, sessions, status, stream
from server.schemas import problems

# Every route: the errors any request may get (each router adds its own: 403, 404, 409).
router = APIRouter(prefix="/api", responses=problems(400, 401, 413, 422, 503))
router.include_router(sessions.router)
router.include_router(approvals.router)
router.include_router(stream.router)
router.include_router(schedules.router)
router.include_router(status.router)
router.include_router(rewind.router)
router.include_router(notify.router)
router.include_router(costs.router)

__all__ = ["router"]
