"""The curation app's JSON API: the keyboard hot path, outside Gradio's event queue.

Gradio's event round-trip (queue, SSE, re-render) is too slow between two keypresses, so the
label and compare views talk to these plain FastAPI routes from their own JS
(`app_static/*.js`), mounted on the same server as the Gradio app:

    GET  /salon/api/me                     {user, models, subjects}
    POST /salon/api/queue   {view, model, subject, rejects, duplicates}
                                           {ids, labelled, total}: the label queue, in pool order
    POST /salon/api/items   {ids}          {items: [...]}: what the label view shows per id
    POST /salon/api/label   {id, tier}     {seq, at, tier, user, labels, consensus}: null tier = undo
    GET  /salon/api/pair                   {left, right}: two gate-passing paintings, random order
    POST /salon/api/pair    {left, right, winner}
    GET  /salon/img/{id}                   the candidate's PNG (immutable: the URL names its sha)
    GET  /salon/guide/{id}                 the local copy of the candidate's guide photo

A label is answered only after `Pool.label` committed it: the answer is the acknowledgement.
With `--auth`, every route needs the `salon-session` cookie, and labels carry its user
(`Sessions`): Gradio's public way to name the logged-in user is `gr.Request.username` inside
its own events, so the page asks the Gradio endpoint `/salon_session` once for a token bound to
that user and sends it back as the cookie.

Labels stay independent: an item carries the other labelers' tiers and the consensus only
once the requesting user has labelled it (`revealed`); the grid shows them, for review.
"""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

from fastapi import APIRouter, Body, Depends, HTTPException, Request
from fastapi.responses import FileResponse

from salon.pool.consensus import consensus
from salon.pool.errors import PoolError
from salon.pool.models import Candidate

STATIC = Path(__file__).parent / "app_static"
VIEWS = ("unlabelled", "all", "love", "okay", "nope")
IMMUTABLE = {"Cache-Control": "private, max-age=31536000, immutable"}


def revealed(labels: dict[str, str], me: str) -> tuple[dict[str, str], str | None]:
    """Every labeler's tier and the consensus as `me` may see them: only once `me` labelled the
    painting. Seen before, they anchor the label, and agreement would measure the anchoring."""
    return (labels, consensus(list(labels.values()))) if me in labels else ({}, None)


def item(pool, c: Candidate, labels: dict[str, str], me: str) -> dict:
    """One candidate as the label and compare views show it."""
    image = pool.image_path(c.id)
    shown, agreed = revealed(labels, me)
    has_image = image is not None and image.exists()
    return {
        "id": c.id, "subject": c.subject, "model": c.model, "seed": c.seed, "round": c.round,
        "code": c.code, "ok": c.ok, "violations": c.violations, "dup_of": c.dup_of,
        "image": f"/salon/img/{c.id}?v={c.image_sha256[:16]}" if has_image else None,
        "image_problem": None if has_image else (
            "no image: the render failed or has not run yet" if image is None
            else "the image file is missing from the pool: run `salon pool check --fix`"),
        "guide": None if c.guide is None else {
            "url": f"/salon/guide/{c.id}", "observation_url": c.guide.observation_url,
            "license": c.guide.license, "attribution": c.guide.attribution},
        "mine": labels.get(me), "labels": shown, "consensus": agreed,
    }


def queue_ids(pool, me: str, view: str = "unlabelled", model: str | None = None,
              subject: str | None = None, rejects: bool = False,
              duplicates: bool = False) -> dict:
    """The label queue: ids in pool order, plus how many of the same scope `me` has labelled."""
    if view not in VIEWS:
        raise PoolError(f"unknown view {view!r}: use one of {', '.join(VIEWS)}")
    scope = [c.id for c in pool.candidates(model=model or None, subject=subject or None,
                                           ok=None if rejects else True,
                                           hide_duplicates=not duplicates)]
    current = pool.current_labels()
    labelled = sum(1 for i in scope if me in current.get(i, {}))
    if view == "unlabelled":
        ids = [i for i in scope if me not in current.get(i, {})]
    elif view == "all":
        ids = scope
    else:
        ids = [i for i in scope if consensus(list(current.get(i, {}).values())) == view]
    return {"ids": ids, "labelled": labelled, "total": len(scope)}


def login_required(user_of: Callable[[Request], str | None]) -> Callable[[Request], str]:
    """A FastAPI dependency: the logged-in user's name, or 401."""

    def me(request: Request) -> str:
        user = user_of(request)
        if not user:
            raise HTTPException(401, "not logged in: reload the page and log in")
        return user

    return me


def router(pool, user_of: Callable[[Request], str | None]) -> APIRouter:
    """The routes above; `user_of(request)` names the labeler, or None when not logged in."""
    me = login_required(user_of)

    def candidate(cid: str) -> Candidate:
        c = pool.get(cid)
        if c is None:
            raise HTTPException(404, f"no candidate {cid} in {pool.dir}")
        return c

    api = APIRouter()

    @api.get("/salon/api/me")
    def whoami(user: str = Depends(me)):
        stats = pool.stats()
        # stats count a missing model or subject as "unknown", which no filter can select
        return {"user": user, "models": sorted(set(stats["by_model"]) - {"unknown"}),
                "subjects": sorted(set(stats["by_subject"]) - {"unknown"})}

    @api.post("/salon/api/queue")
    def queue(filters: dict = Body(...), user: str = Depends(me)):
        try:
            return queue_ids(pool, user, view=filters.get("view", "unlabelled"),
                             model=filters.get("model"), subject=filters.get("subject"),
                             rejects=bool(filters.get("rejects")),
                             duplicates=bool(filters.get("duplicates")))
        except PoolError as e:
            raise HTTPException(400, str(e)) from None

    @api.post("/salon/api/items")
    def items(body: dict = Body(...), user: str = Depends(me)):
        ids = list(body.get("ids", []))[:100]
        current = pool.current_labels(ids)
        return {"items": [item(pool, c, current.get(c.id, {}), user)
                          for c in (pool.get(i) for i in ids) if c is not None]}

    @api.post("/salon/api/label")
    def label(body: dict = Body(...), user: str = Depends(me)):
        cid, tier = body.get("id"), body.get("tier")
        try:
            row = pool.undo(cid, user) if tier is None else pool.label(cid, tier, user)
        except PoolError as e:
            raise HTTPException(400, str(e)) from None
        labels, agreed = revealed(pool.current_labels([cid]).get(cid, {}), user)
        return {"seq": row.seq, "at": row.at, "tier": row.tier, "user": user,
                "labels": labels, "consensus": agreed}

    @api.get("/salon/api/pair")
    def pair(user: str = Depends(me)):
        ids = [c.id for c in pool.candidates(ok=True, hide_duplicates=True)]
        if len(ids) < 2:
            raise HTTPException(404, "compare needs at least two gate-passing paintings: "
                                     "import or generate more")
        left, right = random.sample(ids, 2)  # random order: position bias is measured, not built in
        current = pool.current_labels([left, right])
        return {"left": item(pool, candidate(left), current.get(left, {}), user),
                "right": item(pool, candidate(right), current.get(right, {}), user)}

    @api.post("/salon/api/pair")
    def choose(body: dict = Body(...), user: str = Depends(me)):
        try:
            row = pool.add_pair_choice(body.get("left"), body.get("right"), body.get("winner"),
                                       user, shown_left=body.get("left"))
        except PoolError as e:
            raise HTTPException(400, str(e)) from None
        return {"seq": row.seq, "at": row.at}

    @api.get("/salon/img/{cid}")
    def image(cid: str, user: str = Depends(me)):
        path = pool.image_path(cid)
        if path is None or not path.exists():
            raise HTTPException(404, "no image for this candidate")
        return FileResponse(path, media_type="image/png", headers=IMMUTABLE)

    @api.get("/salon/guide/{cid}")
    def guide(cid: str, user: str = Depends(me)):
        from salon.curate.guides import load_guides

        c = candidate(cid)
        if c.guide is None or not c.subject:
            raise HTTPException(404, "this candidate used no guide photo")
        photo = next((g for g in load_guides(pool.dir, c.subject)
                      if g.id == c.guide.id), None)
        path = pool.dir / photo.file if photo else None
        if path is None or not path.exists():
            raise HTTPException(404, "the guide photo is not in this pool's guides folder")
        return FileResponse(path, headers=IMMUTABLE)

    @api.get("/salon/static/{name}")
    def static(name: str):
        path = STATIC / name
        if path.parent != STATIC or not path.is_file():
            raise HTTPException(404)
        media = "text/javascript; charset=utf-8" if name.endswith(".js") else None
        return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})

    return api


class Sessions:
    """Who sends a request to the JSON routes: the --user, or with logins, a session token's user.

    `token_for(user)` is called from the Gradio endpoint /salon_session, which learns the user
    from `gr.Request.username`; one token per user for the life of the process (a restart
    forgets them, as Gradio forgets its logins, and the page asks again after logging in).
    """

    COOKIE = "salon-session"

    def __init__(self, default_user: str | None):
        self.default_user = default_user  # None: the app has logins
        self._users: dict[str, str] = {}  # token -> user
        self._tokens: dict[str, str] = {}  # user -> token
        self._lock = threading.Lock()

    def token_for(self, user: str) -> str:
        with self._lock:
            if user not in self._tokens:
                token = secrets.token_urlsafe(32)
                self._tokens[user], self._users[token] = token, user
            return self._tokens[user]

    def user_of(self, request: Request) -> str | None:
        if self.default_user is not None:
            return self.default_user
        return self._users.get(request.cookies.get(self.COOKIE, ""))
