"""The console's script and stylesheet, served by the app itself (no CDN, no build step).

Only the files shipped in ``static/`` are served, by exact name: a request cannot name any other path.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

from server.console.web import HERE, SECURITY_HEADERS

router = APIRouter(include_in_schema=False)

TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
FILES = {p.name: p for p in (HERE / "static").iterdir() if p.suffix in TYPES}


@router.get("/static/console/{name}")
def static_file(name: str) -> FileResponse:
    path = FILES.get(name)
    if path is None:
        raise HTTPException(404, f"No console file {name!r}.")
    return FileResponse(path, media_type=TYPES[path.suffix],
                        headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"})


__all__ = ["router"]
