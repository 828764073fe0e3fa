"""A call that Triton cuts at its deadline never disturbs another call
(issue 33, part 4): rounds of four calls to a model that takes 1.5 s
(model_repository's ranker_slow) with a 200 ms deadline, while one-row calls
to the ranker loop beside them through the same fex-server, forwarded over
the same upstream connections. Every cut call ends DEADLINE_EXCEEDED and
every one-row call answers; nothing is timed. Imports nothing of fex's
Python package.

Triton 2.51 answers a call whose deadline passes with its closing headers
(grpc-status 4) and RST_STREAM(NO_ERROR) (gRPC core, chttp2_transport.cc,
close_from_api), then repeats the pair, and the h2 crate takes a repeat as
a connection error unless fex reset the stream first: fex tells Triton a
deadline later than its own cut (server/src/upstream.rs, UPSTREAM_SLACK;
docs/upstream-reports/h2-frames-after-reset.md). FEX_DEADLINE_ROUNDS sets
the rounds (a soak: 200 rounds is about 800 cut calls and 4,000 others).
"""

import collections
import os
import sys
import threading

import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import model_repository  # noqa: E402
from fexserver import FexServer, example_batch, generated, ranker_config  # noqa: E402
from tritonserver import Triton  # noqa: E402

ROUNDS = int(os.environ.get("FEX_DEADLINE_ROUNDS", "20"))
CONCURRENT = 4
DEADLINE_SECONDS = 0.2
# The one-row calls have time to spare: any failure is the cut calls' doing.
HEALTHY_SECONDS = 30.0
LOOPS = 2


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    repository = model_repository.write(tmp_path_factory.mktemp("models"), slow=True)
    with Triton(repository) as server:
        yield server


@pytest.fixture(scope="module")
def fex_server(triton, tmp_path_factory):
    models = tmp_path_factory.mktemp("fex")
    (models / "ranker.yaml").write_text(ranker_config(triton.grpc_url))
    slow = ranker_config(triton.grpc_url, name=model_repository.SLOW, model=model_repository.SLOW)
    (models / "ranker_slow.yaml").write_text(slow)
    server = FexServer(models)
    yield server
    server.stop()


def outcome(call):
    """("OK", "") or the status and message of the exception `call` raised."""
    try:
        call()
        return ("OK", "")
    except InferenceServerException as e:
        return (e.status(), e.message())


def test_calls_triton_cuts_at_their_deadline_never_fail_the_calls_beside_them(fex_server, tmp_path):
    one_row = generated(tmp_path, 1, count=8)
    wide = generated(tmp_path, 16, count=CONCURRENT, seed=2)
    done = threading.Event()
    healthy, cut = [], []
    round_start = threading.Barrier(CONCURRENT)

    def loop():
        with grpcclient.InferenceServerClient(fex_server.addr) as client:
            n = 0
            while not done.is_set():
                request = [example_batch(one_row[n % len(one_row)])]
                healthy.append(outcome(lambda: client.infer("ranker", request, client_timeout=HEALTHY_SECONDS)))
                n += 1

    def rounds(i):
        with grpcclient.InferenceServerClient(fex_server.addr) as client:
            request = [example_batch(wide[i])]
            for _ in range(ROUNDS):
                round_start.wait(timeout=60)
                slow = model_repository.SLOW
                cut.append(outcome(lambda: client.infer(slow, request, client_timeout=DEADLINE_SECONDS)))

    loops = [threading.Thread(target=loop) for _ in range(LOOPS)]
    workers = [threading.Thread(target=rounds, args=(i,)) for i in range(CONCURRENT)]
    for t in loops + workers:
        t.start()
    for t in workers:
        t.join(timeout=300)
    done.set()
    for t in loops:
        t.join(timeout=60)

    errors = [line for line in fex_server.log if line.get("level") in ("ERROR", "WARN")]
    counts = collections.Counter(status for status, _ in cut)
    assert len(cut) == ROUNDS * CONCURRENT, counts
    assert counts == {"StatusCode.DEADLINE_EXCEEDED": len(cut)}, (counts, set(cut), errors[:5])
    # fex's answer, or the client's own cut at the same moment (grpc's words).
    words = {m for _, m in cut if not m.startswith("deadline of ") and m != "Deadline Exceeded"}
    assert not words, words
    failed = [o for o in healthy if o[0] != "OK"]
    assert healthy and not failed, (len(healthy), collections.Counter(failed), errors[:5])
