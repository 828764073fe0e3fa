"""Generated inputs of the near-line tests, and the reference the job is
checked against.

The samples are encoded here with a few lines of protobuf writing (field
numbers from proto/monolith/example.proto, line_id.proto and
proto/fex/v1/service.proto), so the test depends on nothing but the
package under test. The reference states the emission rules from the
issue (seed 002, section 3.2) over whole, sorted lists, independently of
fex.nearline.rules, which works event by event on Flink's state.
"""

from __future__ import annotations

import json
import random
import struct
from collections import defaultdict

MINUTE = 60_000
AFTER = 10 * MINUTE  # model.yaml: emit.after
REQUESTS_BACK = 3  # model.yaml: emit.requests_back
DELAY = MINUTE  # model.yaml: watermark_delay


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, body: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(body)) + body


def fixed64(number: int, value: int) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<Q", value)


def int_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def fid_feature(fids) -> bytes:
    return field(2, field(1, b"".join(struct.pack("<Q", f) for f in fids)))  # fid_v2_list


def int64_feature(values) -> bytes:
    return field(5, field(1, b"".join(varint(v) for v in values)))  # int64_list


def bytes_feature(value: bytes) -> bytes:
    return field(6, field(1, value))  # bytes_list


def bytes_list_feature(values) -> bytes:
    return field(6, b"".join(field(1, v) for v in values))  # bytes_list, one element a value


def float_feature(values) -> bytes:
    return field(3, field(1, b"".join(struct.pack("<f", v) for v in values)))  # float_list


def line_id(uid: int, item_id: int) -> bytes:
    return fixed64(2, uid) + fixed64(4, item_id)


def feature_list(name: str, features, shared: bool) -> bytes:
    body = field(1, name.encode()) + b"".join(field(2, f) for f in features)
    return body + (int_field(3, 1) if shared else b"")


def user_cate_cnt(uid: int) -> bytes:
    """The user's map for `lookup`: a count for 4 of 8 categories, 0x1D
    between entries (FG's layout), one entry malformed for some users."""
    entries = [f"c{(uid + k) % 8}:{(uid * 7 + k) % 10}".encode() for k in range(4)]
    if uid % 5 == 0:
        entries.insert(1, b"broken")
    return b"\x1d".join(entries)


def item_cate(item: int) -> bytes:
    return f"c{item % 8}".encode()


# Whether requests carry the inputs of the model's FG operators added for
# issue 36 (match, the parallel-list lookup, TEXT_CHT2CHS, bm25; see
# model.yaml). The near-line benchmarks turn it off and run
# benches/nearline_model.yaml, so their data and model stay those of their
# earlier figures.
FG_OPS = True

SHOES = "运动鞋"  # in simplified characters; 運動鞋 in traditional ones
SHOES_CHT = "運動鞋"


def query(uid: int) -> bytes:
    """The user's query for `overlap` and `bm25`: 1 to 3 words of 6, and
    for some users the simplified SHOES last."""
    if not FG_OPS:
        return b"\x1d".join(f"w{(uid + k * 2) % 6}".encode() for k in range(2 + uid % 2))
    words = [f"w{(uid + k * 2) % 6}" for k in range(1 + uid % 3)] + ([SHOES] if uid % 4 < 2 else [])
    return "\x1d".join(words).encode()


def title(item: int) -> bytes:
    """1 to 4 words of 6, and SHOES for some items: in traditional
    characters (`normalize_text`'s TEXT_CHT2CHS makes them the query's) or
    simplified ones."""
    words = [f"w{(item * (k + 1)) % 6}" for k in range(1 + item % 4)]
    if not FG_OPS:
        return "\x1d".join(words).encode()
    words += [[], [SHOES_CHT], [SHOES]][item % 3]
    return "\x1d".join(words).encode()


def user_cate_brand(uid: int):
    """The user's two-level map for `match` (FG's `pk^sk:v,sk:v|pk^...`):
    4 categories of 8, 3 brands of 5 under each; for some users an entry
    without `^` and a brand without `:` (skipped), and none at all for
    others (the list is missing)."""
    if uid % 6 == 5:
        return None
    entries = []
    for k in range(4):
        brands = [f"b{(uid + k + j) % 5}:{(uid * 3 + k + j) % 7}" for j in range(3)]
        if uid % 4 == 1 and k == 1:
            brands.insert(0, "b9")
        entries.append(f"c{(uid + 2 * k) % 8}^" + ",".join(brands))
    if uid % 4 == 1:
        entries.insert(1, "c9")
    return "|".join(entries).encode()


def item_brand(item: int) -> bytes:
    return f"b{item % 5}".encode()


def user_cate_lists(uid: int):
    """The user's map for `lookup` as two parallel lists (keys, a
    bytes_list; counts, a float_list): 3 categories, the last a repeat of
    the first for some users (the first wins); both missing for others."""
    if uid % 7 == 3:
        return None
    keys = [f"c{(uid + 3 * k) % 8}".encode() for k in range(3)]
    if uid % 2 == 0:
        keys[2] = keys[0]
    return keys, [((uid + k) % 9) / 2 for k in range(3)]


def example_batch(uid: int, items, refresh: bool) -> bytes:
    rows = len(items)
    lists = [
        feature_list("user_fids", [fid_feature([(1 << 48) | uid, (2 << 48) | (uid % 7)])], True),
        feature_list("f_refresh", [int64_feature([1 if refresh else 0])], True),
        feature_list("item_fids", [fid_feature([(3 << 48) | i]) for i in items], False),
        feature_list("__LINE_ID__", [bytes_feature(line_id(uid, i)) for i in items], False),
        feature_list("user_cate_cnt", [bytes_feature(user_cate_cnt(uid))], True),
        feature_list("item_cate", [bytes_feature(item_cate(i)) for i in items], False),
        feature_list("query", [bytes_feature(query(uid))], True),
        feature_list("title", [bytes_feature(title(i)) for i in items], False),
    ]
    if not FG_OPS:
        return b"".join(field(1, l) for l in lists) + int_field(3, rows)
    lists.append(feature_list("item_brand", [bytes_feature(item_brand(i)) for i in items], False))
    kkv = user_cate_brand(uid)
    if kkv is not None:
        lists.append(feature_list("user_cate_brand", [bytes_feature(kkv)], True))
    kv = user_cate_lists(uid)
    if kv is not None:
        lists.append(feature_list("user_cate_keys", [bytes_list_feature(kv[0])], True))
        lists.append(feature_list("user_cate_vals", [float_feature(kv[1])], True))
    return b"".join(field(1, l) for l in lists) + int_field(3, rows)


def logged_request(model: str, batch: bytes, micros: int, request_id: str) -> bytes:
    request = field(1, model.encode()) + field(2, batch)
    return field(1, request) + field(2, model.encode()) + int_field(5, micros) + field(6, request_id.encode())


def framed(records) -> bytes:
    return b"".join(struct.pack("<Q", len(r)) + r for r in records)


def generate(seed: int, users: int, requests_per_user: int, start_ms: int = 1_760_000_000_000, rows=(2, 7)):
    """Requests (dicts, in log order: by time, as the server writes them,
    with small swaps) and actions (dicts, in arrival order: by time with
    out-of-order arrivals inside the watermark delay). Kinds of action:
    joined ones, late ones (after the request's emission), ones naming no
    item of their request, ones for requests never logged, and one of a
    user who made no request."""
    rng = random.Random(seed)
    requests = []
    for u in range(users):
        uid = 1000 + u
        t = start_ms + rng.randrange(0, 5 * MINUTE)
        for n in range(requests_per_user):
            # 4 + 4 + 2 minutes: the time rule ties with the event rule.
            t += rng.choice([5_000, 20_000, 40_000, 90_000, 2 * MINUTE, 4 * MINUTE, 12 * MINUTE])
            items = rng.sample(range(1, 60 + rows[1]), rng.randrange(*rows))
            refresh = n > 0 and rng.random() < 0.15
            requests.append(
                {"request_id": f"r{u}-{n}", "uid": uid, "time": t, "items": items, "refresh": refresh}
            )
    requests.sort(key=lambda r: (r["time"], r["request_id"]))
    emission = reference_emission(requests)
    actions = []
    for r in requests:
        e = emission[r["request_id"]][0]
        for item in r["items"]:
            roll = rng.random()
            if roll < 0.45:
                continue
            if roll < 0.85:  # joined: between the request and its emission
                when = r["time"] + rng.randrange(0, max(1, e - r["time"] + 1))
            elif roll < 0.93:  # late: after the emission, within retention
                when = e + rng.randrange(1, 20 * MINUTE)
            else:  # an item the request does not have
                item, when = 999, r["time"] + rng.randrange(0, max(1, e - r["time"] + 1))
            for action in rng.sample([1, 2, 3], rng.randrange(1, 3)):
                actions.append(
                    {"user_id": str(r["uid"]), "request_id": r["request_id"], "item_id": item,
                     "action": action, "event_time": when}
                )
    for k in range(users):  # actions for requests nobody logged
        actions.append(
            {"user_id": str(1000 + k), "request_id": f"ghost-{k}", "item_id": 1, "action": 1,
             "event_time": start_ms + rng.randrange(0, 60 * MINUTE)}
        )
    # A user who made no request at all.
    actions.append({"user_id": "99999", "request_id": "nobody", "item_id": 1, "action": 1,
                    "event_time": start_ms + rng.randrange(0, 60 * MINUTE)})
    actions.sort(key=lambda a: (a["event_time"], a["request_id"], a["item_id"], a["action"]))
    # Out of order arrivals, well inside the watermark delay.
    for i in range(len(actions) - 1):
        a, b = actions[i], actions[i + 1]
        if rng.random() < 0.2 and b["event_time"] - a["event_time"] < DELAY // 2:
            actions[i], actions[i + 1] = b, a
    return requests, actions


def logged(requests, model="nearline_ranker"):
    """(user id, LoggedRequest bytes) per request, as fex-server logs them."""
    return [
        (str(r["uid"]), logged_request(model, example_batch(r["uid"], r["items"], r["refresh"]), r["time"] * 1000, r["request_id"]))
        for r in requests
    ]


def write_inputs(directory, requests, actions, model="nearline_ranker", files=3):
    """Request logs split into `files` framed files (as fex-server rotates
    them) and one JSON-lines action file."""
    import os

    os.makedirs(os.path.join(directory, "requests"), exist_ok=True)
    per = (len(requests) + files - 1) // files
    for f in range(files):
        chunk = requests[f * per : (f + 1) * per]
        records = [
            logged_request(model, example_batch(r["uid"], r["items"], r["refresh"]), r["time"] * 1000, r["request_id"])
            for r in chunk
        ]
        with open(os.path.join(directory, "requests", f"requests-{f:020}-{f:06}.log"), "wb") as out:
            out.write(framed(records))
    with open(os.path.join(directory, "actions.jsonl"), "w") as out:
        for a in actions:
            out.write(json.dumps(a) + "\n")
    return os.path.join(directory, "requests"), os.path.join(directory, "actions.jsonl")


def reference_emission(requests):
    """request id -> (emission time, rule). Per user, requests by time:
    the first later refresh request, or the request `REQUESTS_BACK` after
    it when that one is normal, triggers it at that request's time; the
    time rule emits it `AFTER` past its own time; the earlier wins (the
    event rule on a tie)."""
    by_user = defaultdict(list)
    for r in requests:
        by_user[r["uid"]].append(r)
    out = {}
    for rs in by_user.values():
        rs = sorted(rs, key=lambda r: (r["time"], r["request_id"]))
        for i, r in enumerate(rs):
            timeout = r["time"] + AFTER
            trigger = None
            for j in range(i + 1, len(rs)):
                later = rs[j]
                if later["time"] > timeout:
                    break
                if later["refresh"]:
                    trigger = (later["time"], "refresh")
                    break
                if j - i == REQUESTS_BACK:
                    trigger = (later["time"], "requests_back")
                    break
            out[r["request_id"]] = trigger if trigger else (timeout, "time")
    return out


def reference(requests, actions):
    """What the join must emit: per request (emission time, rule, actions
    per row), and the late, unmatched and unknown-item actions."""
    emission = reference_emission(requests)
    by_id = {r["request_id"]: r for r in requests}
    per_row = {rid: [[] for _ in r["items"]] for rid, r in by_id.items()}
    late, unmatched, unknown = [], [], []
    for a in sorted(actions, key=lambda a: (a["event_time"], a["action"])):
        r = by_id.get(a["request_id"])
        if r is None or str(r["uid"]) != a["user_id"]:
            unmatched.append(a)
            continue
        if a["event_time"] > emission[r["request_id"]][0]:
            late.append(a)
        elif a["item_id"] not in r["items"]:
            unknown.append(a)
        else:
            for i, item in enumerate(r["items"]):
                if item == a["item_id"]:
                    per_row[r["request_id"]][i].append(a["action"])
    emitted = {rid: (t, rule, per_row[rid]) for rid, (t, rule) in emission.items()}
    return emitted, late, unmatched, unknown
