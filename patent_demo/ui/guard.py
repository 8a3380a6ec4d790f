"""The server's guard: an ASGI middleware on the Gradio app (``launch_kwargs`` installs it through
``app_kwargs``) that checks what Gradio's own routes leave open. In this process's memory; a restart
forgets it.

* **Logins** (``--annotators``): ``POST /login`` is refused with 429 while the name or the client address
  waits out its back-off (``access.LoginLimits``); every answer counts (a success clears the count).
* **Sessions behind a login**: the first login that uses a session hash claims it; a request of another
  login with that hash (queue join, its result stream, cancel, run) is refused with 403. ``/cancel``
  needs a login, as every other route does.
* **The login page** carries no API description (Gradio renders ``window.gradio_api_info`` into it).
* **Served files**: ``/gradio_api/file=`` answers the corpus's drawings (``ServedFiles``: a set of files,
  not their folders), the thumbnails, and Gradio's own copies of what a handler returned; any other path
  (the data folder a corpus was built from, the cache, the project), however spelled (``%2F``, ``../``,
  dot segments, a trailing dot), gets 403, decided on the path as Gradio itself resolves it.
* **Downloads**: an export or search report copy (``access.SERVED``) is served to the login it was
  written for only.
* **Jobs**: each job's event id is bound at its join to the session hash (and the login) that started it;
  ``/cancel`` with an event id of another session or login is refused with 403 (Gradio's own route
  would remove any event id from the queue), and with logins a job's result stream
  (``/call/<api>/<event id>``) is read by its login only.
* **Uploads on an open server** (no login): per client address at most ``UPLOADS`` uploads and
  ``UPLOAD_MB`` MB in any ``UPLOAD_WINDOW_S`` seconds (429 beyond), each at most ``OPEN_UPLOAD_MB`` MB.
* **Temporary files**: Gradio's temporary folder is swept (``TempSweeper``) at most once a minute, on
  uploads and queue joins.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict, deque
from pathlib import Path
from urllib.parse import parse_qs, unquote

from starlette.requests import cookie_parser

from patent_demo.ui.access import SERVED, Identity

API = "/gradio_api"
UPLOADS, UPLOAD_MB, UPLOAD_WINDOW_S = 60, 20, 10.0  # per client address, on an open server
OPEN_UPLOAD_MB = 10  # gradio's max_file_size on an open server (25 MB behind a login)
CLAIMS = 50_000  # session hashes remembered (the oldest go first)
_SESSION_ROUTES = ("/queue/join", "/cancel", "/run/", "/api/", "/queue/data")
_JOIN_ROUTES = ("/queue/join", "/call/")  # POST: a job starts and its event id comes back
_NO_API_INFO = b"window.gradio_api_info = {};"


class TempSweeper:
    """Keeps Gradio's temporary folder (uploads, cached copies of results) within an age and a total
    size: files older than ``max_age_s`` go, then the oldest until the folder holds at most ``max_bytes``;
    a file younger than ``min_age_s`` stays (a request may be about to read it). Empty folders go too."""

    def __init__(
        self,
        folder: str | Path | None = None,
        max_age_s: float = 6 * 3600,
        max_bytes: int = 2 * 1024**3,
        min_age_s: float = 60.0,
        every_s: float = 60.0,
    ) -> None:
        self._folder = Path(folder) if folder else None
        self.max_age_s, self.max_bytes, self.min_age_s, self.every_s = (
            max_age_s,
            max_bytes,
            min_age_s,
            every_s,
        )
        self._last = 0.0
        self._lock = threading.Lock()

    @property
    def folder(self) -> Path:
        if self._folder is None:
            from gradio.utils import get_upload_folder

            return Path(get_upload_folder())
        return self._folder

    def maybe_sweep(self, folder: str | Path | None = None, keep=frozenset) -> None:
        """A sweep in a background thread, unless one ran within ``every_s`` seconds; ``folder`` (the
        server's upload folder) is swept when the sweeper was made without one; ``keep()``: the absolute
        paths that stay."""
        now = time.monotonic()
        with self._lock:
            if now - self._last < self.every_s:
                return
            self._last = now
            if self._folder is None and folder:
                self._folder = Path(folder)
        threading.Thread(target=lambda: self.sweep(keep()), daemon=True, name="temp-sweep").start()

    def sweep(self, keep: set[str] = frozenset()) -> tuple[int, int]:
        """(files removed, bytes left); the files in ``keep`` stay and count."""
        now = time.time()
        files = []
        for dirpath, _, names in os.walk(self.folder):
            for name in names:
                p = os.path.abspath(os.path.join(dirpath, name))
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                files.append((st.st_mtime, st.st_size, p))
        files.sort()
        total, removed = sum(f[1] for f in files), 0
        for mtime, size, p in files:
            age = now - mtime
            if p in keep or age < self.min_age_s or (age <= self.max_age_s and total <= self.max_bytes):
                continue
            try:
                os.remove(p)
            except OSError:
                continue
            total -= size
            removed += 1
        for dirpath, dirs, names in os.walk(self.folder, topdown=False):
            if dirpath != str(self.folder) and not dirs and not names:
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass
        return removed, total


class Budget:
    """Per key at most ``count`` events and ``total`` of their amounts (bytes) in any ``per_s`` seconds (a
    sliding window)."""

    def __init__(self, count: int, total: float, per_s: float) -> None:
        self.count, self.total, self.per_s = count, total, per_s
        self._seen: OrderedDict[str, deque] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str, amount: float = 0.0) -> bool:
        now = time.monotonic()
        with self._lock:
            events = self._seen.pop(key, None) or deque()
            while events and now - events[0][0] > self.per_s:
                events.popleft()
            ok = len(events) < self.count and sum(a for _, a in events) + amount <= self.total
            if ok:
                events.append((now, amount))
            self._seen[key] = events
            while len(self._seen) > CLAIMS:
                self._seen.popitem(last=False)
            return ok


class ServedFiles:
    """What ``/gradio_api/file=`` may answer: the resolved paths in ``files`` (the corpus's drawings), what
    lies in ``folders`` (thumbnails the corpus and the app write), and what lies in Gradio's upload and
    cache folders (its copies of what a handler returned: a search's tiles, the requester's reports and
    exports, themselves bound to their login). A path is resolved as Gradio resolves it (``abspath``, then
    symbolic links), so every spelling of one file gets one answer."""

    def __init__(self, files=(), folders=()) -> None:
        self.files = frozenset(str(Path(f).resolve()) for f in files)
        self.folders = tuple(Path(f).resolve() for f in folders)

    def allows(self, raw: str, gradio_app=None) -> bool:
        from gradio import utils
        from gradio.data_classes import _StaticFiles

        try:
            path = Path(os.path.abspath(raw)).resolve()
        except (OSError, ValueError):
            return False
        if str(path) in self.files:
            return True
        roots = [*self.folders, *(_StaticFiles.all_paths or ())]
        upload_dir = getattr(gradio_app, "uploaded_file_dir", None)
        for folder in (upload_dir, utils.get_cache_folder()):
            if folder:
                roots.append(Path(os.path.abspath(folder)).resolve())
        return any(path.is_relative_to(Path(r).resolve()) for r in roots)


class Guard:
    """The ASGI middleware (see the module's docstring). ``identity`` is the server's; ``sweeper`` keeps
    the temporary folder in bounds."""

    def __init__(
        self,
        app,
        identity: Identity | None = None,
        sweeper: TempSweeper | None = None,
        uploads: Budget | None = None,
        served: ServedFiles | None = None,
    ) -> None:
        self.app = app
        self.identity = identity or Identity()
        self.sweeper = sweeper or TempSweeper()
        self.uploads = uploads or Budget(UPLOADS, UPLOAD_MB * 2**20, UPLOAD_WINDOW_S)
        self.served = served
        self._claims: OrderedDict[str, str] = OrderedDict()  # session hash -> the login that used it first
        self._jobs: OrderedDict[str, tuple[str, str]] = OrderedDict()  # event id -> (session hash, login)
        self._lock = threading.Lock()

    # -- helpers ------------------------------------------------------------------------------------------
    @staticmethod
    def _user(scope) -> str | None:
        """The login of a request: Gradio's access-token cookie, looked up in its tokens."""
        gradio_app = scope.get("app")
        header = b"; ".join(v for k, v in scope.get("headers") or () if k == b"cookie")
        cookies = cookie_parser(header.decode("latin-1"))
        cookie_id = getattr(gradio_app, "cookie_id", "")
        tokens = getattr(gradio_app, "tokens", {}) or {}
        for name in (f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"):
            if cookies.get(name) in tokens:
                return tokens[cookies[name]]
        return None

    def _sweep(self, scope) -> None:
        """A sweep of the server's upload folder, keeping the files Gradio holds for the page itself (the
        components' first values, such as the example drawings)."""
        gradio_app = scope.get("app")

        def keep() -> set[str]:
            blocks = gradio_app.get_blocks() if hasattr(gradio_app, "get_blocks") else None
            held = set()
            for block in blocks.blocks.values() if blocks is not None else ():
                held.update(os.path.abspath(p) for p in getattr(block, "keep_in_cache", ()) or ())
            return held

        self.sweeper.maybe_sweep(getattr(gradio_app, "uploaded_file_dir", None), keep)

    def claim(self, session_hash: str, user: str) -> bool:
        """Whether ``user`` may use ``session_hash`` (the first login that uses a hash claims it)."""
        with self._lock:
            owner = self._claims.pop(session_hash, user)
            self._claims[session_hash] = owner
            while len(self._claims) > CLAIMS:
                self._claims.popitem(last=False)
        return owner == user

    def _bind(self, event_id: str, session_hash: str, user: str) -> None:
        with self._lock:
            self._jobs[event_id] = (session_hash, user)
            while len(self._jobs) > CLAIMS:
                self._jobs.popitem(last=False)

    def job_owner(self, event_id: str, gradio_app=None) -> tuple[str, str] | None:
        """(session hash, login) a job was started with: bound at its join, else read from Gradio's queue;
        None for an event id of no known job."""
        with self._lock:
            if event_id in self._jobs:
                return self._jobs[event_id]
        blocks = gradio_app.get_blocks() if hasattr(gradio_app, "get_blocks") else None
        event = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", {}).get(event_id)
        if event is None:
            return None
        return str(getattr(event, "session_hash", "") or ""), str(getattr(event, "username", "") or "")

    async def _joined(self, scope, receive, send, session_hash: str, user: str):
        """Run a join, binding the event id of its answer to ``session_hash`` and ``user``."""
        status, chunks = 0, []

        async def watch(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and status == 200:
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        event_id = json.loads(b"".join(chunks)).get("event_id")
                    except (ValueError, AttributeError):
                        event_id = None
                    if isinstance(event_id, str):  # a job sent without a session hash has its event id as one
                        self._bind(event_id, session_hash or event_id, user)
            await send(message)

        await self.app(scope, receive, watch)

    @staticmethod
    async def _answer(send, status: int, message: str, extra: dict | None = None) -> None:
        body = json.dumps({"detail": message, **(extra or {})}, ensure_ascii=False).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def _body(receive, limit: int = 16 * 1024 * 1024) -> tuple[bytes, object]:
        """The whole request body, and a ``receive`` that gives it to the app once more."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > limit:
                break
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return body, replay

    # -- the middleware -------------------------------------------------------------------------------------
    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope.get("path", ""), scope.get("method", "GET")
        login = self.identity.login and getattr(scope.get("app"), "auth", None) is not None
        user = self._user(scope) if login else None
        address = (scope.get("client") or ("?", 0))[0]
        at = path.find(API)
        route = path[at + len(API) :] if at >= 0 else ""

        if method == "POST" and path.rstrip("/").endswith("/login") and at < 0 and login:
            return await self._login(scope, receive, send, address)
        if login and user is None and at < 0 and method == "GET":
            return await self._without_api_info(scope, receive, send)
        if route.startswith(("/file=", "/file/")) and method in ("GET", "HEAD"):
            raw = route[len("/file=") :]
            if self.served is not None and not self.served.allows(raw, scope.get("app")):
                return await self._answer(
                    send, 403, "⚠️ not served: the app serves the corpus's drawings only"
                )
            owner = SERVED.owner_of(unquote(raw))
            if owner and owner != (self.identity.canonical(user) if user else None):
                return await self._answer(send, 403, "⚠️ this download belongs to another login")
        if route.startswith("/upload") and method == "POST":
            self._sweep(scope)
            if not login:
                size = dict(scope.get("headers") or ()).get(b"content-length", b"0")
                if not self.uploads.allow(address, int(size) if size.isdigit() else 0):
                    return await self._answer(
                        send,
                        429,
                        f"⚠️ too many uploads from this address (at most {UPLOADS} and {UPLOAD_MB} MB in {UPLOAD_WINDOW_S:.0f} s); try again in a few seconds",
                    )
        if route.startswith(_SESSION_ROUTES) and login:
            if route.startswith("/queue/join"):
                self._sweep(scope)
            if user is None:
                return await self._answer(send, 401, "⚠️ log in first", {"error": "Not authenticated"})
            if method == "POST":
                body, receive = await self._body(receive)
                try:
                    session_hash = str((json.loads(body or b"{}") or {}).get("session_hash") or "")
                except (ValueError, AttributeError):
                    session_hash = ""
            else:
                session_hash = (
                    parse_qs(scope.get("query_string", b"").decode()).get("session_hash") or [""]
                )[0]
            if session_hash and not self.claim(session_hash, user):
                return await self._answer(send, 403, "⚠️ this session belongs to another login")
        if method == "POST" and route.startswith(("/cancel", *_JOIN_ROUTES)):
            body, receive = await self._body(receive)
            try:
                fields = json.loads(body or b"{}")
            except ValueError:
                fields = {}
            fields = fields if isinstance(fields, dict) else {}
            session_hash = str(fields.get("session_hash") or "")
            if route.startswith("/cancel"):
                owner = self.job_owner(str(fields.get("event_id") or ""), scope.get("app"))
                if owner is not None and (owner[0] != session_hash or owner[1] != (user or "")):
                    return await self._answer(
                        send, 403, "⚠️ this job belongs to another session: not cancelled"
                    )
            elif route.startswith(("/queue/join", "/call/v2/")) or route.rstrip("/").count("/") == 2:
                return await self._joined(scope, receive, send, session_hash, user or "")
        if method == "GET" and route.startswith("/call/") and login:
            owner = self.job_owner(route.rstrip("/").rsplit("/", 1)[-1], scope.get("app"))
            if owner is not None and owner[1] != user:
                return await self._answer(send, 403, "⚠️ this job belongs to another login")
        return await self.app(scope, receive, send)

    async def _login(self, scope, receive, send, address: str):
        body, receive = await self._body(receive, limit=64 * 1024)
        name = (parse_qs(body.decode("utf-8", "replace")).get("username") or [""])[0].strip()
        wait = self.identity.limits.wait(name, address)
        if wait > 0:
            return await self._answer(send, 429, f"⚠️ too many failed logins; try again in {int(wait) + 1} s")
        status = 0

        async def watch(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status == 200:
            self.identity.limits.succeeded(name, address)
        elif status in (400, 401, 403):
            self.identity.limits.failed(name, address)

    async def _without_api_info(self, scope, receive, send):
        """A page without a login: Gradio's login page, with the API description left out."""
        start: dict | None = None
        chunks: list[bytes] = []

        async def rewrite(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or ())
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    start = None
                    return await send(message)
                start = message
                return None
            if start is None:
                return await send(message)
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return None
            page = b"".join(chunks)
            head, sep, rest = page.partition(b"window.gradio_api_info = ")
            if sep:
                tail = rest[rest.find(b";</script>") + 1 :] if b";</script>" in rest else b""
                page = head + _NO_API_INFO + tail
            headers = [(k, v) for k, v in start.get("headers") or () if k != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, rewrite)
