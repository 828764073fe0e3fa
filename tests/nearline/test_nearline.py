"""The near-line label join on a real Apache Flink (the Java job of
flink/, on a local mini-cluster that `python -m fex.nearline` starts in a
JVM of its own, in a child process; the rules alone are held to the same
reference by flink/src/test/java/fex/nearline/RulesTest.java):
emission rules and joined actions against the reference in data.py, in
streaming and batch execution; the joined output through `fex extract`
gives the job's own sample bytes; a job killed mid-run and restored from
its last checkpoint writes every row exactly once; bad input is reported.

Every wait is bounded: each run has a timeout and its output is shown on
failure. Run by scripts/test.sh with FEX_CLI set (the `fex` binary) and
FEX_NEARLINE_JAR (flink/target/fex-flink.jar).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

import fex
from fex.nearline import committed, read_manifest, read_manifest_lines, summarize, summarize_lines

from conftest import MODEL, job, kill_once_committed, records  # noqa: E402
import data  # noqa: E402


def key(a):
    return (a["user_id"], a["request_id"], str(a["item_id"]), a["action"], a["event_time"])


def check_against_reference(out, inputs):
    plan = fex.Plan.from_yaml(MODEL)
    emitted, late, unmatched, unknown = data.reference(inputs["reqs"], inputs["acts"])
    lines = list(read_manifest(out))
    kinds = Counter(line["kind"] for line in lines)
    assert kinds["emitted"] == len(emitted), kinds
    seen = {}
    for line in lines:
        if line["kind"] != "emitted":
            continue
        rid = line["request_id"]
        assert rid not in seen, f"{rid} emitted twice"
        seen[rid] = line
        when, rule, per_row = emitted[rid]
        assert (line["emitted_at"], line["rule"]) == (when, rule), (rid, line, emitted[rid])
    assert set(seen) == set(emitted)
    assert Counter(key(a) for a in lines if a["kind"] == "late") == Counter(key(a) for a in late)
    assert Counter(key(a) for a in lines if a["kind"] == "unmatched") == Counter(key(a) for a in unmatched)
    assert Counter(key(a) for a in lines if a["kind"] == "unknown_item") == Counter(key(a) for a in unknown)
    # The joined records themselves: each row's LineId.actions, read back
    # by the library from the job's joined/ files.
    by_request = {}
    for path in committed(os.path.join(out, "joined")):
        for rec in records(path):
            ex = plan.extract_batch(rec, outputs=["item", "actions"])
            acts = ex["actions"].to_numpy()
            by_request[rec] = acts
    assert len(by_request) == len(emitted)
    got = sorted(
        tuple(tuple(int(v) for v in row if v != 0) for row in acts) for acts in by_request.values()
    )
    want = sorted(tuple(tuple(row) for row in per_row) for _, _, per_row in emitted.values())
    assert got == want
    # Both kinds of late action and the event rules occur in this data.
    assert kinds["late"] > 0 and kinds["unmatched"] > 0 and kinds["unknown_item"] > 0
    rules = Counter(line["rule"] for line in lines if line["kind"] == "emitted")
    assert rules["refresh"] > 0 and rules["requests_back"] > 0 and rules["time"] > 0, rules
    return lines


def test_streaming_emits_what_the_reference_says(streaming, inputs):
    check_against_reference(streaming, inputs)
    corrections = [json.loads(l) for p in committed(os.path.join(streaming, "corrections")) for l in open(p)]
    late = [l for l in read_manifest(streaming) if l["kind"] == "late"]
    assert Counter(map(key, corrections)) == Counter(map(key, late))


def test_batch_mode_emits_the_same(batch, streaming, inputs):
    check_against_reference(batch, inputs)
    joined = lambda out: sorted(r for p in committed(os.path.join(out, "joined")) for r in records(p))  # noqa: E731
    assert joined(batch) == joined(streaming)
    lines = lambda out: Counter(json.dumps(l, sort_keys=True) for l in read_manifest(out))  # noqa: E731
    assert lines(batch) == lines(streaming)


def test_fex_extract_on_the_joined_output_gives_the_jobs_samples(streaming, tmp_path):
    cli = os.environ.get("FEX_CLI")
    if not cli:
        pytest.skip("FEX_CLI is not set (scripts/test.sh sets it to the built `fex`)")
    joined = committed(os.path.join(streaming, "joined"))
    samples = committed(os.path.join(streaming, "samples"))
    assert len(joined) == len(samples) > 0
    for j, s in zip(joined, samples):
        out = tmp_path / (os.path.basename(j) + ".responses")
        subprocess.run([cli, "extract", j, "--model", MODEL, "--format", "responses", "--output", str(out)],
                       check=True, capture_output=True, timeout=120)
        assert out.read_bytes() == open(s, "rb").read(), f"{j} through fex extract differs from {s}"


def test_the_summary_counts_what_the_manifest_holds(streaming, inputs):
    s = summarize(read_manifest(streaming))
    emitted, late, unmatched, unknown = data.reference(inputs["reqs"], inputs["acts"])
    assert s.requests_read == len(inputs["reqs"])
    assert s.actions_read == len(inputs["acts"])
    assert sum(s.emitted.values()) == len(emitted)
    assert (s.late_actions, s.unmatched_actions, s.unknown_item_actions) == (len(late), len(unmatched), len(unknown))
    # Items are distinct within a request, so each joined action is on one row.
    assert s.actions_joined == sum(len(row) for _, _, per_row in emitted.values() for row in per_row)
    # The launcher's summary reads emitted lines only up to their actions,
    # counting them by `actions_joined`, and gives the same.
    lines = list(read_manifest_lines(streaming))
    assert all(json.loads(l)["actions_joined"] == len(json.loads(l)["actions"])
               for l in lines if json.loads(l)["kind"] == "emitted")
    assert summarize_lines(lines) == s
    # A line without `actions_joined` (an older job's) is read whole.
    older = [json.dumps({k: v for k, v in json.loads(l).items() if k != "actions_joined"}) for l in lines]
    assert summarize_lines(older) == s


def test_killed_and_restored_it_writes_every_row_once(tmp_path):
    """SIGKILL the job (the launcher and the JVM of the local cluster)
    once a checkpoint has committed some output, restore from its last
    completed checkpoint, and the committed output equals an uninterrupted
    run's: no row missing, none twice."""
    reqs, acts = data.generate(seed=5, users=60, requests_per_user=60)
    requests, actions = data.write_inputs(str(tmp_path / "in"), reqs, acts, files=6)
    whole = str(tmp_path / "whole")
    job(whole, requests, actions, "--checkpoint-interval", "300ms")
    out, checkpoints = str(tmp_path / "out"), str(tmp_path / "checkpoints")
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests, "--actions", actions,
           "--out", out, "--quiet", "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints,
           "--max-rate", "3000"]  # about 4 s of reading, so the kill comes mid-run
    restore = kill_once_committed(cmd, checkpoints, lambda: any(l["kind"] == "emitted" for l in read_manifest(out)),
                                  tmp_path / "first.log")
    before = sum(1 for l in read_manifest(out) if l["kind"] == "emitted")
    assert 0 < before < len(reqs), "killed too late to prove a restore"
    # Restored without --max-rate: its operator is stateless, and the ones
    # with state keep their ids (uids) whatever passes between them.
    job(out, requests, actions, "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints,
        "--restore", restore)
    for name in ("joined", "samples"):
        want = Counter(r for p in committed(os.path.join(whole, name)) for r in records(p))
        got = Counter(r for p in committed(os.path.join(out, name)) for r in records(p))
        assert got == want, f"{name}: {sum((got - want).values())} extra, {sum((want - got).values())} missing"
    want = Counter(json.dumps(l, sort_keys=True) for l in read_manifest(whole))
    got = Counter(json.dumps(l, sort_keys=True) for l in read_manifest(out))
    assert got == want
    assert sum(1 for l in read_manifest(out) if l["kind"] == "emitted") == len(reqs)


def test_bad_records_are_reported_and_the_rest_joined(inputs, tmp_path):
    reqs = inputs["reqs"][:20]
    acts = [a for a in inputs["acts"] if a["request_id"] in {r["request_id"] for r in reqs}]
    requests, actions = data.write_inputs(str(tmp_path), reqs, acts, files=1)
    with open(os.path.join(requests, "requests-99999999999999999999-000009.log"), "wb") as f:
        f.write(data.framed([b"\x0a\x05abc"]))  # a LoggedRequest whose request is cut short
    with open(actions, "a") as f:
        f.write("not json\n")
        f.write(json.dumps({"user_id": "1", "request_id": "r", "item_id": 1, "action": "click", "event_time": 1}) + "\n")
        f.write(json.dumps({"user_id": "1", "request_id": "r", "item_id": 1}) + "\n")
    p = job(str(tmp_path / "out"), requests, actions, "--batch")
    lines = list(read_manifest(str(tmp_path / "out")))
    bad = [l for l in lines if l["kind"] in ("bad_request", "bad_action")]
    (request,) = [l for l in bad if l["kind"] == "bad_request"]
    assert request["file"].endswith("requests-99999999999999999999-000009.log"), request
    assert (request["index"], request["offset"]) == (0, 0), request
    assert "offset_in_record" in request and request["error"], request
    errors = sorted(l["error"] for l in bad if l["kind"] == "bad_action")
    assert errors[:2] == ['action must be an int32, not "click"', "missing action, event_time"], errors
    assert errors[2].startswith("not JSON: Unrecognized token 'not'"), errors
    assert sum(1 for l in lines if l["kind"] == "emitted") == 20
    assert "20 by" in p.stdout or "requests emitted   20" in p.stdout, p.stdout


def test_a_torn_log_file_fails_the_job_with_its_offset(inputs, tmp_path):
    requests = tmp_path / "requests"
    requests.mkdir()
    blob = data.framed([b"\x0a\x00"] * 3)
    (requests / "requests-1-1.log").write_bytes(blob[:-1])
    actions = tmp_path / "actions.jsonl"
    actions.write_text("")
    p = job(str(tmp_path / "out"), str(requests), str(actions), "--batch", check=False)
    assert p.returncode == 70, p.stderr[-3000:]
    assert "requests-1-1.log: record 2 at byte 20: the file ends inside its payload (1 of 2 bytes)" in p.stderr, p.stderr[-3000:]


def test_a_model_without_label_join_is_refused(tmp_path, inputs):
    model = tmp_path / "m.yaml"
    model.write_text("name: m\nversion: '1'\nfeatures:\n  - {name: item_fids, kind: sparse}\n")
    p = subprocess.run([sys.executable, "-m", "fex.nearline", "--config", str(model), "--requests", inputs["requests"],
                        "--actions", inputs["actions"], "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 64
    assert "has no label_join: section" in p.stderr


def test_a_rate_below_one_is_refused(tmp_path, inputs):
    p = subprocess.run([sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", inputs["requests"],
                        "--actions", inputs["actions"], "--out", str(tmp_path / "o"), "--max-rate", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 64
    assert "error: --max-rate must be at least 1, not 0" in p.stderr


def test_the_jvm_gets_the_launchers_jit_thresholds_unless_the_user_chose_their_own(monkeypatch):
    from fex.nearline import job as launcher

    def opts():
        cmd = launcher.command([], log_file=os.devnull)
        return [o for o in cmd[: cmd.index("-cp")] if "CompileThreshold" in o]

    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    monkeypatch.delenv("FEX_NEARLINE_JIT", raising=False)
    assert opts() == ["-XX:CompileThresholdScaling=3"]
    # The JVM here accepts the option (an unknown -XX option would not start).
    p = subprocess.run([launcher.java(), *launcher.JIT_OPTS, "-version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx2g -XX:CompileThresholdScaling=1")
    assert opts() == []
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx2g")
    assert opts() == ["-XX:CompileThresholdScaling=3"]
    monkeypatch.setenv("FEX_NEARLINE_JIT", "default")
    assert opts() == []
