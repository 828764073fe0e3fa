# Sourced by scripts/test.sh and scripts/helm_test.sh (not run on its own):
# `fex_python_env REQUIREMENTS...` makes, once, a virtual environment of the
# tests' own under target/, installs the requirement files into it, and sets
# PY to its python.
#
# Why a virtualenv: the system Python of Debian 12 and Ubuntu 24.04 is
# "externally managed" (PEP 668), so `pip install` into it fails. A venv
# works with any python3 that has the venv module; on Debian/Ubuntu, when
# `python3 -m venv` is missing (package python3-venv), it is installed with
# apt-get if we are root.
#
#   FEX_TEST_PYTHON   interpreter the venv is made from (default: python3)
#   FEX_TEST_VENV     where the venv lives (default: target/venv-test)

fex_python_env() {
    local base="${FEX_TEST_PYTHON:-python3}"
    local venv="${FEX_TEST_VENV:-target/venv-test}"
    # A venv whose python or pip no longer runs (its base interpreter was
    # removed or upgraded) is made again.
    if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$venv"
        if ! fex_make_venv "$base" "$venv"; then
            fex_install_venv_module "$base"
            rm -rf "$venv"
            fex_make_venv "$base" "$venv" || {
                echo "could not create a Python virtual environment with '$base -m venv $venv';" \
                    "install python3 with its venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2
                return 1
            }
        fi
    fi
    PY="$venv/bin/python"
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
    # A venv that already holds exactly these requirement files (a stamp
    # named by a digest of their text, made after every install succeeded)
    # is not resolved again: a run costs no pip resolution, and what a
    # caller removed after installing (test.sh removes torch's Triton
    # compiler and cuDNN's GPU kernels) stays removed. Delete the venv, or its .fex-requirements-*
    # stamps, to install afresh.
    local stamp
    stamp="$venv/.fex-requirements-$(cat "$@" | sha256sum | cut -c1-16)"
    if [ -e "$stamp" ]; then
        return 0
    fi
    local req
    # --no-compile: pip would byte-compile all 13,500 modules of these
    # packages (TensorFlow, torch, Spark) one after another; a module is
    # compiled when first imported instead, most of them never are.
    for req in "$@"; do
        "$PY" -m pip install --quiet --no-compile -r "$req"
    done
    touch "$stamp"
}

fex_make_venv() {
    command -v "$1" >/dev/null 2>&1 && "$1" -m venv "$2" >/dev/null 2>&1 && "$2/bin/python" -m pip --version >/dev/null 2>&1
}

# python3 and its venv module from the distribution (Debian, Ubuntu), as root.
fex_install_venv_module() {
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        return 0
    fi
    local packages=(python3 python3-venv)
    local version
    # Ubuntu and Debian name the versioned module package too (python3.12-venv).
    if version=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); then
        packages+=("python$version-venv")
    fi
    echo "installing ${packages[*]} with apt-get (python's venv module is missing)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
}

# Installs distribution packages with apt-get, as root; elsewhere says what
# to install. `fex_apt_install WHY PACKAGE...`: WHY says what needs them.
fex_apt_install() {
    local why="$1"
    shift
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "$why: install $* (Debian/Ubuntu: apt-get install $*)" >&2
        return 1
    fi
    echo "installing $* with apt-get ($why)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# A JDK (java, javac and jar) for the near-line tests' Apache Flink (11 or
# later) when one is missing.
fex_java_env() {
    if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1; then
        return 0
    fi
    # Debian 12 has 17; later releases name their own default JDK.
    local why="the near-line tests need a JDK (java, javac, jar), 11 or later"
    fex_apt_install "$why" openjdk-17-jdk-headless 2>/dev/null || fex_apt_install "$why" default-jdk-headless
}

# Maven for the JVM module (flink/: the JNI bridge, the join and their
# tests) when it is missing; a JDK first (fex_java_env).
fex_maven_env() {
    fex_java_env || return 1
    command -v mvn >/dev/null 2>&1 || fex_apt_install "the JVM module's tests need Maven 3.8 or later (mvn)" maven
}

# cmake and a C++ compiler, when missing: for librdkafka, which fex-server's
# Kafka producer (the rdkafka crate's cmake-build) compiles from its vendored
# source, and for SentencePiece, which the library's `op: tokenize` links
# (the sentencepiece crate's vendored source, built with cmake).
fex_cmake_env() {
    if command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
        return 0
    fi
    fex_apt_install "building fex needs cmake and a C++ compiler (librdkafka, SentencePiece)" cmake g++ make
}

# PostgreSQL's server (Debian's package) for the Iceberg catalog tests,
# which start a cluster of their own on 127.0.0.1, when it is missing.
fex_postgres_env() {
    if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
        return 0
    fi
    fex_apt_install "the Iceberg catalog tests start a PostgreSQL server" postgresql
}
