"""Who acts, and what a request may carry: the annotator of a request (``Identity``: sign-in, login or typed
name, admins), who may read whose labels, who owns a label for undo, lenient inputs, and the private
folder the app serves its downloads from.

**Roles.** With ``--annotators`` the annotator is the login; a shared secret (``*:SECRET``) logs in any
name except one that has its own password or is an admin. ``--admin`` names who adjudicates, exports
and reads every annotator's labels, notes and decisions (reports, agreement, the disagreement queue);
everybody else reads their own labels only. Without ``--admin`` everybody may do all of it (a single
examiner, or a team that trusts itself). A party to a pair (anyone who labelled it, undone or not) never
adjudicates it: when every admin is a party the pair stays disputed until an admin who did not label it
is added.

**Ownership.** Undo acts on the last label of the browser session that made it, and, behind a login or
sign-in, only on a label stored under that same login. Without a login the page holds a random token in
its ``gr.BrowserState`` (localStorage) and the session is owned by the token's HMAC (``bind_owner``):
undo must carry the token, so a client that sends another browser's session hash acts as nobody else.
A ``gradio_client`` session (no page load, no token) is owned by its session alone.
"""

from __future__ import annotations

import atexit
import hmac
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from patent_demo.labels.fields import LabelError, clean_line

# -- lenient inputs -------------------------------------------------------------------------------------------
LENIENT_CLASS = "lenient"  # the mark (an elem_class) of a lenient component, kept when Gradio rebuilds it
_LENIENT_TYPES: set[type] = set()


def lenient(component):
    """``component`` (a Number, Slider, Dropdown or Radio) with bad values (text, out of range, fractions,
    a value outside the choices) passed to the handler unchanged, so the handler answers with a ⚠️ message
    saying what is wrong instead of Gradio's bare error. The component's class gets a checking
    ``preprocess`` once; only components marked with the ``elem_classes`` entry ``LENIENT_CLASS`` pass bad
    values on. The mark is part of the constructor arguments: Gradio rebuilds a component from them once an
    event updates it (the rank after a label), and the rebuilt one must stay lenient in that browser
    session too (a patched instance did not)."""
    base = type(component)
    if base not in _LENIENT_TYPES:
        strict = base.preprocess

        def preprocess(self, payload):
            classes = self.elem_classes or []
            if LENIENT_CLASS not in ([classes] if isinstance(classes, str) else classes):
                return strict(self, payload)
            try:
                return strict(self, payload)
            except Exception:  # noqa: BLE001 - the handler explains the value
                return payload

        base.preprocess = preprocess
        _LENIENT_TYPES.add(base)
    classes = component.elem_classes or []
    classes = [*([classes] if isinstance(classes, str) else classes), LENIENT_CLASS]
    component.elem_classes = classes
    if component._constructor_args:
        component._constructor_args[0]["elem_classes"] = classes
    return component


# -- identity --------------------------------------------------------------------------------------------
@dataclass
class Identity:
    """Who may label, adjudicate and export, and how the annotator of a request is found."""

    oauth: bool = False  # a Space with Hugging Face sign-in
    users: dict[str, str] = field(default_factory=dict)  # login name -> password (``--annotators``)
    shared_secret: str = ""  # any login name with this password (``--annotators '*:SECRET'``)
    admins: frozenset[str] = frozenset()  # ``--admin``: who adjudicates and exports

    @classmethod
    def from_flags(cls, annotators: str = "", admin: str = "", oauth: bool = False) -> Identity:
        """``annotators``: ``name:password`` entries separated by commas, ``@FILE`` with one per line, or
        ``*:SECRET`` (a shared secret: any login name); ``admin``: names separated by commas."""
        spec = (annotators or "").strip()
        if spec.startswith("@"):
            spec = ",".join(Path(spec[1:]).read_text(encoding="utf-8").split())
        users, secret = {}, ""
        for entry in filter(None, (e.strip() for e in spec.split(","))):
            name, sep, password = entry.partition(":")
            if not sep or not password:
                raise ValueError(f"--annotators entry {name!r} needs the form name:password (or '*:SECRET')")
            if name == "*":
                secret = password
            else:
                users[clean_line(name, "annotator name")] = password
        admins = frozenset(clean_line(a, "admin name") for a in (admin or "").split(",") if a.strip())
        ident = cls(oauth=oauth, users=users, shared_secret=secret, admins=admins)
        if admins and not (ident.login or oauth):
            raise ValueError(
                "--admin needs --annotators (or a Space with sign-in): a typed name proves nothing"
            )
        if not oauth and (lacking := sorted(admins - set(users))):
            raise ValueError(
                f"--admin {', '.join(lacking)}: an admin needs a password of their own in --annotators "
                "(name:password); the shared secret never logs in an admin"
            )
        return ident

    @property
    def login(self) -> bool:
        return bool(self.users or self.shared_secret)

    def auth(self):
        """The ``auth`` argument of ``launch``: a password check, or None without ``--annotators``."""
        if not self.login:
            return None

        def check(username: str, password: str) -> bool:
            try:
                name = clean_line(username, "login name")
            except LabelError:
                return False
            if not name:
                return False
            if name in self.users:
                return hmac.compare_digest(self.users[name].encode(), (password or "").encode())
            if name in self.admins:  # an admin has a password of their own: the shared secret is not it
                return False
            return bool(self.shared_secret) and hmac.compare_digest(
                self.shared_secret.encode(), (password or "").encode()
            )

        return check

    def who(self, typed: Any, request: gr.Request | None, profile: Any = None) -> str:
        """The annotator of a request: the signed-in account, the logged-in user, else the typed name."""
        if self.oauth:
            name = getattr(profile, "username", "") if profile is not None else ""
            if not name:
                raise LabelError("sign in with Hugging Face first: labels are stored under your account")
            return clean_line(name, "annotator")
        if self.login:
            name = getattr(request, "username", None) or ""
            if not name:
                raise LabelError("log in first: labels are stored under your login")
            return clean_line(name, "annotator")
        return clean_line(typed if typed is not None else "", "annotator")

    def sees_all(self, who: str) -> bool:
        """Whether ``who`` reads every annotator's labels (an admin, or anyone when no admin is set)."""
        return not self.admins or who in self.admins

    def reader(self, typed: Any, request: gr.Request | None, profile: Any = None) -> str | None:
        """Whose labels a report shows to this request: None for everybody's, else the annotator's own
        (``""`` when a login is needed and missing: nobody's)."""
        if not self.admins:
            return None
        try:
            who = self.who(typed, request, profile)
        except LabelError:
            return ""
        return None if who in self.admins else who

    def check_admin(self, who: str, action: str) -> None:
        if self.admins and who not in self.admins:
            raise LabelError(
                f"{who or 'this user'} may not {action}; ask one of: {', '.join(sorted(self.admins))}"
            )


# -- a browser's own proof of its session ----------------------------------------------------------------
_OWNER_SECRET = secrets.token_bytes(32)  # per process: owners sign nothing across restarts
BOUND = "b:"  # the prefix of an owner id bound to a browser's token


def browser_owner(token: str) -> str:
    """The owner id of the browser holding ``token`` (its ``gr.BrowserState``): an HMAC of the token, so the
    database and the server's session state never hold the token itself."""
    return BOUND + hmac.new(_OWNER_SECRET, token.encode(), "sha256").hexdigest()[:32]


def bind_owner(token: Any, session: dict | None) -> tuple[str, dict]:
    """On page load: the browser's token (a new random one the first time) and its session, owned by the
    token's HMAC. Without a login, undo then needs the token as well as Gradio's session hash."""
    token = token if isinstance(token, str) and 32 <= len(token) <= 64 else secrets.token_hex(24)
    session = dict(session or {"lists": {}, "checkpoints": {}})
    session["owner"] = browser_owner(token)
    return token, session


def check_owner(session: dict | None, token: Any, action: str = "undo acts on your own labels only") -> None:
    """Refuse a request on a browser-bound session that does not carry that browser's token (a client that
    sends another browser's session hash)."""
    owner = (session or {}).get("owner") or ""
    if owner.startswith(BOUND) and not (
        isinstance(token, str) and hmac.compare_digest(owner, browser_owner(token))
    ):
        raise LabelError(f"this browser session is not yours: {action}")


# -- files a handler serves ---------------------------------------------------------------------------
class PrivateCopies:
    """Copies of the files a handler returns (exports, search reports), in a private temporary folder
    (0700, files 0600) that Gradio may serve wherever the originals live (``/data`` on a Space is outside
    its allowed paths). Each call writes a fresh subfolder of its ``kind`` and removes all but the ``KEEP``
    newest (a concurrent request's copies stay until Gradio has read them); the folder goes when the
    process ends. Gradio's own cached copy keeps the 0600 mode (it copies with ``shutil.copy2``)."""

    KEEP = 8

    def __init__(self, prefix: str = "patent-demo-served-") -> None:
        self.prefix = prefix
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None or not self._root.is_dir():
            self._root = Path(tempfile.mkdtemp(prefix=self.prefix))  # mkdtemp: 0700
            atexit.register(shutil.rmtree, self._root, True)
        return self._root

    def serve(self, paths: list[Path], kind: str) -> list[str]:
        parent = self.root / kind
        parent.mkdir(mode=0o700, exist_ok=True)
        folder = Path(tempfile.mkdtemp(dir=parent))  # 0700
        older = sorted((p for p in parent.iterdir() if p != folder), key=lambda p: p.stat().st_mtime_ns)
        for old in older[: max(0, len(older) - (self.KEEP - 1))]:
            shutil.rmtree(old, ignore_errors=True)
        out = []
        for p in paths:
            dst = folder / Path(p).name
            shutil.copyfile(p, dst)
            os.chmod(dst, 0o600)
            out.append(str(dst))
        return out

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


SERVED = PrivateCopies()  # the one private folder of this process's served copies
