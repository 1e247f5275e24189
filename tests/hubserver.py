"""A small Hugging Face Hub-protocol server on 127.0.0.1, for push / pull tests.

The real Hub is unreachable here, so the tests drive the real ``huggingface_hub`` client (with
``HF_HUB_DISABLE_XET=1``: no Xet CAS) against this. It implements what the client calls for
create_repo, upload_folder / create_commit, repo_info, list_repo_tree, get_paths_info,
hf_hub_download and snapshot_download:

    POST /api/repos/create                                    409 when the repo exists
    GET  /api/{datasets|models}/{ns}/{name}[/revision/{rev}]  {id, sha, siblings, private}
    GET  /api/{type}/{ns}/{name}/tree/{rev}[/{path}]          ?recursive=1; 404 EntryNotFound
    POST /api/{type}/{ns}/{name}/paths-info/{rev}             form: paths=..., expand=...
    POST /api/{type}/{ns}/{name}/preupload/{rev}              "lfs" for binary or large files
    POST /{datasets/}{ns}/{name}.git/info/lfs/objects/batch   no actions when the object exists
    PUT  /lfs-upload/{oid}                                    body must hash to oid (sha256)
    POST /api/validate-yaml                                   parses the card's YAML
    POST /api/{type}/{ns}/{name}/commit/{rev}                 NDJSON; parentCommit checked (412)
    GET|HEAD /{datasets/}{ns}/{name}/resolve/{rev}/{path}     X-Repo-Commit, ETag, X-Linked-*

Writes need ``Authorization: Bearer <token>`` (any token): the test checks the token travels;
LFS uploads go to signed URLs instead, like the Hub's presigned storage URLs.
Revisions are branch names, full commit ids or unique prefixes of at least 7 digits. State is in
memory; ``hub.requests`` logs (method, path) for assertions; ``hub.fail_commits = N`` makes the
next N commits fail after their files were uploaded (a push cut off at its end).

    with serve() as (url, hub):   # in tests
    python tests/hubserver.py --port 8765   # by hand
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

LFS_POINTER_SIZE = 134


@dataclass
class Blob:
    data: bytes
    lfs: bool

    @property
    def git_oid(self) -> str:  # a git blob id, as the Hub reports for regular files
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class Commit:
    oid: str
    parent: str | None
    message: str
    files: dict[str, Blob]


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)


class HubError(Exception):
    def __init__(self, status: int, code: str | None, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class FakeHub:
    def __init__(self):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_commits = 0  # the next N commits answer 500, as an interrupted push would end
        self.lock = threading.Lock()
        self.base_url = ""
        self.secret = _oid("secret")  # signs LFS upload URLs, like the Hub's presigned S3 URLs
        api = "/api/{kind:str}/{ns:str}/{name:str}"
        self.app = Starlette(routes=[
            Route("/api/repos/create", self.create_repo, methods=["POST"]),
            Route("/api/validate-yaml", self.validate_yaml, methods=["POST"]),
            Route(api, self.repo_info, methods=["GET"]),
            Route(api + "/revision/{rev:path}", self.repo_info, methods=["GET"]),
            Route(api + "/tree/{rest:path}", self.tree, methods=["GET"]),
            Route(api + "/paths-info/{rev:path}", self.paths_info, methods=["POST"]),
            Route(api + "/preupload/{rev:path}", self.preupload, methods=["POST"]),
            Route(api + "/commit/{rev:path}", self.commit, methods=["POST"]),
            Route("/lfs-upload/{oid:str}", self.lfs_upload, methods=["PUT"]),
            Route("/datasets/{ns:str}/{name:str}.git/info/lfs/objects/batch", self.lfs_batch, methods=["POST"]),
            Route("/{ns:str}/{name:str}.git/info/lfs/objects/batch", self.lfs_batch, methods=["POST"]),
            Route("/datasets/{ns:str}/{name:str}/resolve/{rest:path}", self.resolve, methods=["GET", "HEAD"]),
            Route("/{ns:str}/{name:str}/resolve/{rest:path}", self.resolve, methods=["GET", "HEAD"]),
        ])
        self.app.add_middleware(_Guard, hub=self)

    # -- helpers ------------------------------------------------------------------------------

    def _repo(self, request: Request) -> Repo:
        p = request.path_params
        kind = p.get("kind") or ("datasets" if request.url.path.startswith("/datasets/") else "models")
        key = (kind.rstrip("s"), f"{p['ns']}/{p['name']}")
        if key not in self.repos:
            raise HubError(404, "RepoNotFound", f"Repository {key[1]} not found")
        return self.repos[key]

    @staticmethod
    def _commit(repo: Repo, rev: str) -> Commit:
        from urllib.parse import unquote

        rev = unquote(rev)
        if rev in repo.branches:
            return repo.commits[repo.branches[rev]]
        matches = [c for oid, c in repo.commits.items() if len(rev) >= 7 and oid.startswith(rev)]
        if len(matches) != 1:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return matches[0]

    @staticmethod
    def _entry(path: str, blob: Blob | None) -> dict:
        if blob is None:
            return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0, "path": path}
        entry = {"type": "file", "oid": blob.git_oid, "size": len(blob.data), "path": path}
        if blob.lfs:
            entry["lfs"] = {"oid": blob.sha256, "size": len(blob.data), "pointerSize": LFS_POINTER_SIZE}
        return entry

    @staticmethod
    def _folders(files: dict[str, Blob]) -> set[str]:
        return {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}

    # -- routes -------------------------------------------------------------------------------

    async def create_repo(self, request: Request):
        body = await request.json()
        kind = body.get("type") or "model"
        repo_id = f"{body.get('organization') or 'user'}/{body['name']}"
        prefix = "datasets/" if kind == "dataset" else ""
        url = f"{self.base_url}/{prefix}{repo_id}"
        if (kind, repo_id) in self.repos:  # the Hub's 409 still names the repo (create_repo reads it)
            return JSONResponse({"error": "You already created this repo", "url": url}, status_code=409)
        repo = Repo(repo_id, body.get("visibility") == "private" or bool(body.get("private")))
        first = Commit(_oid("initial", repo_id), None, "initial commit",
                       {".gitattributes": Blob(b"*.parquet filter=lfs diff=lfs merge=lfs -text\n", False)})
        repo.commits[first.oid] = first
        repo.branches["main"] = first.oid
        self.repos[(kind, repo_id)] = repo
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    async def validate_yaml(self, request: Request):
        content = (await request.json()).get("content", "")
        if content.startswith("---\n"):  # the client sends the whole card; check its front matter
            content = content[4:].split("\n---", 1)[0]
        try:
            yaml.safe_load(content)
        except yaml.YAMLError as e:
            return JSONResponse({"errors": [{"message": str(e)}], "warnings": []}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})

    async def repo_info(self, request: Request):
        repo = self._repo(request)
        commit = self._commit(repo, request.path_params.get("rev", "main"))
        return JSONResponse({"id": repo.repo_id, "sha": commit.oid, "private": repo.private,
                             "author": repo.repo_id.split("/")[0], "lastModified": "2026-01-01T00:00:00.000Z",
                             "tags": [], "downloads": 0, "likes": 0,
                             "siblings": [{"rfilename": p, "size": len(b.data)} for p, b in sorted(commit.files.items())]})

    async def tree(self, request: Request):
        repo = self._repo(request)
        rev, _, path = request.path_params["rest"].partition("/")
        commit = self._commit(repo, rev)
        path = path.strip("/")
        recursive = request.query_params.get("recursive", "").lower() in ("1", "true")
        folders = self._folders(commit.files)
        if path and path not in folders:
            raise HubError(404, "EntryNotFound", f"{path} does not exist on {rev}")
        prefix = f"{path}/" if path else ""
        entries = []
        for p in sorted(set(commit.files) | folders):
            if not p.startswith(prefix) or (not recursive and "/" in p[len(prefix):]):
                continue
            entries.append(self._entry(p, commit.files.get(p)))
        return JSONResponse(entries)

    async def paths_info(self, request: Request):
        repo = self._repo(request)
        commit = self._commit(repo, request.path_params["rev"])
        form = await request.form()
        folders = self._folders(commit.files)
        out = []
        for p in form.getlist("paths"):
            if p in commit.files or p in folders:
                out.append(self._entry(p, commit.files.get(p)))
        return JSONResponse(out)

    async def preupload(self, request: Request):
        repo = self._repo(request)
        commit = self._commit(repo, request.path_params["rev"])
        files = []
        for f in (await request.json())["files"]:
            sample = base64.b64decode(f["sample"])
            lfs = f["size"] > 10 * 2**20 or b"\0" in sample or not f["path"].endswith((".md", ".json", ".txt", ".gitattributes"))
            existing = commit.files.get(f["path"])
            files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                          "oid": existing.git_oid if existing else None})
        return JSONResponse({"files": files, "commitOid": commit.oid})

    async def lfs_batch(self, request: Request):
        self._repo(request)
        body = await request.json()
        objects = []
        for obj in body["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.lfs:  # already stored: no actions, the client skips it
                sig = hashlib.sha1(f"{self.secret}{obj['oid']}".encode()).hexdigest()
                entry["actions"] = {"upload": {"href": f"{self.base_url}/lfs-upload/{obj['oid']}?sig={sig}"}}
            objects.append(entry)
        return JSONResponse({"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

    async def lfs_upload(self, request: Request):
        oid = request.path_params["oid"]
        if request.query_params.get("sig") != hashlib.sha1(f"{self.secret}{oid}".encode()).hexdigest():
            raise HubError(403, None, "bad upload signature")
        data = await request.body()
        if hashlib.sha256(data).hexdigest() != oid:
            raise HubError(400, None, "uploaded content does not match its oid")
        self.lfs[oid] = data
        return Response(status_code=200)

    async def commit(self, request: Request):
        repo = self._repo(request)
        if self.fail_commits:
            self.fail_commits -= 1
            raise HubError(500, None, "Internal Error: the commit was not created")
        branch = request.path_params["rev"]
        head = self._commit(repo, branch)
        lines = [json.loads(line) for line in (await request.body()).splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        if header.get("parentCommit") and header["parentCommit"] != head.oid:
            raise HubError(412, None, "A commit has happened since. Please refresh and try again.")
        files = dict(head.files)
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                files[value["path"]] = Blob(base64.b64decode(value["content"]), False)
            elif key == "lfsFile":
                if value["oid"] not in self.lfs:
                    raise HubError(400, None, f"LFS object {value['oid']} was never uploaded")
                files[value["path"]] = Blob(self.lfs[value["oid"]], True)
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key == "deletedFolder":
                for p in [p for p in files if p.startswith(value["path"].rstrip("/") + "/")]:
                    del files[p]
        new = Commit(_oid(head.oid, header.get("summary", ""), repr(sorted((p, b.sha256) for p, b in files.items()))),
                     head.oid, header.get("summary", ""), files)
        repo.commits[new.oid] = new
        repo.branches[branch if branch in repo.branches else "main"] = new.oid
        prefix = "datasets/" if self._repo_kind(repo) == "dataset" else ""
        return JSONResponse({"commitUrl": f"{self.base_url}/{prefix}{repo.repo_id}/commit/{new.oid}",
                             "commitOid": new.oid, "pullRequestUrl": None})

    def _repo_kind(self, repo: Repo) -> str:
        return next(kind for (kind, rid), r in self.repos.items() if r is repo)

    async def resolve(self, request: Request):
        repo = self._repo(request)
        rev, _, path = request.path_params["rest"].partition("/")
        commit = self._commit(repo, rev)
        blob = commit.files.get(path)
        if blob is None:
            raise HubError(404, "EntryNotFound", f"{path} does not exist on {rev}")
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{blob.git_oid}"',
                   "Content-Length": str(len(blob.data)), "Accept-Ranges": "bytes"}
        if blob.lfs:
            headers |= {"X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(len(blob.data))}
        body = b"" if request.method == "HEAD" else blob.data
        return Response(body, headers=headers, media_type="application/octet-stream")


class _Guard:
    """Logs requests, checks write auth, and turns HubError into the Hub's error headers."""

    def __init__(self, app, hub: FakeHub):
        self.app, self.hub = app, hub

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.hub.requests.append((scope["method"], scope["path"]))
        auth = dict(scope["headers"]).get(b"authorization", b"")
        try:
            reads = ("/api/validate-yaml", "/lfs-upload/")  # uploads are authorised by their signed URL
            if scope["method"] in ("POST", "PUT") and not scope["path"].startswith(reads) \
                    and not auth.startswith(b"Bearer ") and "/paths-info/" not in scope["path"]:
                raise HubError(401, None, "Invalid credentials in Authorization header")
            return await self.app(scope, receive, send)
        except HubError as e:
            headers = {"X-Error-Message": e.message}
            if e.code:
                headers["X-Error-Code"] = e.code
            return await JSONResponse({"error": e.message}, status_code=e.status, headers=headers)(scope, receive, send)


def _oid(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts + (repr(time.time_ns()),)).encode()).hexdigest()


@contextmanager
def serve():
    """Run a FakeHub on a free 127.0.0.1 port in a thread; yields (base_url, hub)."""
    import uvicorn

    hub = FakeHub()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    hub.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(hub.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the fake Hub did not start")
        time.sleep(0.01)
    try:
        yield hub.base_url, hub
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


if __name__ == "__main__":
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description="fake Hugging Face Hub on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    hub = FakeHub()
    hub.base_url = f"http://127.0.0.1:{args.port}"
    uvicorn.run(hub.app, host="127.0.0.1", port=args.port, log_level="info")
