"""The near-line launcher's summary read from manifest lines as text
(fex.nearline.summarize_lines) gives what decoding every line gives
(fex.nearline.summarize), on lines written as the job's Json writes them,
including strings that hold the very texts the fast reader looks for."""

import json
import random

from fex.nearline import COUNTED, summarize, summarize_lines


def line(**fields) -> str:
    # The job's writer: '": ' between key and value, ', ' between fields,
    # non-ASCII as it is.
    return json.dumps(fields, ensure_ascii=False)


TRICKY = ['"kind": "emitted"', '"kind": "late"', ', "actions": [', 'kind', '\\"', "é中😀", ""]


def action(rng):
    return {"user_id": rng.choice(TRICKY), "request_id": rng.choice(TRICKY), "item_id": rng.choice(TRICKY),
            "action": rng.randint(1, 3), "event_time": rng.randint(0, 1 << 40)}


def lines(rng, n):
    out = []
    for _ in range(n):
        kind = rng.choice(["emitted", *COUNTED])
        if kind == "emitted":
            actions = [action(rng) for _ in range(rng.randint(0, 4))]
            fields = {"kind": "emitted", "request_id": rng.choice(TRICKY), "user_id": rng.choice(TRICKY),
                      "time": 1, "emitted_at": 2, "rule": rng.choice(["time", "refresh", "requests_back"]),
                      "payload": rng.choice(["batch", "examples"]), "rows": rng.randint(0, 30),
                      "rows_written": rng.randint(0, 30)}
            if rng.random() < 0.8:  # the job's lines; the others are an older job's, without the count
                fields["actions_joined"] = len(actions)
            if rng.random() < 0.3:
                fields["late_request"] = True
            fields["actions"] = actions
            out.append(line(**fields))
        elif kind == "bad_action":
            out.append(line(kind=kind, file="a.jsonl", index=3, offset=9, reason="not JSON",
                            line=rng.choice(TRICKY) + ', "actions": [{"kind": "emitted"}]'))
        else:
            # Action lines lead with the action's fields, then their kind.
            out.append(line(**action(rng), kind=kind, reason="event_time_after_emission", emitted_at=5))
    return out


def test_the_text_reader_counts_what_decoding_counts():
    rng = random.Random(11)
    for n in (0, 1, 10, 500):
        text = lines(rng, n)
        assert summarize_lines(text) == summarize(json.loads(t) for t in text)


def test_an_emitted_line_is_read_up_to_its_actions():
    text = line(kind="emitted", request_id="r", user_id="u", time=1, emitted_at=2, rule="time", payload="batch",
                rows=2, rows_written=2, actions_joined=3, late_request=True, actions=[])
    # The count is taken from `actions_joined`, not from the (here empty) list.
    s = summarize_lines([text])
    assert (s.actions_joined, s.late_requests, s.emitted, s.rows_emitted) == (3, 1, {"time": 1}, 2)


def test_progress_reads_a_growing_file_by_its_new_lines(tmp_path):
    from fex.nearline.__main__ import look

    emitted = '{"kind": "emitted", "request_id": "r"}\n'
    late = '{"user_id": "u", "kind": "late"}\n'
    growing_file = tmp_path / "p" / ".part-0.inprogress"
    growing_file.parent.mkdir()
    done, growing = {}, {}
    growing_file.write_text(emitted + late + '{"kind": "emi')  # a line still being written
    assert look(str(tmp_path), done, growing) == (1, 1)
    with open(growing_file, "a") as f:
        f.write('tted"}\n' + late)
    assert look(str(tmp_path), done, growing) == (2, 2)
    # Committed under its final name: read whole once, then kept.
    growing_file.rename(tmp_path / "p" / "part-0")
    assert look(str(tmp_path), done, growing) == (2, 2)
    assert growing == {} and len(done) == 1
    (tmp_path / "p" / "part-0").write_text("")  # a committed file is not read again
    assert look(str(tmp_path), done, growing) == (2, 2)
