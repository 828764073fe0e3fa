"""The label join's rules, apart from Flink: what one user's state holds and
what each event does to it. ``fex.nearline.job`` keeps a ``UserState`` per
user in Flink's keyed state and calls these functions from its process
function; nothing here imports pyflink, so the rules are tested (and read)
on their own.

Time is event time in milliseconds since the Unix epoch. A request is
*due* at its emission time ``E``:

* the event rule (``requests_back`` > 0), requests taken in time order:
  a refresh request makes every earlier pending request of its user due
  at its own time; a normal request makes the user's request
  ``requests_back`` before it due at its own time;
* the time rule: ``after`` past the request's own time, for a request no
  event made due first.

A request is emitted when the watermark reaches ``E``, with every action
for it whose event time is at most ``E``. An action for it with a later
time, or one that arrives after it was emitted, is late.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

RULE_REFRESH = "refresh"
RULE_REQUESTS_BACK = "requests_back"
RULE_TIME = "time"


@dataclasses.dataclass
class Request:
    request_id: str
    user_id: str
    time_ms: int
    refresh: bool
    item_ids: List[str]
    logged: bytes
    # Where the request was read (file, index, offset), for reports.
    where: Dict[str, object] = dataclasses.field(default_factory=dict)
    # Set once the request is ordered: when it is due and by which rule,
    # and whether it came after a later request of its user was ordered.
    due_ms: Optional[int] = None
    rule: Optional[str] = None
    late: bool = False


@dataclasses.dataclass(frozen=True, order=True)
class Action:
    event_time: int
    request_id: str
    item_id: str
    action: int
    user_id: str = ""


@dataclasses.dataclass
class Emitted:
    """A request leaving the join: its actions per row, and the actions
    that matched it but came too late in event time or named no item of
    it."""

    request: Request
    actions: List[List[int]]
    joined: List[Action]
    late: List[Action]
    unknown_item: List[Action]


@dataclasses.dataclass
class Settings:
    requests_back: int
    after_ms: int
    retention_ms: int

    @classmethod
    def of(cls, section: dict) -> "Settings":
        return cls(section["requests_back"], section["after_ms"], section["retention_ms"])


def order_key(r: Request) -> Tuple[int, str]:
    return (r.time_ms, r.request_id)


def order(
    s: Settings, request: Request, pending: Dict[str, Request], recent: List[Tuple[str, int]]
) -> List[Request]:
    """Takes ``request`` as the user's newest: applies the event rule to
    the pending requests, then makes ``request`` pending under the time
    rule. Returns the requests the event rule made due (their ``due_ms``
    set). ``recent`` is the user's last ``requests_back + 1`` (at least
    one) ordered requests, (id, time).

    A request older than the last one ordered came behind the watermark
    (``watermark_delay`` too short for the disorder across log files or
    servers): it is marked ``late``, takes the time rule only and is left
    out of ``recent``, so it neither moves the count of requests back nor
    becomes due before its own time. ``requests_back: 0`` turns the whole
    event rule off, refresh included."""
    request.due_ms, request.rule = request.time_ms + s.after_ms, RULE_TIME
    pending[request.request_id] = request
    if recent and request.time_ms < recent[-1][1]:
        request.late = True
        return []
    made_due = []
    if s.requests_back > 0 and request.refresh:
        for r in sorted(pending.values(), key=order_key):
            if r.rule == RULE_TIME and r is not request:
                r.due_ms, r.rule = request.time_ms, RULE_REFRESH
                made_due.append(r)
    recent.append((request.request_id, request.time_ms))
    del recent[: max(0, len(recent) - (s.requests_back + 1))]
    if s.requests_back > 0 and not request.refresh and len(recent) > s.requests_back:
        back = pending.get(recent[0][0])
        if back is not None and back.rule == RULE_TIME and back is not request:
            back.due_ms, back.rule = request.time_ms, RULE_REQUESTS_BACK
            made_due.append(back)
    return made_due


def advance(
    s: Settings,
    up_to: int,
    arrived: Dict[str, Request],
    pending: Dict[str, Request],
    recent: List[Tuple[str, int]],
) -> Tuple[List[Request], List[int]]:
    """Moves one user's state forward to event time ``up_to``, one event at
    a time in time order: the next request to order or the next request
    due, whichever is earlier (ordering first on a tie, so an event
    emits a request due at the same moment by its rule). Returns the
    requests emitted, in order, and the later times at which more become
    due (the timers to set). It depends only on ``up_to``, never on the
    order Flink fires timers in: PyFlink hands timers set while firing
    others back in batches, not in time order."""
    emitted: List[Request] = []
    wake: List[int] = []
    while True:
        ready = [r for r in arrived.values() if r.time_ms <= up_to]
        waiting = [r for r in pending.values() if r.due_ms is not None and r.due_ms <= up_to]
        first = min(ready, key=order_key) if ready else None
        due_first = min(waiting, key=lambda r: (r.due_ms, r.time_ms, r.request_id)) if waiting else None
        if first is not None and (due_first is None or first.time_ms <= due_first.due_ms):
            del arrived[first.request_id]
            for d in order(s, first, pending, recent):
                wake.append(d.due_ms)
            wake.append(first.due_ms)
        elif due_first is not None:
            del pending[due_first.request_id]
            emitted.append(due_first)
        else:
            return emitted, [t for t in wake if t > up_to]


def join(request: Request, held: List[Action]) -> Emitted:
    """The request's rows with the held actions for it attached: an action
    whose time is at most the emission time goes to every row with its
    item id, in (time, action) order; later ones are late."""
    assert request.due_ms is not None
    actions: List[List[int]] = [[] for _ in request.item_ids]
    rows: Dict[str, List[int]] = {}
    for i, item in enumerate(request.item_ids):
        rows.setdefault(item, []).append(i)
    joined, late, unknown = [], [], []
    for a in sorted(held):
        if a.event_time > request.due_ms:
            late.append(a)
        elif a.item_id not in rows or a.item_id == "":
            unknown.append(a)
        else:
            for i in rows[a.item_id]:
                actions[i].append(a.action)
            joined.append(a)
    return Emitted(request, actions, joined, late, unknown)
