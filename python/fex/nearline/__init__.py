"""The near-line label join: fex-server's request logs joined with what
users then did, emitted as training samples, on Apache Flink.

The job is Java (``fex.nearline.Job`` in fex's Flink jar; its rules and
state in the JVM, the library called through JNI once per emitted
request). ``python -m fex.nearline`` runs it locally (a Flink mini-cluster
in a JVM of its own) over files and prints a summary; ``flink run
fex-flink.jar`` submits it to a cluster. This module reads what the job
wrote: its committed part files and manifest. Needs Java 17 and a Flink
distribution (``FLINK_HOME``, or ``pip install 'fex[nearline]'`` for the
apache-flink wheel's).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from typing import Dict, Iterator, List

__all__ = ["Summary", "read_manifest", "read_manifest_lines", "summarize", "summarize_lines", "committed"]


def committed(directory: str) -> List[str]:
    """The part files Flink's FileSink committed under ``directory``, in
    name order (in-progress and pending files are hidden, dot-prefixed)."""
    if not os.path.isdir(directory):
        return []
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found.extend(os.path.join(root, f) for f in files if not f.startswith((".", "_")))
    return sorted(found)


def read_manifest(out: str) -> Iterator[dict]:
    """The manifest lines of a job's output directory, committed files only."""
    for line in read_manifest_lines(out):
        yield json.loads(line)


def read_manifest_lines(out: str) -> Iterator[str]:
    """The manifest lines of a job's output directory as text, committed
    files only, blank lines left out."""
    for path in committed(os.path.join(out, "manifest")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield line


@dataclasses.dataclass
class Summary:
    requests_read: int = 0
    actions_read: int = 0
    emitted: Dict[str, int] = dataclasses.field(default_factory=dict)
    actions_joined: int = 0
    late_actions: int = 0
    unmatched_actions: int = 0
    unknown_item_actions: int = 0
    duplicate_requests: int = 0
    late_requests: int = 0
    bad_requests: int = 0
    bad_actions: int = 0
    rows_emitted: int = 0
    rows_written: int = 0
    payloads: Dict[str, int] = dataclasses.field(default_factory=dict)

    def lines(self) -> List[str]:
        rules = ", ".join(f"{n} by {r}" for r, n in sorted(self.emitted.items())) or "none"
        return [
            f"requests read      {self.requests_read} ({self.duplicate_requests} duplicate, {self.bad_requests} bad, "
            f"{self.late_requests} behind the watermark)",
            f"actions read       {self.actions_read} ({self.bad_actions} bad)",
            f"requests emitted   {sum(self.emitted.values())}: {rules}",
            f"actions joined     {self.actions_joined}",
            f"late actions       {self.late_actions}",
            f"unmatched actions  {self.unmatched_actions} (no request within retention), "
            f"{self.unknown_item_actions} naming no item of their request",
            f"rows               {self.rows_emitted} emitted, {self.rows_written} written after transforms",
        ]


# Manifest kinds other than "emitted", and the Summary field each adds to.
COUNTED = {
    "late": "late_actions",
    "unmatched": "unmatched_actions",
    "unknown_item": "unknown_item_actions",
    "duplicate_request": "duplicate_requests",
    "bad_request": "bad_requests",
    "bad_action": "bad_actions",
}


def summarize(manifest: Iterator[dict]) -> Summary:
    s = Summary()
    for line in manifest:
        _count(s, line)
    return _totals(s)


# The job's manifest lines (fex.nearline.Json) separate keys from values
# with '": ' and write a line's kind as a plain word. Neither text below can
# occur inside a JSON string, whose quotes are escaped, so each finds the key
# itself. An emitted line's actions come last, after `actions_joined`.
_KIND = '"kind": "'
_ACTIONS = ', "actions": ['


def summarize_lines(lines: Iterator[str]) -> Summary:
    """What :func:`summarize` gives for the job's manifest lines as text,
    decoding only what it counts: a line's kind, and an emitted line up to
    its actions (their count is its ``actions_joined``). A line it cannot
    read so (an older job's emitted line, without ``actions_joined``) is
    decoded whole."""
    s = Summary()
    for text in lines:
        at = text.find(_KIND)
        if at >= 0:
            at += len(_KIND)
            kind = text[at:text.find('"', at)]
            field = COUNTED.get(kind)
            if field is not None:
                setattr(s, field, getattr(s, field) + 1)
                continue
            at = text.find(_ACTIONS) if kind == "emitted" else -1
            if at >= 0:
                head = json.loads(text[:at] + "}")
                if "actions_joined" in head:
                    _count(s, head)
                    continue
        _count(s, json.loads(text))
    return _totals(s)


def _count(s: Summary, line: dict) -> None:
    kind = line["kind"]
    if kind == "emitted":
        s.emitted[line["rule"]] = s.emitted.get(line["rule"], 0) + 1
        joined = line.get("actions_joined")
        s.actions_joined += joined if joined is not None else len(line["actions"])
        s.rows_emitted += line["rows"]
        s.rows_written += line["rows_written"]
        s.payloads[line["payload"]] = s.payloads.get(line["payload"], 0) + 1
        s.late_requests += bool(line.get("late_request"))
    elif kind in COUNTED:
        setattr(s, COUNTED[kind], getattr(s, COUNTED[kind]) + 1)


def _totals(s: Summary) -> Summary:
    s.requests_read = sum(s.emitted.values()) + s.duplicate_requests + s.bad_requests
    s.actions_read = (
        s.actions_joined + s.late_actions + s.unmatched_actions + s.unknown_item_actions + s.bad_actions
    )
    return s


def expand(paths: List[str]) -> List[str]:
    """Paths and globs as given (directories are read whole by Flink)."""
    out = []
    for p in paths:
        if "://" in p:  # a file system Flink reads (hdfs://, s3://): not checked here
            out.append(p)
            continue
        matched = sorted(glob.glob(p)) if any(c in p for c in "*?[") else [p]
        if not matched:
            raise FileNotFoundError(f"{p}: no such file or directory")
        for m in matched:
            if not os.path.exists(m):
                raise FileNotFoundError(f"{m}: no such file or directory")
            out.append(m)
    return out
