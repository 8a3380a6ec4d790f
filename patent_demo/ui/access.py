"""Who acts, and what a request may carry: the annotator of a request (``Identity``: sign-in, login or typed
name, admins), who may read whose labels, who owns a label for undo, lenient inputs, and the private
folder the app serves its downloads from.

**Roles.** With ``--annotators`` the annotator is the login; a shared secret (``*:SECRET``) logs in any
name except one that has its own password or is an admin, or is confusable with one. Login names are
compared normalised (``login_name``: NFKC, casefold, no format characters, one script); failed logins
are limited per name and per client address (``LoginLimits``, enforced by ``patent_demo.ui.guard``). ``--admin`` names who adjudicates, exports
and reads every annotator's labels, notes and decisions (reports, agreement, the disagreement queue);
everybody else reads their own labels only. Without ``--admin`` everybody may do all of it (a single
examiner, or a team that trusts itself). A party to a pair (anyone who labelled it, undone or not) never
adjudicates it: when every admin is a party the pair stays disputed until an admin who did not label it
is added.

**Ownership.** Undo acts on the last label of the browser session that made it, and, behind a login or
sign-in, only on a label stored under that same login. Without a login the page holds a random token in
its ``gr.BrowserState`` (localStorage) and the session is owned by the token's HMAC (``bind_owner``):
undo must carry the token, and so must every other event that reads the session (``owned``), so a
client that sends another browser's session hash reads and acts on nothing of it. A ``gradio_client``
session (no page load, no token) is owned by its login (``patent_demo.ui.guard`` gives a session hash to
the first login that uses it), or on an open server by its session hash alone. A served file (export,
search report) downloads for the login it was written for only (``PrivateCopies.owner_of``).
"""

from __future__ import annotations

import atexit
import functools
import hmac
import inspect
import os
import secrets
import shutil
import tempfile
import threading
import time
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from patent_demo.labels.fields import LabelError, clean_line, preview

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


# -- login names ---------------------------------------------------------------------------------------------
# scripts that one name may mix (Japanese writes kanji, hiragana and katakana together)
_SCRIPT_GROUPS = {"HIRAGANA": "HAN", "KATAKANA": "HAN", "CJK": "HAN", "HALFWIDTH": "HAN"}
# letters of other scripts (and digits) that read as a Latin letter, after NFKC and casefold
_LOOKALIKE = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "н": "h",
        "і": "l",
        "ї": "l",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "о": "o",
        "р": "p",
        "ԁ": "d",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "ԛ": "q",
        "ԝ": "w",
        "ɡ": "g",
        "ı": "l",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "l",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "0": "o",
        "1": "l",
        "i": "l",
        "|": "l",
        "5": "s",
        "$": "s",
        "@": "a",
    }
)


def _script(ch: str) -> str:
    word = unicodedata.name(ch, "?").split(" ", 1)[0]
    return _SCRIPT_GROUPS.get(word, word)


def login_name(value: Any) -> str:
    """A login name as every comparison sees it: one line (``clean_line``), NFKC (full-width and other
    compatibility forms become plain letters), without format characters (zero-width spaces and joiners,
    bidi marks), casefolded, inner whitespace collapsed. A name whose letters mix scripts (a Cyrillic ``а``
    in a Latin name) is refused with ``LabelError``."""
    name = unicodedata.normalize("NFKC", clean_line(value, "login name"))
    name = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    name = " ".join(name.casefold().split())
    scripts = sorted({_script(ch) for ch in name if ch.isalpha()})
    if len(scripts) > 1:
        raise LabelError(
            f"the name {preview(name)} mixes scripts ({', '.join(scripts).lower()}); use one script"
        )
    return name


def skeleton(name: str) -> str:
    """What a normalised name looks like: accents dropped, look-alike letters and digits mapped to one Latin
    letter (``о`` → o, ``0`` → o, ``1`` and ``i`` → l), ``rn`` → m, separators left out. Two names with
    one skeleton are confusable."""
    bare = "".join(ch for ch in unicodedata.normalize("NFD", name) if not unicodedata.combining(ch))
    bare = bare.translate(_LOOKALIKE).replace("rn", "m").replace("vv", "w")
    return "".join(ch for ch in bare if ch.isalnum())


# -- login attempts --------------------------------------------------------------------------------------------
class LoginLimits:
    """Failed logins per login name (normalised) and per client address, in this process's memory (a
    restart forgets them). After ``per_name`` failures of a name, or ``per_address`` failures from an
    address, that name or address waits ``base_s`` seconds before its next try, twice as long after each
    further failure, at most ``cap_s``; while it waits every try is refused unchecked, the right password
    too. A successful login clears its name's and its address's count. At most ``MAX_KEYS`` names and
    addresses are remembered (the oldest go first)."""

    MAX_KEYS = 20_000

    def __init__(
        self,
        per_name: int = 5,
        per_address: int = 30,
        base_s: float = 30.0,
        cap_s: float = 900.0,
        clock=time.monotonic,
    ) -> None:
        self.per_name, self.per_address, self.base_s, self.cap_s = per_name, per_address, base_s, cap_s
        self._clock = clock
        self._seen: OrderedDict[str, tuple[int, float]] = OrderedDict()  # key -> (failures, wait until)
        self._lock = threading.Lock()

    @staticmethod
    def _keys(name: str, address: str) -> tuple[str, str]:
        try:
            key = login_name(name)
        except LabelError:
            key = " ".join(str(name).casefold().split())
        return "name:" + key, "address:" + (address or "?")

    def wait(self, name: str, address: str) -> float:
        """Seconds until this name may try again from this address (0: now)."""
        now = self._clock()
        with self._lock:
            until = max(self._seen.get(k, (0, 0.0))[1] for k in self._keys(name, address))
        return max(0.0, until - now)

    def failed(self, name: str, address: str) -> None:
        now = self._clock()
        with self._lock:
            for key, limit in zip(self._keys(name, address), (self.per_name, self.per_address), strict=True):
                n = self._seen.pop(key, (0, 0.0))[0] + 1
                until = now + min(self.cap_s, self.base_s * 2 ** (n - limit)) if n >= limit else 0.0
                self._seen[key] = (n, until)
            while len(self._seen) > self.MAX_KEYS:
                self._seen.popitem(last=False)

    def succeeded(self, name: str, address: str) -> None:
        with self._lock:
            for key in self._keys(name, address):
                self._seen.pop(key, None)

    def forget(self) -> None:
        with self._lock:
            self._seen.clear()


# -- identity --------------------------------------------------------------------------------------------
@dataclass
class Identity:
    """Who may label, adjudicate and export, and how the annotator of a request is found."""

    oauth: bool = False  # a Space with Hugging Face sign-in
    users: dict[str, str] = field(default_factory=dict)  # login name -> password (``--annotators``)
    shared_secret: str = ""  # any login name with this password (``--annotators '*:SECRET'``)
    admins: frozenset[str] = frozenset()  # ``--admin``: who adjudicates and exports
    limits: LoginLimits = field(default_factory=lambda: LoginLimits())  # failed logins, in memory

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
        seen: dict[str, str] = {}
        for name in [*users, *admins]:
            try:
                key = login_name(name)
            except LabelError as err:
                raise ValueError(f"--annotators / --admin: {err}") from None
            if seen.setdefault(key, name) != name:
                raise ValueError(f"--annotators / --admin: {seen[key]!r} and {name!r} are one login name")
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

    def _named(self) -> dict[str, str]:
        """The configured users and admins by their normalised login name (``login_name``)."""
        return {login_name(n): n for n in [*self.users, *self.admins]}

    def canonical(self, value: Any) -> str:
        """The name a login is known by: a configured user's or admin's own spelling when the normalised
        names match, else the normalised name. ``LabelError`` for a name that mixes scripts."""
        name = login_name(value)
        return self._named().get(name, name)

    def confusable(self, name: str) -> str:
        """The configured user or admin that ``name`` (normalised) can be mistaken for, or ``""``."""
        look = skeleton(name)
        return next((n for key, n in self._named().items() if key != name and skeleton(key) == look), "")

    def auth(self):
        """The ``auth`` argument of ``launch``: a password check, or None without ``--annotators``. Names
        are compared normalised (``login_name``): ``ALICE`` and a full-width ``ａｌｉｃｅ`` are alice and need
        her password; the shared secret logs in no configured name, nor one confusable with it."""
        if not self.login:
            return None

        def check(username: str, password: str) -> bool:
            try:
                name = self.canonical(username)
            except LabelError:
                return False
            if not name:
                return False
            if name in self.users:
                return hmac.compare_digest(self.users[name].encode(), (password or "").encode())
            if name in self.admins:  # an admin has a password of their own: the shared secret is not it
                return False
            if self.confusable(name):
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
            return self.canonical(name)
        return clean_line(typed if typed is not None else "", "annotator")

    def download_owner(self, request: gr.Request | None) -> str:
        """Who may download a file served for this request (``SERVED.serve``): the login behind
        ``--annotators``, else ``""`` (anybody who reaches the server)."""
        name = getattr(request, "username", None) or "" if self.login else ""
        try:
            return self.canonical(name) if name else ""
        except LabelError:
            return ""

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


def bind_owner(token: Any, session: dict | None) -> tuple[Any, Any]:
    """On page load: the browser's token (a new random one the first time) and its session, owned by the
    token's HMAC. Without a login, undo then needs the token as well as Gradio's session hash. A session
    already bound to another token stays as it is (a client that sends another browser's session hash and
    its own token takes nothing over)."""
    token = token if isinstance(token, str) and 32 <= len(token) <= 64 else secrets.token_hex(24)
    if str((session or {}).get("owner") or "").startswith(BOUND):
        try:
            check_owner(session, token)
        except LabelError:
            return gr.update(), gr.update()
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


OWNER_KWARGS = ("owner_token", "owner_session")  # the keyword inputs ``owned`` adds to an event


def owned(fn, outputs: list, action: str = "its searches and hits are for that browser only"):
    """``fn``, an event handler that reads the browser session, refusing a session bound to another
    browser's token (``check_owner``) before it runs. The event passes the token and the session once more
    as the keyword inputs ``owner_token`` and ``owner_session`` (``inputs_kwargs``); Gradio injects the
    handler's own special parameters (request, select data, progress) as before. A refused request gets
    the ⚠️ message in the first Markdown output (and a toast), every other output unchanged."""
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in OWNER_KWARGS]
    first_md = next((i for i, o in enumerate(outputs) if isinstance(o, gr.Markdown)), None)

    @functools.wraps(fn)
    def checked(*args, owner_token=None, owner_session=None):
        try:
            check_owner(owner_session, owner_token, action)
        except LabelError as err:
            msg = f"⚠️ {err}"
            gr.Warning(msg)
            out = [msg if i == first_md else gr.update() for i in range(len(outputs))]
            return out[0] if len(outputs) == 1 else tuple(out)
        return fn(*args)

    checked.__signature__ = inspect.Signature([*params, *extra])
    return checked


# -- files a handler serves ---------------------------------------------------------------------------
class PrivateCopies:
    """Copies of the files a handler returns (exports, search reports), in a private folder (0700, files
    0600) inside Gradio's temporary folder, so Gradio serves them where they are (``/data`` on a Space is
    outside its allowed paths) and their download address is theirs. Each call writes a fresh subfolder of
    its ``kind`` and removes all but the ``KEEP`` newest (a concurrent request's copies stay until Gradio
    has read them); the folder goes when the process ends. Each subfolder remembers the login it was
    written for (``owner``): ``owner_of`` answers for a download address, and the server's guard
    (``patent_demo.ui.guard``) serves it to that login only."""

    KEEP = 8

    def __init__(self, prefix: str = "patent-demo-served-") -> None:
        self.prefix = prefix
        self._root: Path | None = None
        self._owners: dict[Path, str] = {}  # subfolder -> the login it was written for
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        from gradio.utils import get_upload_folder

        parent = Path(os.path.abspath(get_upload_folder()))
        if self._root is None or not self._root.is_dir() or self._root.parent != parent:
            parent.mkdir(parents=True, exist_ok=True)
            self._root = Path(os.path.abspath(tempfile.mkdtemp(prefix=self.prefix, dir=parent)))  # 0700
            atexit.register(shutil.rmtree, self._root, True)
        return self._root

    def serve(self, paths: list[Path], kind: str, owner: str = "") -> list[str]:
        parent = self.root / kind
        parent.mkdir(mode=0o700, exist_ok=True)
        folder = Path(tempfile.mkdtemp(dir=parent))  # 0700
        older = sorted((p for p in parent.iterdir() if p != folder), key=lambda p: p.stat().st_mtime_ns)
        with self._lock:
            self._owners[folder] = owner
            for old in older[: max(0, len(older) - (self.KEEP - 1))]:
                shutil.rmtree(old, ignore_errors=True)
                self._owners.pop(old, None)
        out = []
        for p in paths:
            dst = folder / Path(p).name
            shutil.copyfile(p, dst)
            os.chmod(dst, 0o600)
            out.append(str(dst))
        return out

    def owner_of(self, path: str | Path) -> str | None:
        """The login a served copy was written for (``""``: anybody's), or None for a path that is not one
        of this process's served copies."""
        if self._root is None:
            return None
        for root, given in (
            (self._root, os.path.abspath(path)),
            (self._root.resolve(), os.path.realpath(path)),
        ):
            try:
                rel = Path(given).relative_to(root)
            except ValueError:
                continue
            if len(rel.parts) < 2:
                return ""
            with self._lock:
                return self._owners.get(self._root / rel.parts[0] / rel.parts[1], "")
        return None

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
            self._owners.clear()


SERVED = PrivateCopies()  # the one private folder of this process's served copies
