"""The label store under load, through the real app: concurrent annotators, and kill -9 during labelling.

    python bench/bench_labels_load.py                               # 16 annotators x 200 labels, 3 kills
    python bench/bench_labels_load.py --annotators 4 --labels 20 --kills 1   # a quick check (CI: tests/test_reliability.py)

Starts ``app.py`` (the built-in demo corpus, its real BM25 + DSSDNet text search) as a separate process
with a fresh label database, then:

1. **Concurrency**: ``--annotators`` threads, each its own ``gradio_client`` session, run a text search
   and send ``--labels`` labels (list, rank and grade drawn per label, an idempotency key each). Every
   acknowledged label (a ``✓`` answer naming its id) is checked against the database: present (else
   *lost*), stored once, under the annotator, candidate and grade that were sent (else *misattributed*);
   an answer that is neither ``✓`` nor ``⚠️`` counts as a *silent error*.
2. **kill -9**: ``--kills`` times, ``--kill-annotators`` threads label for ``--kill-after`` seconds, the
   server is killed with SIGKILL, restarted on the same database, and every acknowledged label is looked
   up (lost = acknowledged but absent). The labels sent but not answered before the kill are sent again
   with the same idempotency keys after the restart (a client retrying): each key must then be stored
   exactly once.

0. **Determinism**: ``--determinism`` sessions send the same ``/search_text`` at once; every DSSDNet list
   (ids and scores) must be the same.

Prints the counts, label throughput and latency (median and 95th percentile of one ``/label`` call).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "hammer wrench screwdriver clock watch mirror handle head grip claw dial strap face housing round "
    "square long compact ornamental design portion shown"
).split()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``app.py`` in its own process on a free port."""

    def __init__(self, work: Path, patents: int, log) -> None:
        self.work, self.patents, self.log = work, patents, log
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 300) -> float:
        env = dict(
            os.environ,
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            PYTHONPATH=str(ROOT),
            OMP_NUM_THREADS="1",
            GRADIO_ANALYTICS_ENABLED="False",
        )
        cmd = [
            sys.executable,
            str(ROOT / "app.py"),
            "--corpus",
            "generated",
            "--demo-patents",
            str(self.patents),
            "--cache-dir",
            str(self.work / "cache"),
            "--labels",
            str(self.work / "data" / "labels.sqlite"),
            "--port",
            str(self.port),
            "--no-warmup",
        ]
        t0 = time.time()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.proc.returncode}; see {self.log.name}")
            try:
                urllib.request.urlopen(self.url + "config", timeout=2).read()
                return time.time() - t0
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"app.py did not answer within {timeout:.0f} s")

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Annotator:
    """One examiner: a gradio_client session, a text search, then labels with idempotency keys."""

    def __init__(self, url: str, name: str, seed: int) -> None:
        from gradio_client import Client

        self.name, self.rng = name, random.Random(seed)
        self.client = Client(url, verbose=False)
        self.abstract = " ".join(self.rng.sample(WORDS, 6))
        self.lists: dict[str, list[str]] = {}
        self.sent: dict[str, tuple] = {}  # key -> (list, rank, label, candidate)
        self.acked: dict[str, int] = {}  # key -> label id
        self.warned = self.silent = 0
        self.latency: list[float] = []

    def call(self, *args, api_name: str, timeout: float = 600):
        return self.client.submit(*args, api_name=api_name).result(timeout=timeout)

    def search(self) -> None:
        out = self.call(self.abstract, "", "dssdnet-minilm", 10, self.name, api_name="/search_text")
        if "BM25 found" not in str(out[2]):  # a "no good match" note may come first: the lists are there
            raise RuntimeError(f"{self.name}: search failed: {out[2]}")
        self.lists = {"bm25": [r[2] for r in out[0]["data"]], "dssdnet": [r[2] for r in out[1]["data"]]}

    def label(self, key: str, spec: tuple | None = None) -> None:
        if spec is None:
            list_name = self.rng.choice(["bm25", "dssdnet"])
            rank = self.rng.randint(1, len(self.lists[list_name]))
            spec = (
                list_name,
                rank,
                self.rng.choice(["relevant", "partly", "not"]),
                self.lists[list_name][rank - 1],
            )
        list_name, rank, grade, _ = spec
        self.sent[key] = spec
        t = time.perf_counter()
        msg = self.call(grade, list_name, rank, "", "", self.name, key, False, api_name="/label")[0]
        self.latency.append(time.perf_counter() - t)
        if msg.startswith("✓"):
            self.acked[key] = int(msg.split("label #", 1)[1].split()[0])
        elif msg.startswith("⚠️"):
            self.warned += 1
        else:
            self.silent += 1


def check(db: Path, annotators: list[Annotator]) -> dict:
    """Acknowledged labels against the database: lost, stored more than once, misattributed."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT idempotency_key, annotator, list_name, rank, label, candidate_id, id FROM labels "
        "WHERE undone = 0"
    ).fetchall()
    con.close()
    by_key: dict[str, list[tuple]] = {}
    for key, *rest in rows:
        by_key.setdefault(key, []).append(tuple(rest))
    acked = lost = twice = wrong = 0
    for a in annotators:
        for key, lab_id in a.acked.items():
            acked += 1
            stored = by_key.get(key, [])
            if not stored:
                lost += 1
                continue
            twice += len(stored) > 1
            list_name, rank, grade, cand = a.sent[key]
            who, lst, rk, lab, c, rid = stored[0]
            wrong += (who, lst, rk, lab, c, rid) != (a.name, list_name, rank, grade, cand, lab_id)
    return {
        "acknowledged": acked,
        "stored_rows": len(rows),
        "lost": lost,
        "stored_twice": twice,
        "misattributed": wrong,
    }


def run_threads(fns) -> None:
    threads = [threading.Thread(target=f, daemon=True) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def concurrency(server: Server, n: int, per: int) -> dict:
    anns = [Annotator(server.url, f"load-{i:02d}", seed=i) for i in range(n)]
    errors: list[str] = []

    def work(a: Annotator) -> None:
        try:
            a.search()
            for j in range(per):
                a.label(f"{a.name}-{j}")
        except Exception as err:  # noqa: BLE001 - counted, not raised
            errors.append(f"{a.name}: {type(err).__name__}: {err}")

    t0 = time.time()
    run_threads([lambda a=a: work(a) for a in anns])
    wall = time.time() - t0
    lat = sorted(x for a in anns for x in a.latency)
    if not lat:
        raise RuntimeError("no label was answered: " + "; ".join(errors[:3]))
    out = check(server.work / "data" / "labels.sqlite", anns)
    out |= {
        "annotators": n,
        "sent": sum(len(a.sent) for a in anns),
        "warned": sum(a.warned for a in anns),
        "silent_errors": sum(a.silent for a in anns),
        "client_errors": errors,
        "wall_s": round(wall, 1),
        "labels_per_s": round(len(lat) / wall, 1),
        "latency_median_ms": round(1000 * statistics.median(lat)),
        "latency_p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))]),
    }
    return out


def determinism(server: Server, n: int) -> dict:
    """The same ``/search_text`` from ``n`` sessions at once (the real DSSDNet re-ranker, one shared model):
    how many different (id, score) lists came back (1 when scoring is deterministic under concurrency)."""
    from gradio_client import Client

    clients = [Client(server.url, verbose=False) for _ in range(n)]
    outs: list = [None] * n

    def work(i: int) -> None:
        outs[i] = (
            clients[i]
            .submit(" ".join(WORDS[:8]), "", "dssdnet-minilm", 10, f"det-{i}", api_name="/search_text")
            .result(timeout=600)
        )

    run_threads([lambda i=i: work(i) for i in range(n)])
    lists = {tuple((r[2], r[5]) for r in o[1]["data"]) for o in outs if o is not None}
    tops = {tuple(r[2] for r in o[1]["data"][:3]) for o in outs if o is not None}
    return {
        "searches": n,
        "answered": sum(o is not None for o in outs),
        "distinct_lists": len(lists),
        "distinct_top3": len(tops),
        "list_length": len(next(iter(lists))) if lists else 0,
    }


def kill_cycle(server: Server, n: int, after: float, cycle: int) -> dict:
    anns = [Annotator(server.url, f"kill{cycle}-{i}", seed=100 * cycle + i) for i in range(n)]
    for a in anns:
        a.search()
    stop = threading.Event()

    def work(a: Annotator) -> None:
        j = 0
        while not stop.is_set():
            try:
                a.label(f"{a.name}-{j}")
            except Exception:  # noqa: BLE001 - the server died under this request
                return
            j += 1

    threads = [threading.Thread(target=work, args=(a,), daemon=True) for a in anns]
    for t in threads:
        t.start()
    time.sleep(after)
    server.kill9()
    stop.set()
    for t in threads:
        t.join(timeout=90)
    restart_s = server.start()
    out = check(server.work / "data" / "labels.sqlite", anns)
    # retry what was sent but not answered, with the same keys, from a new session (same search)
    retried = 0
    for a in anns:
        pending = {k: v for k, v in a.sent.items() if k not in a.acked}
        if not pending:
            continue
        from gradio_client import Client

        a.client = Client(server.url, verbose=False)
        a.search()
        for key, spec in pending.items():
            a.label(key, spec)
            retried += 1
    con = sqlite3.connect(f"file:{server.work / 'data' / 'labels.sqlite'}?mode=ro", uri=True)
    counts = dict(
        con.execute("SELECT idempotency_key, COUNT(*) FROM labels GROUP BY idempotency_key").fetchall()
    )
    con.close()
    keys = [k for a in anns for k in a.sent]
    out |= {
        "cycle": cycle,
        "in_flight_retried": retried,
        "keys_sent": len(keys),
        "keys_stored_once": sum(counts.get(k, 0) == 1 for k in keys),
        "keys_missing_after_retry": sum(counts.get(k, 0) == 0 for k in keys),
        "keys_stored_twice": sum(counts.get(k, 0) > 1 for k in keys),
        "restart_s": round(restart_s, 1),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--annotators", type=int, default=16)
    p.add_argument("--labels", type=int, default=200, help="labels per annotator in the concurrency run")
    p.add_argument("--kills", type=int, default=3)
    p.add_argument("--kill-annotators", type=int, default=6)
    p.add_argument("--kill-after", type=float, default=8.0, help="seconds of labelling before each kill -9")
    p.add_argument("--patents", type=int, default=60, help="size of the built-in demo corpus")
    p.add_argument("--determinism", type=int, default=8, help="identical text searches sent at once")
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="labels-load-"))
    log = open(work / "server.log", "w")  # noqa: SIM115 - open for the whole run
    server = Server(work, args.patents, log)
    result: dict = {"command": " ".join(["python", "bench/bench_labels_load.py", *(argv or sys.argv[1:])])}
    try:
        result["start_s"] = round(server.start(), 1)
        result["determinism"] = det = determinism(server, args.determinism)
        print(
            f"determinism: {det['searches']} identical /search_text at once, {det['answered']} answered, "
            f"{det['distinct_lists']} distinct DSSDNet list(s) with scores, {det['distinct_top3']} distinct top 3"
        )
        result["concurrency"] = conc = concurrency(server, args.annotators, args.labels)
        print(
            f"concurrency: {conc['annotators']} annotators, {conc['sent']} labels sent, {conc['acknowledged']} "
            f"acknowledged, {conc['stored_rows']} rows stored; lost {conc['lost']}, stored twice "
            f"{conc['stored_twice']}, misattributed {conc['misattributed']}, ⚠️ {conc['warned']}, silent errors "
            f"{conc['silent_errors']}, client errors {len(conc['client_errors'])}; {conc['labels_per_s']} labels/s, "
            f"/label median {conc['latency_median_ms']} ms, p95 {conc['latency_p95_ms']} ms "
            f"({conc['wall_s']} s)"
        )
        result["kills"] = []
        for cycle in range(1, args.kills + 1):
            k = kill_cycle(server, args.kill_annotators, args.kill_after, cycle)
            result["kills"].append(k)
            print(
                f"kill -9 #{cycle}: {k['acknowledged']} acknowledged before the kill, lost {k['lost']}, "
                f"misattributed {k['misattributed']}; {k['in_flight_retried']} in-flight labels retried with "
                f"their keys: {k['keys_stored_once']} of {k['keys_sent']} keys stored exactly once, "
                f"{k['keys_missing_after_retry']} missing, {k['keys_stored_twice']} twice; restart "
                f"{k['restart_s']} s"
            )
        tot = {
            x: sum(k[x] for k in result["kills"])
            for x in (
                "acknowledged",
                "lost",
                "misattributed",
                "keys_stored_twice",
                "keys_missing_after_retry",
            )
        }
        result["kills_total"] = tot
        print(
            f"kill -9 total over {args.kills}: {tot['acknowledged']} acknowledged, {tot['lost']} lost, "
            f"{tot['misattributed']} misattributed, {tot['keys_stored_twice']} stored twice after retry, "
            f"{tot['keys_missing_after_retry']} missing after retry"
        )
    finally:
        server.stop()
        log.close()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"server log: {work / 'server.log'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
