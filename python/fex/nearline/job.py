"""Where the near-line job's pieces are, and the command that runs it.

The job itself is Java: ``fex.nearline.Job`` in fex's Flink jar
(``flink/`` in the source tree, ``fex-flink.jar``), which calls the library
through JNI. ``python -m fex.nearline`` runs it in a JVM of its own on a
local Flink mini-cluster, with the Flink runtime of a Flink distribution:
``FLINK_HOME``, or the one the ``apache-flink`` wheel carries
(``pip install 'fex[nearline]'``).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import List, Optional

JAR_NAME = "fex-flink.jar"


def jar_path() -> str:
    """fex's Flink jar: ``FEX_NEARLINE_JAR`` if set, else the one shipped
    in this package, else the source tree's build (``flink/target``)."""
    given = os.environ.get("FEX_NEARLINE_JAR")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"FEX_NEARLINE_JAR={given}: no such file")
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (
        os.path.join(here, JAR_NAME),
        os.path.join(here, "..", "..", "..", "flink", "target", JAR_NAME),
    ):
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    raise FileNotFoundError(
        f"fex's Flink jar ({JAR_NAME}) is not in this package: build it in fex's source tree "
        "(cargo build --release -p fex-jni && mvn -f flink/pom.xml package -Dfex.jni.dir=$PWD/target/release) "
        "and set FEX_NEARLINE_JAR to flink/target/fex-flink.jar"
    )


def iceberg_jars() -> List[str]:
    """The jars of the job's Iceberg sample table (Iceberg's Flink runtime,
    Hadoop's client, the SQLite driver): ``FEX_NEARLINE_ICEBERG_LIB``, else
    ``iceberg-lib/`` beside the job's jar, where `mvn package` copies them."""
    lib = os.environ.get("FEX_NEARLINE_ICEBERG_LIB") or os.path.join(os.path.dirname(jar_path()), "iceberg-lib")
    jars = sorted(os.path.join(lib, n) for n in os.listdir(lib) if n.endswith(".jar")) if os.path.isdir(lib) else []
    if not jars:
        raise FileNotFoundError(
            f"the Iceberg sample table needs Iceberg's jars in {lib}: `mvn -f flink/pom.xml package` copies them "
            "there (or set FEX_NEARLINE_ICEBERG_LIB to a directory of them)"
        )
    return jars


def flink_home() -> str:
    """A Flink distribution (lib/ holds the runtime): ``FLINK_HOME``, or
    the apache-flink wheel's."""
    given = os.environ.get("FLINK_HOME")
    if given:
        if not os.path.isdir(os.path.join(given, "lib")):
            raise FileNotFoundError(f"FLINK_HOME={given}: no lib/ directory, so not a Flink distribution")
        return given
    try:
        import pyflink
    except ImportError:
        raise FileNotFoundError(
            "the near-line job runs on a Flink distribution: set FLINK_HOME to one (Flink 2.3), "
            "or pip install 'fex[nearline]' for the apache-flink wheel's"
        ) from None
    return os.path.dirname(os.path.abspath(pyflink.__file__))


def java() -> str:
    """The ``java`` to run: ``JAVA_HOME``'s, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if found is None:
        raise FileNotFoundError("the near-line job needs Java 17 or later (java on PATH, or JAVA_HOME)")
    return found


def java_opts(home: str) -> List[str]:
    """The JVM options Flink's own scripts give every process (the
    --add-opens Flink needs on Java 17), from the distribution's config."""
    try:
        with open(os.path.join(home, "conf", "config.yaml"), encoding="utf-8") as f:
            stock = f.read()
    except OSError:
        return []
    m = re.search(r"^\s*all: (.*)$", stock, re.M)
    return m.group(1).strip().strip('"').split() if m else []


# Methods are compiled after three times the invocations HotSpot's default
# thresholds ask for. Flink's start-up and the Kafka clients run a great
# many methods a few thousand times each; with the defaults the JIT
# compilers spent a third of a short job's CPU compiling them
# (benches/README.md, "Near-line label join": 2.4M rows, Kafka in and out,
# 19 CPU-s of compilers against 9.6, the join task no slower).
JIT_OPTS = ["-XX:CompileThresholdScaling=3"]


def jit_opts() -> List[str]:
    """``JIT_OPTS``, unless the user's ``JAVA_TOOL_OPTIONS`` or
    ``FEX_NEARLINE_JIT=default`` chooses the JIT's thresholds."""
    if os.environ.get("FEX_NEARLINE_JIT") == "default":
        return []
    if "CompileThreshold" in os.environ.get("JAVA_TOOL_OPTIONS", ""):
        return []
    return list(JIT_OPTS)


def command(job_args: List[str], *, log_file: str, jars: Optional[List[str]] = None,
            main: str = "fex.nearline.Job") -> List[str]:
    """The ``java`` command running ``main`` (the job, ``fex.nearline.Job``)
    with ``job_args`` on a local mini-cluster, Flink's log in ``log_file``.
    ``FEX_JNI_LIBRARY`` names a JNI library to load instead of the one in
    the jar."""
    home = flink_home()
    classpath = [jar_path(), *(jars or []), os.path.join(home, "lib", "*")]
    log4j = os.path.join(home, "conf", "log4j.properties")
    opts = java_opts(home) + jit_opts()
    if os.path.isfile(log4j):
        opts += [f"-Dlog4j.configurationFile=file:{log4j}", f"-Dlog.file={log_file}"]
    library = os.environ.get("FEX_JNI_LIBRARY")
    if library:
        # fex's JNI library built elsewhere (another platform, a release
        # build) instead of the copy the jar bundles.
        if not os.path.isfile(library):
            raise FileNotFoundError(f"FEX_JNI_LIBRARY={library}: no such file")
        opts.append(f"-Dfex.jni.library={os.path.abspath(library)}")
    return [java(), *opts, "-cp", os.pathsep.join(classpath), main, *job_args]
