"""The label join as a PyFlink DataStream job.

``build`` wires it onto a ``StreamExecutionEnvironment`` from two streams
(logged requests as bytes, actions as JSON text lines) and returns its
outputs; ``file_job`` adds the file sources and exactly-once file sinks the
local runner uses. The rules themselves are ``fex.nearline.rules``; this
module keeps their state in Flink's keyed state, per user, and fires them
on event-time timers.

Outputs (all through Flink's FileSink, so part files are committed at
checkpoints and a restored job writes no row twice):

* ``joined/``: the emitted requests' samples with their actions in
  LineId.actions, PBDataset-framed (ExampleBatch records, or Example
  records for requests that carried Examples): what ``fex extract`` reads;
* ``samples/``: those records through the model's ``offline:`` transforms
  and extraction, framed ``fex.v1.ExtractResponse`` records, the bytes
  ``fex extract --format responses`` writes for them;
* ``manifest/``: one JSON line per emitted request (rule, actions, rows),
  late or unmatched action, and bad input record;
* ``corrections/`` (``late_actions: correction``): one JSON line per late
  action.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Iterable, List, Optional

from . import rules

# Kinds of manifest lines.
EMITTED = "emitted"
LATE = "late"
UNMATCHED = "unmatched"
UNKNOWN_ITEM = "unknown_item"
BAD_REQUEST = "bad_request"
BAD_ACTION = "bad_action"
DUPLICATE = "duplicate_request"

END_OF_TIME = 2**63 - 1
# Event times are bounded so that a time plus `after` or `retention` stays a
# Java long (Flink's timestamps).
MAX_TIME_MS = 2**62
# Why an action is late: its event time is after its request's emission
# time (event times alone decide), or it came later than the watermark delay
# allows and found its request already emitted.
LATE_TIME = "event_time_after_emission"
LATE_ARRIVAL = "arrived_after_emission"
ACTION_KEYS = ("user_id", "request_id", "item_id", "action", "event_time")
I32 = (-(2**31), 2**31 - 1)


def parse_action(line: str) -> rules.Action:
    """One action event, a JSON object on one line:
    ``{"user_id", "request_id", "item_id", "action", "event_time"}`` where
    the ids are strings or non-negative integers, ``action`` an int32 and
    ``event_time`` integer milliseconds since the epoch. Other keys are
    ignored. Raises ValueError naming what is wrong."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(event, dict):
        raise ValueError(f"not a JSON object but {type(event).__name__}")
    missing = [k for k in ACTION_KEYS if k not in event]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    ids = {}
    for key in ("user_id", "request_id", "item_id"):
        v = event[key]
        if isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, int) and v < 0):
            raise ValueError(f"{key} must be a string or a non-negative integer, not {v!r}"[:200])
        ids[key] = str(v)
        if ids[key] == "":
            raise ValueError(f"{key} is empty")
    action, time = event["action"], event["event_time"]
    if isinstance(action, bool) or not isinstance(action, int) or not I32[0] <= action <= I32[1]:
        raise ValueError(f"action must be an int32, not {action!r}"[:200])
    if isinstance(time, bool) or not isinstance(time, int) or not 0 <= time < MAX_TIME_MS:
        raise ValueError(f"event_time must be integer milliseconds in [0, 2^62), not {time!r}"[:200])
    return rules.Action(time, ids["request_id"], ids["item_id"], action, ids["user_id"])


def located(element: bytes):
    """A request element of FramedRecords (java/FramedRecords.java): where
    it was (file, record index, byte offset) and the LoggedRequest bytes."""
    (n,) = struct.unpack_from("<I", element)
    index, offset = struct.unpack_from("<QQ", element, 4 + n)
    where = {"file": element[4 : 4 + n].decode(errors="replace"), "index": index, "offset": offset}
    return where, element[4 + n + 16 :]


def frame(records: Iterable[bytes]) -> bytes:
    return b"".join(struct.pack("<Q", len(r)) + r for r in records)


def _clip(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _action_json(a: rules.Action) -> dict:
    return {
        "user_id": a.user_id,
        "request_id": a.request_id,
        "item_id": a.item_id,
        "action": a.action,
        "event_time": a.event_time,
    }


def build(
    env,
    config: str,
    requests,
    actions,
    *,
    batch: bool = False,
    request_locations: bool = False,
    idleness_ms: Optional[int] = None,
    job_settings: Optional[dict] = None,
):
    """Wires the join onto ``env``: ``requests`` is a DataStream of
    LoggedRequest bytes (``Types.PRIMITIVE_ARRAY(Types.BYTE())``),
    ``actions`` one of JSON text lines; ``config`` the model config's path
    (readable where the job's Python workers run); ``batch`` when ``env``
    runs in Flink's batch execution mode; ``request_locations`` when the
    request elements come from ``FramedRecords`` (file, index and offset
    first, for reporting a bad record) rather than as bare bytes;
    ``idleness_ms``: a source subtask with no data for this long stops
    holding the watermark back (idle Kafka partitions, more readers than
    files). Returns a dict of
    DataStreams: ``joined`` and ``samples`` (framed bytes, one element per
    emitted request), ``manifest`` and ``corrections`` (JSON text lines)."""
    from pyflink.common import Duration, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import OutputTag
    from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, ProcessFunction
    from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

    import fex

    plan = fex.Plan.from_yaml(config)
    section = plan.label_join
    if section is None:
        raise ValueError(f"{config}: the model config has no label_join: section")
    section = dict(section, **(job_settings or {}))
    settings = rules.Settings.of(section)
    correction = section["late_actions"] == "correction"

    pickled = Types.PICKLED_BYTE_ARRAY()
    raw = Types.PRIMITIVE_ARRAY(Types.BYTE())
    manifest_tag = OutputTag("manifest", Types.STRING())
    correction_tag = OutputTag("corrections", Types.STRING())

    class ParseRequest(ProcessFunction):
        def open(self, ctx):
            self.plan = fex.Plan.from_yaml(config)
            self.read = ctx.get_metrics_group().counter("requests_read")

        def process_element(self, element, ctx):
            self.read.inc()
            where, logged = located(bytes(element)) if request_locations else ({}, bytes(element))
            try:
                k = self.plan.request_keys(logged)
            except ValueError as e:
                line = dict(where, kind=BAD_REQUEST, error=_clip(str(e)))
                if getattr(e, "offset", None) is not None:
                    line["offset_in_record"] = e.offset
                yield manifest_tag, json.dumps(line)
                return
            if not 0 <= k.time_ms < MAX_TIME_MS:
                line = dict(where, kind=BAD_REQUEST, error=f"request time {k.time_ms} ms is outside [0, 2^62)")
                yield manifest_tag, json.dumps(line)
                return
            r = rules.Request(k.request_id, k.user_id, k.time_ms, k.refresh, list(k.item_ids), logged, where)
            yield ("r", r.user_id, r.time_ms, r)
            if batch:
                # The end of this user's input, sorted after every record of
                # theirs (see LabelJoin.process_element). One per record, as
                # no operator here knows a user's last one.
                yield ("end", r.user_id, END_OF_TIME, None)

    class ParseAction(ProcessFunction):
        def open(self, ctx):
            self.read = ctx.get_metrics_group().counter("actions_read")

        def process_element(self, line, ctx):
            self.read.inc()
            try:
                a = parse_action(line)
            except ValueError as e:
                yield manifest_tag, json.dumps({"kind": BAD_ACTION, "error": str(e), "line": _clip(line)})
                return
            yield ("a", a.user_id, a.event_time, a)
            if batch:
                # A user may have actions and no request: their actions
                # are still reported (unmatched) at the end.
                yield ("end", a.user_id, END_OF_TIME, None)

    class EventTime(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[2]

    delay = Duration.of_millis(section["watermark_delay_ms"])
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(delay).with_timestamp_assigner(EventTime())
    if idleness_ms:
        watermarks = watermarks.with_idleness(Duration.of_millis(idleness_ms))

    parsed_requests = requests.process(ParseRequest(), output_type=pickled).name("parse requests")
    parsed_actions = actions.process(ParseAction(), output_type=pickled).name("parse actions")
    events = parsed_requests.assign_timestamps_and_watermarks(watermarks).union(
        parsed_actions.assign_timestamps_and_watermarks(watermarks)
    )

    class LabelJoin(KeyedProcessFunction):
        """One user's requests and actions: ``arrived`` requests wait for
        the watermark to order them, ``pending`` ones for their emission
        time; ``held`` actions wait for their request; ``emitted`` keeps
        the ids of emitted requests for ``retention`` to tell late actions
        from unmatched ones."""

        def open(self, ctx):
            # Type objects made here, not captured: one used to build the
            # graph holds a Java reference, which cannot be pickled.
            def m(name):
                return ctx.get_map_state(MapStateDescriptor(name, Types.STRING(), Types.PICKLED_BYTE_ARRAY()))

            self.arrived, self.pending, self.emitted = m("arrived"), m("pending"), m("emitted")
            self.held = m("held")  # request id -> list of actions
            self.recent = ctx.get_state(ValueStateDescriptor("recent", Types.PICKLED_BYTE_ARRAY()))
            self.next = ctx.get_state(ValueStateDescriptor("next", Types.PICKLED_BYTE_ARRAY()))
            metrics = ctx.get_metrics_group()
            self.counters = {
                k: metrics.counter(k)
                for k in (
                    "emitted_" + rules.RULE_REFRESH,
                    "emitted_" + rules.RULE_REQUESTS_BACK,
                    "emitted_" + rules.RULE_TIME,
                    "actions_joined",
                    "late_actions",
                    "unmatched_actions",
                    "unknown_item_actions",
                    "duplicate_requests",
                    "late_requests",
                )
            }

        def process_element(self, value, ctx):
            kind, _, time, item = value
            timers = ctx.timer_service()
            if batch:
                # Batch execution sorts each user's records by time and has
                # no use for timers (PyFlink 2.3 loses keyed state written
                # around a key's end-of-input timers): every earlier record of
                # this user is here, so the state advances to just before
                # this one; the user's "end" records close it.
                yield from self._advance(timers, END_OF_TIME if kind == "end" else time - 1)
                if kind == "end":
                    return
            if kind == "r":
                r: rules.Request = item
                if self.arrived.contains(r.request_id) or self.pending.contains(r.request_id) or (
                    self.emitted.contains(r.request_id)
                ):
                    self.counters["duplicate_requests"].inc()
                    yield manifest_tag, json.dumps(
                        dict(r.where, kind=DUPLICATE, request_id=r.request_id, user_id=r.user_id)
                    )
                    return
                self.arrived.put(r.request_id, r)
                self._sooner(event=r.time_ms)
                if not batch:
                    timers.register_event_time_timer(r.time_ms)
                return
            a: rules.Action = item
            if self.emitted.contains(a.request_id):
                at = self.emitted.get(a.request_id)
                yield from self._late([a], LATE_TIME if a.event_time > at else LATE_ARRIVAL, at)
                return
            held = self.held.get(a.request_id) or []
            held.append(a)
            self.held.put(a.request_id, held)
            if not (self.arrived.contains(a.request_id) or self.pending.contains(a.request_id)):
                # Waits for its request at most `retention`.
                self._sooner(cleanup=a.event_time + settings.retention_ms)
                if not batch:
                    timers.register_event_time_timer(a.event_time + settings.retention_ms)

        def _late(self, late: List[rules.Action], reason: str, emitted_ms) -> Iterable:
            for a in late:
                self.counters["late_actions"].inc()
                line = dict(_action_json(a), kind=LATE, reason=reason, emitted_at=emitted_ms)
                yield manifest_tag, json.dumps(line)
                if correction:
                    yield correction_tag, json.dumps(line)

        def on_timer(self, timestamp, ctx):
            # Everything up to the watermark, in event-time order, whichever
            # timer woke us (rules.advance).
            timers = ctx.timer_service()
            yield from self._advance(timers, max(timestamp, timers.current_watermark()))

        def _horizon(self):
            """(the earliest time a request is to be ordered or is due, the
            earliest time something is to be forgotten): before both,
            advancing changes nothing and reads no state."""
            return self.next.value() or (END_OF_TIME, END_OF_TIME)

        def _sooner(self, event=END_OF_TIME, cleanup=END_OF_TIME):
            e, c = self._horizon()
            if event < e or cleanup < c:
                self.next.update((min(e, event), min(c, cleanup)))

        def _advance(self, timers, now):
            next_event, next_cleanup = self._horizon()
            events_due = next_event < END_OF_TIME and now >= next_event
            cleanup_due = next_cleanup < END_OF_TIME and now >= next_cleanup
            if not (events_due or cleanup_due):
                return
            arrived = pending = None
            if events_due:
                arrived, pending = dict(self.arrived.items()), dict(self.pending.items())
                was = {k: (r.due_ms, r.rule) for k, r in pending.items()}
                recent = self.recent.value() or []
                emitted, wake = rules.advance(settings, now, arrived, pending, recent)
                for t in set(wake) if not batch else ():
                    timers.register_event_time_timer(t)
                # Only what changed goes back to the state backend.
                self.recent.update(recent)
                for k in was.keys() - pending.keys():
                    self.pending.remove(k)
                for k in set(self.arrived.keys()) - arrived.keys():
                    self.arrived.remove(k)
                for k, r in pending.items():
                    if was.get(k) != (r.due_ms, r.rule):
                        self.pending.put(k, r)
                times = [r.time_ms for r in arrived.values()] + [r.due_ms for r in pending.values()]
                next_event = min(times, default=END_OF_TIME)
                for r in emitted:
                    held = self.held.get(r.request_id) or []
                    self.held.remove(r.request_id)
                    e = rules.join(r, held)
                    self.counters["emitted_" + r.rule].inc()
                    self.counters["actions_joined"].inc(len(e.joined))
                    self.emitted.put(r.request_id, r.due_ms)
                    next_cleanup = min(next_cleanup, r.due_ms + settings.retention_ms)
                    if not batch:
                        timers.register_event_time_timer(r.due_ms + settings.retention_ms)
                    yield from self._late(e.late, LATE_TIME, r.due_ms)
                    for a in e.unknown_item:
                        self.counters["unknown_item_actions"].inc()
                        yield manifest_tag, json.dumps(dict(_action_json(a), kind=UNKNOWN_ITEM))
                    if r.late:
                        self.counters["late_requests"].inc()
                    yield (r.request_id, r.user_id, r.time_ms, r.due_ms, r.rule, r.logged, e.actions,
                           [_action_json(a) for a in e.joined], r.late, r.where)
            if cleanup_due:
                next_cleanup = END_OF_TIME
                # Forget emitted requests past retention, and drop actions
                # that waited that long for a request that never came.
                for rid, at in list(self.emitted.items()):
                    if at + settings.retention_ms <= now:
                        self.emitted.remove(rid)
                    else:
                        next_cleanup = min(next_cleanup, at + settings.retention_ms)
                for rid, held in list(self.held.items()):
                    if self.arrived.contains(rid) or self.pending.contains(rid):
                        continue
                    for a in held:
                        if a.event_time + settings.retention_ms <= now:
                            self.counters["unmatched_actions"].inc()
                            yield manifest_tag, json.dumps(dict(_action_json(a), kind=UNMATCHED))
                    rest = [a for a in held if a.event_time + settings.retention_ms > now]
                    if rest:
                        if len(rest) < len(held):
                            self.held.put(rid, rest)
                        next_cleanup = min(next_cleanup, min(a.event_time for a in rest) + settings.retention_ms)
                    else:
                        self.held.remove(rid)
            if arrived is not None and not (arrived or pending):
                # Nothing waits to be ordered or emitted: the user's
                # window starts again with their next request.
                self.recent.clear()
                if self.held.is_empty() and self.emitted.is_empty():
                    self.next.clear()
                    return
            self.next.update((next_event, next_cleanup))
            if not batch and min(next_event, next_cleanup) < END_OF_TIME:
                # A wake-up for the horizon itself, whatever the timers set
                # per item (settings may differ after a restore).
                timers.register_event_time_timer(min(next_event, next_cleanup))

    joined = (
        events.key_by(lambda v: v[1], key_type=Types.STRING())
        .process(LabelJoin(), output_type=pickled)
        .name("label join")
    )

    class Compute(MapFunction):
        """The emitted request's joined samples, and fex's sample
        computation on them: the model's transforms and extraction, as
        ``fex extract --format responses`` does."""

        def open(self, ctx):
            self.plan = fex.Plan.from_yaml(config)
            self.rows = ctx.get_metrics_group().counter("rows_written")

        def map(self, value):
            request_id, user_id, time_ms, due_ms, rule, logged, actions, joined_actions, late, where = value
            try:
                keys = self.plan.request_keys(logged)
                records = self.plan.attach_actions(logged, actions)
                joined_bytes = frame(records)
                result = fex.run(self.plan, joined_bytes, format="responses", payload=keys.payload, threads=1)
            except (ValueError, fex.BadRecordError) as e:
                # The request's samples do not extract (or its transforms
                # refuse them): reported where it was, and the job goes on.
                line = dict(where, kind=BAD_REQUEST, request_id=request_id, user_id=user_id, error=_clip(str(e)))
                return b"", b"", json.dumps(line)
            self.rows.inc(result.rows_written)
            line = {
                "kind": EMITTED,
                "request_id": request_id,
                "user_id": user_id,
                "time": time_ms,
                "emitted_at": due_ms,
                "rule": rule,
                "payload": keys.payload,
                "rows": len(actions),
                "rows_written": result.rows_written,
                "actions": joined_actions,
            }
            if late:
                line["late_request"] = True
            return joined_bytes, frame(result.responses), json.dumps(line)

    computed = joined.map(Compute(), output_type=pickled).name("sample computation")
    manifest = computed.map(lambda v: v[2], output_type=Types.STRING()).union(
        joined.get_side_output(manifest_tag),
        parsed_requests.get_side_output(manifest_tag),
        parsed_actions.get_side_output(manifest_tag),
    )
    return {
        "joined": computed.map(lambda v: v[0], output_type=raw).name("joined records"),
        "samples": computed.map(lambda v: v[1], output_type=raw).name("sample records"),
        "manifest": manifest,
        "corrections": joined.get_side_output(correction_tag),
    }


def jar_path() -> str:
    """fex's Flink connector jar (FramedRecords, RawBytesEncoder, OrderedSplitAssigner):
    ``FEX_NEARLINE_JAR`` if set, else compiled once from the Java sources
    shipped in this package with ``javac`` against PyFlink's own jars."""
    import hashlib
    import shutil
    import subprocess
    import tempfile

    given = os.environ.get("FEX_NEARLINE_JAR")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"FEX_NEARLINE_JAR={given}: no such file")
        return given
    here = os.path.join(os.path.dirname(__file__), "java")
    sources = sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".java"))
    digest = hashlib.sha256()
    for s in sources:
        with open(s, "rb") as f:
            digest.update(f.read())
    import pyflink

    lib = os.path.join(os.path.dirname(pyflink.__file__), "lib")
    digest.update(pyflink.__file__.encode())
    digest.update(b"--release 11")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    jar = os.path.join(cache, "fex", f"fex-nearline-{digest.hexdigest()[:16]}.jar")
    if os.path.isfile(jar):
        return jar
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise RuntimeError(
            "fex's Flink connector jar is built once with javac and jar (a JDK 11 or later, "
            "e.g. apt-get install openjdk-17-jdk-headless); or set FEX_NEARLINE_JAR to a built jar"
        )
    os.makedirs(os.path.dirname(jar), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(jar)) as tmp:
        classes = os.path.join(tmp, "classes")
        # Class files for Java 11, the oldest JVM Flink 2 runs on, whatever
        # JDK builds them.
        compile_ = subprocess.run(
            [javac, "--release", "11", "-nowarn", "-d", classes, "-cp", os.path.join(lib, "*"), *sources],
            capture_output=True,
            text=True,
        )
        if compile_.returncode != 0:
            raise RuntimeError(f"javac could not build fex's Flink connector jar:\n{compile_.stderr[-3000:]}")
        partial = os.path.join(tmp, "fex-nearline.jar")
        subprocess.run([jar_tool, "cf", partial, "-C", classes, "."], check=True, capture_output=True)
        # Same directory, so the rename is atomic: a concurrent run sees the
        # whole jar or none.
        os.replace(partial, jar)
    return jar


def location(path: str) -> str:
    """A path for Flink: a URI (hdfs://, s3://, file://) as given, a local
    path made absolute."""
    return path if "://" in path else os.path.abspath(path)


def _uri(path: str) -> str:
    return path if "://" in path else "file://" + os.path.abspath(path)


def file_job(
    config: str,
    requests: List[str],
    actions: List[str],
    out: str,
    *,
    batch: bool = False,
    parallelism: int = 1,
    checkpoint_ms: int = 5000,
    checkpoint_dir: Optional[str] = None,
    restore: Optional[str] = None,
    monitor_ms: Optional[int] = None,
    max_record_bytes: int = 64 << 20,
    job_settings: Optional[dict] = None,
    python_executable: Optional[str] = None,
    restart_attempts: int = 0,
    jars: Optional[List[str]] = None,
    idleness_ms: Optional[int] = None,
):
    """The join over files: framed request logs (files or directories) and
    JSON-lines action files, written under ``out``. Returns the
    environment, ready to ``execute``."""
    from pyflink.common import Configuration, Duration, WatermarkStrategy
    from pyflink.common.serialization import Encoder
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import (
        BucketAssigner,
        BulkFormat,
        FileSink,
        FileSource,
        FileSplitAssignerProvider,
        OutputFileConfig,
        RollingPolicy,
        StreamFormat,
    )
    from pyflink.java_gateway import get_gateway

    conf = Configuration()
    # fex's connector jar, and any the caller adds: a Kafka connector, or
    # flink-python for a cluster that keeps it in opt/ rather than lib/.
    shipped = [jar_path(), *(jars or [])]
    conf.set_string("pipeline.jars", ";".join("file://" + os.path.abspath(j) for j in shipped))
    # By default a failure (a corrupt file, a worker that cannot start)
    # ends the job with its cause instead of restarting it forever.
    if restart_attempts > 0:
        conf.set_string("restart-strategy.type", "fixed-delay")
        conf.set_string("restart-strategy.fixed-delay.attempts", str(restart_attempts))
        conf.set_string("restart-strategy.fixed-delay.delay", "10 s")
    else:
        conf.set_string("restart-strategy.type", "none")
    # Checkpoints go to files (the JobManager's memory holds at most 5 MB of
    # state), under OUT/_checkpoints unless told where, and are kept when
    # the job dies, so it can be restored (--restore).
    if not batch:
        conf.set_string("execution.checkpointing.dir", _uri(checkpoint_dir or location(out).rstrip("/") + "/_checkpoints"))
        conf.set_string("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
    if restore:
        conf.set_string("execution.state-recovery.path", _uri(restore))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    # PyFlink's workers start `python` from PATH unless told which: by
    # default the interpreter running this job, which has fex and pyflink
    # (on a cluster: the TaskManagers' interpreter with both installed).
    env.set_python_executable(python_executable or sys.executable)
    env.set_parallelism(parallelism)
    if batch:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    else:
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.enable_checkpointing(checkpoint_ms)

    gateway = get_gateway()
    ordered = gateway.jvm.fex.nearline.OrderedSplitAssigner.provider()
    framed = BulkFormat(gateway.jvm.fex.nearline.FramedRecords(max_record_bytes))

    def source(fmt, paths, name):
        if isinstance(fmt, BulkFormat):
            builder = FileSource.for_bulk_file_format(fmt, *[location(p) for p in paths])
        else:
            builder = FileSource.for_record_stream_format(fmt, *[location(p) for p in paths])
        # Files in name order (request logs are named by time), so event
        # time moves forward with the reading; see OrderedSplitAssigner.
        builder = builder.set_split_assigner(FileSplitAssignerProvider(ordered))
        if monitor_ms and not batch:
            builder = builder.monitor_continuously(Duration.of_millis(monitor_ms))
        return env.from_source(builder.build(), WatermarkStrategy.no_watermarks(), name)

    request_stream = source(framed, requests, "request logs")
    action_stream = source(StreamFormat.text_line_format(), actions, "actions")
    outputs = build(
        env,
        config,
        request_stream,
        action_stream,
        batch=batch,
        request_locations=True,
        idleness_ms=idleness_ms,
        job_settings=job_settings,
    )

    raw_encoder = Encoder(gateway.jvm.fex.nearline.RawBytesEncoder())

    def sink(name, encoder, suffix):
        files = OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(suffix).build()
        s = (
            FileSink.for_row_format(location(out).rstrip("/") + "/" + name, encoder)
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
            .with_output_file_config(files)
            .build()
        )
        outputs[name].sink_to(s).name(name)

    sink("joined", raw_encoder, ".pb")
    sink("samples", raw_encoder, ".responses")
    sink("manifest", Encoder.simple_string_encoder(), ".jsonl")
    sink("corrections", Encoder.simple_string_encoder(), ".jsonl")
    return env
