"""Tests of the Helm chart helm/fex and the Dockerfile, run by scripts/helm_test.sh.

Usage: python3 tests/helm/test_chart.py --helm PATH/TO/helm --server PATH/TO/fex-server

For the default values and every tests/helm/*.yaml value set (bad*.yaml
aside) it lints the chart strictly, renders it, validates every manifest
with kubernetes-validate --strict (core kinds) or the Prometheus Operator's
CRD models (ServiceMonitor), cross-checks the resources against each other,
and then runs the real fex-server with the rendered Deployment's arguments,
environment and mounts: once with --check-config, once for real, probed the
way the kubelet probes it and called the way NOTES.txt says. bad*.yaml must be
rejected by `helm lint`. The values of helm/examples/triton run the same way;
helm/examples (Triton's Deployment and Service, the KServe InferenceService)
are validated and cross-checked with the chart, and the InferenceService's
transformer args run through the real fex-server with --check-config, plus
the args KServe appends to them. A value set that sends the request log to
Kafka runs against a real broker on 127.0.0.1 (scripts/kafka_broker.py).
Prints 'N passed, N failed'; exits 1 on
any failure.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

import yaml

# grpc's C core logs the handshake the mTLS check expects to fail.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
import grpc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "helm", "fex")
VALUES_DIR = os.path.join(ROOT, "tests", "helm")
RELEASE = "fex"
NAMESPACE = "fex-test"
EXAMPLES = os.path.join(ROOT, "helm", "examples")
TRITON_VALUES = os.path.join(EXAMPLES, "triton", "values.yaml")
# Kinds kubernetes-validate cannot know: checked against their CRD models.
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {name}", flush=True)
            for line in str(detail).strip().splitlines()[:40]:
                print(f"      {line}", flush=True)
        return bool(ok)


T = Checks()


# ---------------------------------------------------------------- helpers


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Helm:
    def __init__(self, binary, home):
        self.binary = binary
        # Keep helm's cache, config and data out of $HOME.
        self.env = dict(os.environ)
        for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
            self.env[var] = os.path.join(home, var.lower())

    def __call__(self, *args):
        return run([self.binary, *args], env=self.env)

    def values_args(self, values_file, extra=()):
        return (["-f", values_file] if values_file else []) + list(extra)

    def lint(self, values_file=None, extra=()):
        return self("lint", "--strict", CHART, *self.values_args(values_file, extra))

    def template(self, values_file=None, extra=()):
        return self("template", RELEASE, CHART, "-n", NAMESPACE, *self.values_args(values_file, extra))

    def notes(self, values_file=None):
        r = self("install", RELEASE, CHART, "-n", NAMESPACE, "--dry-run=client", *self.values_args(values_file))
        notes = r.stdout.split("NOTES:", 1)[1] if "NOTES:" in r.stdout else ""
        return r, notes


def docs_of(text):
    return [d for d in yaml.safe_load_all(text) if d]


def find(docs, kind, name=None):
    for d in docs:
        if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name):
            return d
    return None


def parse_duration(s):
    """fex-server's duration syntax: 250ms, 5s, 2m or plain seconds."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m)?", s)
    if not m:
        raise ValueError(f"bad duration {s!r}")
    n, unit = float(m.group(1)), m.group(2) or "s"
    return n / 1000 if unit == "ms" else n * 60 if unit == "m" else n


def split_flag(arg):
    """'--name=value' -> ('--name', 'value'); '--name' -> ('--name', None)."""
    if "=" in arg:
        name, value = arg.split("=", 1)
        return name, value
    return arg, None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pb_string(field, value):
    """One protobuf string field (what HealthCheckRequest and DescribeModelRequest hold)."""
    data = value.encode()
    if not data:
        return b""
    out = bytearray([field << 3 | 2])
    n = len(data)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + data


def pb_fields(data):
    """Decodes the top-level varint and length-delimited fields of a message."""
    fields, i = {}, 0

    def varint():
        nonlocal i
        shift = result = 0
        while True:
            b = data[i]
            i += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result

    while i < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            fields.setdefault(field, varint())
        elif wire == 2:
            n = varint()
            fields.setdefault(field, data[i : i + n])
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    return fields


def grpc_channel(port, tls):
    target = f"127.0.0.1:{port}"
    if tls is None:
        return grpc.insecure_channel(target)
    creds = grpc.ssl_channel_credentials(
        root_certificates=tls.get("ca"), private_key=tls.get("key"), certificate_chain=tls.get("cert")
    )
    return grpc.secure_channel(target, creds, options=[("grpc.ssl_target_name_override", "localhost")])


def unary(port, method, request, tls=None, timeout=2.0):
    with grpc_channel(port, tls) as channel:
        call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        return call(request, timeout=timeout)


def health_status(port, service, tls=None):
    """What the kubelet's gRPC probe asks: grpc.health.v1.Health/Check. 1 = SERVING."""
    reply = unary(port, "/grpc.health.v1.Health/Check", pb_string(1, service), tls)
    return pb_fields(reply).get(1, 0)


def tcp_connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        return True


# ---------------------------------------------------------------- TLS material


def make_tls(dir):
    """A CA, a server certificate for localhost/127.0.0.1 and a client certificate."""
    os.makedirs(dir, exist_ok=True)

    def ssl(*args):
        r = run(["openssl", *args], cwd=dir)
        if r.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)}: {r.stderr}")

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=fex-test-ca")
    for who, ext in (
        ("server", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ):
        with open(os.path.join(dir, f"{who}.ext"), "w") as f:
            f.write(ext)
        ssl("req", *ec, "-keyout", f"{who}.key", "-out", f"{who}.csr", "-subj", f"/CN={who}")
        ssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{who}.crt", "-days", "2", "-extfile", f"{who}.ext")
    read = lambda name: open(os.path.join(dir, name), "rb").read()  # noqa: E731
    return {name: read(name) for name in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


# What a Secret key holds in the test (cert-manager's kubernetes.io/tls layout).
SECRET_KEYS = {"tls.crt": "server.crt", "tls.key": "server.key", "ca.crt": "ca.crt"}


# ---------------------------------------------------------------- the checks


def check_lint_and_bad_values(helm, value_sets):
    r = helm.lint()
    T.check("helm lint --strict (default values)", r.returncode == 0, r.stdout + r.stderr)
    for name, path in value_sets[1:]:
        r = helm.lint(path)
        T.check(f"helm lint --strict -f {name}.yaml", r.returncode == 0, r.stdout + r.stderr)
    bad_files = sorted(glob.glob(os.path.join(VALUES_DIR, "bad*.yaml")))
    T.check("a values file that breaks the schema exists (tests/helm/bad*.yaml)", bad_files)
    for path in bad_files:
        name = os.path.basename(path)
        r = helm.lint(path)
        out = r.stdout + r.stderr
        T.check(f"helm lint rejects {name}", r.returncode != 0 and "schema" in out, out)
        expected = re.findall(r"^# expect: (.+)$", open(path).read(), re.M)
        missing = [e for e in expected if e.strip() not in out]
        T.check(f"helm lint names all {len(expected)} errors of {name}", expected and not missing,
                 f"not named: {missing}\n{out}")
        r = helm.template(path)
        T.check(f"helm template rejects {name} too", r.returncode != 0, r.stdout[:2000])


def UPSTREAM_SETS(key):
    """--set flags for an upstream's required keys but the address."""
    return ["--set", f"upstreams.{key}.model=ranker", "--set", f"upstreams.{key}.inputs[0].name=ids",
            "--set", f"upstreams.{key}.inputs[0].from=item_id__values"]


def check_template_failures(helm):
    cases = [
        (["--set", "serviceMonitor.enabled=true", "--set", "server.metricsAddr=off"], "serviceMonitor.enabled needs"),
        (["--set", "autoscaling.enabled=true", "--set", "autoscaling.minReplicas=5", "--set", "autoscaling.maxReplicas=2"],
         "minReplicas (5) is above"),
        (["--set", "tls.clientCA.enabled=true"], "/tls"),
        (["--set", "server.metricsAddr=9090"], "/server/metricsAddr"),
        (["--set-string", "models.bad/name=x"], "invalid propertyName 'bad/name'"),
        (["--set", "autoscaling.enabled=true", "--set", "autoscaling.queueTime.enabled=true",
          "--set", "server.metricsAddr=off"], "autoscaling.queueTime needs server.metricsAddr"),
        (["--set", "autoscaling.enabled=true", "--set", "autoscaling.targetCPUUtilizationPercentage=null"],
         "needs a CPU or memory target, autoscaling.queueTime or"),
        (["--set", "server.http2StreamWindow=1000"], "/server/http2StreamWindow"),
        (["--set", "server.extractThreads=0"], "/server/extractThreads"),
        (["--set", "server.maxRequestBytes=536870912"], "server.maxInFlightBytes (268435456) is below"),
        (["--set", "upstreams.ranker.service=triton", *UPSTREAM_SETS("ranker")], "upstreams.ranker names no model"),
        (["--set", "existingModelsConfigMap=models", "--set", "upstreams.default.service=triton", *UPSTREAM_SETS("default")],
         "upstreams needs the chart to render the models"),
        (["--set", "models.m.name=m", "--set", "models.m.upstream.model=x", "--set", "upstreams.m.service=triton",
          *UPSTREAM_SETS("m")], "models.m has an upstream: section and upstreams.m sets one too"),
        (["--set", "upstreams.default.service=triton", "--set", "upstreams.default.address=http://t:1",
          *UPSTREAM_SETS("default")], "/upstreams/default"),
    ]
    for extra, expected in cases:
        r = helm.template(extra=extra)
        T.check(f"helm template refuses {' '.join(extra[1::2])}", r.returncode != 0 and expected in r.stderr,
                r.stderr or r.stdout[:1000])


def validate_manifests(docs, versions, label, tmp):
    core = [d for d in docs if (d["apiVersion"], d["kind"]) not in CRD_KINDS]
    crds = [d for d in docs if (d["apiVersion"], d["kind"]) in CRD_KINDS]
    path = os.path.join(tmp, f"{label}-core.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all(core, f)
    for version in versions:
        r = run([sys.executable, "-m", "kubernetes_validate", "--strict", "-k", version, path])
        out = r.stdout + r.stderr
        bad = [line for line in out.splitlines() if not line.startswith("INFO")]
        passed = len(re.findall(r"^INFO .* passed for resource", out, re.M))
        T.check(f"[{label}] kubernetes-validate --strict -k {version}: {passed} resources",
                r.returncode == 0 and not bad and passed == len(core), out)
    for d in crds:
        T.check(f"[{label}] {d['kind']} valid against the {d['apiVersion']} CRD model", *validate_crd(d))


def validate_crd(doc):
    """Validates against the Prometheus Operator CRD models; fails on fields they do not know."""
    from cloudcoil.models.prometheus_operator.v1 import ServiceMonitor

    try:
        model = ServiceMonitor.model_validate(doc)
    except Exception as e:  # pydantic.ValidationError
        return False, str(e)
    dumped = model.model_dump(by_alias=True, exclude_unset=True, mode="json")

    def unknown(src, out, path):
        found = []
        if isinstance(src, dict):
            for k, v in src.items():
                if not isinstance(out, dict) or k not in out:
                    found.append(f"{path}.{k}")
                else:
                    found += unknown(v, out[k], f"{path}.{k}")
        elif isinstance(src, list):
            for i, (a, b) in enumerate(zip(src, out)):
                found += unknown(a, b, f"{path}[{i}]")
        return found

    extra = unknown(doc, dumped, "")
    return not extra, f"fields the CRD does not define: {extra}"


def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_resources(label, docs, values_file):
    """Cross-checks the rendered resources: selectors, ports, probes, security, grace period."""
    dep = find(docs, "Deployment")
    if not T.check(f"[{label}] renders one Deployment", dep and sum(d["kind"] == "Deployment" for d in docs) == 1):
        return None
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    pod_labels = pod["metadata"]["labels"]
    (container,) = spec["containers"]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    args = dict(split_flag(a) for a in container["args"])
    c = T.check
    needed = ["--listen-addr", "--metrics-addr", "--drain-timeout"]
    if not c(f"[{label}] renders {', '.join(needed)}", all(f in args for f in needed), container["args"]):
        return dep

    c(f"[{label}] selector matches the pod labels", labels_match(dep["spec"]["selector"]["matchLabels"], pod_labels))
    std = ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
           "app.kubernetes.io/managed-by", "helm.sh/chart"]
    c(f"[{label}] every resource has the standard labels",
      all(all(k in d["metadata"].get("labels", {}) for k in std) for d in docs))

    # Ports follow the flags.
    grpc_port = int(args["--listen-addr"].rsplit(":", 1)[1])
    c(f"[{label}] container port grpc = --listen-addr port ({grpc_port})", ports.get("grpc") == grpc_port, ports)
    metrics_on = args["--metrics-addr"] != "off"
    if metrics_on:
        mport = int(args["--metrics-addr"].rsplit(":", 1)[1])
        c(f"[{label}] container port metrics = --metrics-addr port ({mport})", ports.get("metrics") == mport, ports)
    else:
        c(f"[{label}] no metrics port with --metrics-addr=off", "metrics" not in ports, ports)

    svc = find(docs, "Service")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    c(f"[{label}] Service selects the pods", labels_match(svc["spec"]["selector"], pod_labels))
    # The health-only port (TLS) is for the kubelet, not for the Service.
    c(f"[{label}] Service targetPorts name container ports",
      all(p["targetPort"] in ports for p in svc_ports.values()) and set(svc_ports) == set(ports) - {"health"},
      svc_ports)
    c(f"[{label}] Service ports carry appProtocol", all(p.get("appProtocol") for p in svc_ports.values()), svc_ports)

    # Probes: native gRPC health checks on the gRPC port, or TCP with TLS.
    tls = "--tls-cert" in args
    probes = {k: container.get(k) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    c(f"[{label}] startup, liveness and readiness probes are set", all(probes.values()), probes)
    if tls:
        hport = int(args["--health-addr"].rsplit(":", 1)[1])
        c(f"[{label}] TLS: probes are native gRPC health checks on the plaintext health port {hport}",
          all(p and p.get("grpc", {}).get("port") == hport for p in probes.values()) and ports.get("health") == hport,
          probes)
    else:
        c(f"[{label}] probes are native gRPC health checks on port {grpc_port}",
          all(p and p.get("grpc", {}).get("port") == grpc_port for p in probes.values()), probes)

    # Shutdown: the kubelet's SIGKILL must come after the whole drain.
    drain = parse_duration(args["--drain-timeout"])
    sleep = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    c(f"[{label}] terminationGracePeriodSeconds {grace} > preStop sleep {sleep} + drain {drain:g}s",
      grace > sleep + drain)

    # Security.
    psc, sc = spec.get("securityContext", {}), container.get("securityContext", {})
    c(f"[{label}] pod: runAsNonRoot, non-zero uid, seccomp RuntimeDefault",
      psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) > 0
      and psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", psc)
    c(f"[{label}] container: read-only root, no privilege escalation, capabilities drop ALL",
      sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
      and sc.get("capabilities", {}).get("drop") == ["ALL"], sc)
    c(f"[{label}] no service account token mounted", spec.get("automountServiceAccountToken") is False)
    res = container.get("resources", {})
    c(f"[{label}] resources: requests and a memory limit", res.get("requests") and res.get("limits", {}).get("memory"), res)

    # Models: ConfigMap, mount, checksum.
    cm = find(docs, "ConfigMap")
    has_checksum = "checksum/config" in pod["metadata"].get("annotations", {})
    if "--models" in args:
        c(f"[{label}] models ConfigMap rendered and mounted", cm is not None and any(
            v.get("configMap", {}).get("name") == cm["metadata"]["name"] for v in spec.get("volumes", [])))
        c(f"[{label}] pod carries the checksum/config annotation", has_checksum)
    else:
        c(f"[{label}] no --models: no ConfigMap, no checksum", cm is None and not has_checksum)

    # Anti-affinity preset: soft prefers, hard requires other nodes.
    defaults = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    override = yaml.safe_load(open(values_file)) if values_file else {}
    preset = override.get("podAntiAffinityPreset", defaults["podAntiAffinityPreset"])
    anti = spec.get("affinity", {}).get("podAntiAffinity", {})
    want = {"soft": "preferredDuringSchedulingIgnoredDuringExecution",
            "hard": "requiredDuringSchedulingIgnoredDuringExecution"}.get(preset)
    terms = [t.get("podAffinityTerm", t) for t in anti.get(want, [])] if want else []
    c(f"[{label}] pod anti-affinity preset {preset!r} spreads the pods over nodes",
      (not anti) if want is None else (list(anti) == [want] and terms and all(
          labels_match(t["labelSelector"]["matchLabels"], pod_labels)
          and t["topologyKey"] == "kubernetes.io/hostname" for t in terms)), anti)

    hpa = find(docs, "HorizontalPodAutoscaler")
    if hpa:
        ref = hpa["spec"]["scaleTargetRef"]
        c(f"[{label}] HPA scales the Deployment, which sets no replicas",
          ref["kind"] == "Deployment" and ref["name"] == dep["metadata"]["name"] and "replicas" not in dep["spec"])
        queue = {**defaults["autoscaling"]["queueTime"], **override.get("autoscaling", {}).get("queueTime", {})}
        pods = [m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
        want = [{"metric": {"name": queue["metricName"]},
                 "target": {"type": "AverageValue", "averageValue": str(queue["targetAverageValue"])}}]
        if queue["enabled"]:
            c(f"[{label}] HPA scales on queue time: Pods metric {queue['metricName']} at "
              f"{queue['targetAverageValue']} per pod", pods == want and metrics_on, hpa["spec"]["metrics"])
        else:
            c(f"[{label}] HPA has no queue-time metric with autoscaling.queueTime off",
              not any(p["metric"]["name"] == queue["metricName"] for p in pods), hpa["spec"]["metrics"])
    pdb = find(docs, "PodDisruptionBudget")
    if pdb:
        c(f"[{label}] PDB selects the pods", labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels))
    sm = find(docs, "ServiceMonitor")
    if sm:
        c(f"[{label}] ServiceMonitor selects the Service's metrics port",
          labels_match(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
          and all(e["port"] in svc_ports for e in sm["spec"]["endpoints"]) and "metrics" in svc_ports)
    np = find(docs, "NetworkPolicy")
    if np:
        allowed = {p["port"] for rule in np["spec"].get("ingress", []) for p in rule.get("ports", [])}
        c(f"[{label}] NetworkPolicy selects the pods and admits every container port",
          labels_match(np["spec"]["podSelector"]["matchLabels"], pod_labels) and allowed == set(ports), allowed)
    return dep


def check_flags_against_help(label, container, help_flags, help_env):
    flags = [split_flag(a)[0] for a in container["args"]]
    unknown = [f for f in flags if f not in help_flags]
    T.check(f"[{label}] all {len(flags)} rendered flags appear in fex-server --help", not unknown, f"unknown: {unknown}")
    T.check(f"[{label}] no flag rendered twice", len(flags) == len(set(flags)), flags)
    env = [e["name"] for e in container.get("env", [])]
    fex_env = [e for e in env if e.startswith("FEX_")]
    unknown = [e for e in fex_env if e not in help_env]
    T.check(f"[{label}] all {len(env)} rendered env vars ({len(fex_env)} FEX_*) appear in fex-server --help",
            not unknown, f"unknown: {unknown}")
    return flags


def materialize(label, docs, dep, root, tls_files):
    """Lays out the pod's volumes under `root` the way the kubelet does (ConfigMap
    keys behind a ..data symlink; Secret items), and returns {mountPath: host dir}."""
    spec = dep["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts, config_dirs = {}, []
    for m in container.get("volumeMounts", []):
        vol = volumes.get(m["name"])
        if not T.check(f"[{label}] volumeMount {m['name']} has a volume", vol is not None):
            continue
        host = os.path.join(root, m["mountPath"].lstrip("/"))
        stamp = os.path.join(host, "..2026_01_01_00_00_00.000000000")
        os.makedirs(stamp)
        files = {}
        if "configMap" in vol:
            cm = find(docs, "ConfigMap", vol["configMap"]["name"])
            if not T.check(f"[{label}] ConfigMap {vol['configMap']['name']} is rendered", cm is not None):
                continue
            files = dict(cm["data"])
        elif "secret" in vol:
            items = vol["secret"].get("items") or [{"key": k, "path": k} for k in SECRET_KEYS]
            for item in items:
                if not T.check(f"[{label}] Secret key {item['key']} is a known TLS key", item["key"] in SECRET_KEYS):
                    continue
                files[item["path"]] = tls_files[SECRET_KEYS[item["key"]]]
        elif "emptyDir" in vol or "persistentVolumeClaim" in vol:
            # A writable volume: an empty directory (the request log's).
            pass
        else:
            T.check(f"[{label}] volume {m['name']} is a ConfigMap, Secret, emptyDir or PVC", False, vol)
            continue
        for name, content in files.items():
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(os.path.join(stamp, name), mode) as f:
                f.write(content)
            os.symlink(os.path.join("..data", name), os.path.join(host, name))
        os.symlink(os.path.basename(stamp), os.path.join(host, "..data"))
        mounts[m["mountPath"]] = host
        if "configMap" in vol:
            config_dirs.append(host)
    for host in config_dirs:
        localize_upstream_cas(label, host, mounts)
    return mounts


def localize_upstream_cas(label, config_dir, mounts):
    """Points each model's upstream.tls.ca (a path in the pod) at the file
    materialize laid out for it, after checking that a volume holds it."""
    for name in sorted(os.listdir(config_dir)):
        path = os.path.join(config_dir, name)
        if name.startswith("..") or not name.endswith(".yaml"):
            continue
        text = open(path).read()
        ca = ((yaml.safe_load(text) or {}).get("upstream") or {}).get("tls", {}).get("ca", "")
        if not ca.startswith("/"):
            continue
        mount = next((m for m in mounts if ca.startswith(m.rstrip("/") + "/")), None)
        host = mounts[mount] + ca[len(mount.rstrip("/")):] if mount else None
        if T.check(f"[{label}] {name}: upstream.tls.ca {ca} is a file of a mounted volume",
                   host and os.path.isfile(host), list(mounts)):
            with open(path, "w") as f:
                f.write(text.replace(f"ca: {ca}", f"ca: {host}"))


KAFKA_BROKERS = {}


def local_kafka(label, topic):
    """A real Kafka broker on 127.0.0.1 (scripts/kafka_broker.py, its waits
    bounded by the script) holding `topic`, started once per topic and
    stopped when this process ends (its standard input closes): the bootstrap
    address, or None after a failed check with the script's message."""
    if topic not in KAFKA_BROKERS:
        script = os.path.join(ROOT, "scripts", "kafka_broker.py")
        proc = subprocess.Popen([sys.executable, script, "--until-stdin-closes", "--topic", f"{topic}:2"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        try:
            bootstrap = json.loads(line)["bootstrap"]
        except (ValueError, KeyError):
            proc.kill()
            T.check(f"[{label}] a Kafka broker starts for --request-log-kafka", False, proc.stderr.read())
            return None
        KAFKA_BROKERS[topic] = (proc, bootstrap)
    return KAFKA_BROKERS[topic][1]


def host_args(label, args, mounts, grpc_port, metrics_port, health_port):
    """The rendered args with addresses on loopback ports (a real Kafka broker
    for --request-log-kafka) and paths under the mounts."""
    out = []
    topic = dict(split_flag(a) for a in args).get("--request-log-kafka-topic", "fex-requests")
    for arg in args:
        name, value = split_flag(arg)
        if name == "--request-log-kafka":
            value = local_kafka(label, topic)
            if value is None:
                return None
        elif name == "--listen-addr":
            value = f"127.0.0.1:{grpc_port}"
        elif name == "--health-addr" and value != "off":
            value = f"127.0.0.1:{health_port}"
        elif name == "--metrics-addr" and value != "off":
            value = f"127.0.0.1:{metrics_port}"
        elif value and value.startswith("/"):
            mount = next((m for m in mounts if value == m or value.startswith(m.rstrip("/") + "/")), None)
            if not T.check(f"[{label}] {name}={value} lies in a mounted volume", mount is not None, list(mounts)):
                return None
            host = mounts[mount] + value[len(mount.rstrip("/")):]
            T.check(f"[{label}] {name}={value} exists in the mounted volume", os.path.exists(host), host)
            value = host
        out.append(f"{name}={value}" if value is not None else name)
    return out


def expected_models(docs, args):
    if "--models" not in {split_flag(a)[0] for a in args}:
        return ["default"]
    cm = find(docs, "ConfigMap")
    return sorted(yaml.safe_load(text)["name"] for text in cm["data"].values())


def run_server(label, server, docs, dep, notes, tmp, tls_files, help_flags, help_env):
    spec = dep["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    rendered = container["args"]
    check_flags_against_help(label, container, help_flags, help_env)
    root = os.path.join(tmp, label + "-pod")
    mounts = materialize(label, docs, dep, root, tls_files)
    grpc_port, metrics_port, health_port = free_port(), free_port(), free_port()
    args = host_args(label, rendered, mounts, grpc_port, metrics_port, health_port)
    if args is None:
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEX_")}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
    models = expected_models(docs, rendered)

    # 1. --check-config with the rendered flags and files.
    r = run([server, *args, "--check-config"], env=env, timeout=60)
    loaded = sorted(line.split(":")[0] for line in r.stdout.splitlines() if ": ok" in line)
    T.check(f"[{label}] fex-server <rendered args> --check-config exits 0 and loads {models}",
            r.returncode == 0 and loaded == models, f"exit {r.returncode}\n{r.stdout}{r.stderr}\nargs: {args}")
    check_unreachable_upstreams(label, docs, r.stdout)

    # 2. The server itself, probed as the kubelet would.
    log_path = os.path.join(tmp, label + "-server.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([server, *args], env=env, stdout=log, stderr=subprocess.STDOUT)
    tls = None
    if "--tls-cert" in {split_flag(a)[0] for a in rendered}:
        tls = {"ca": tls_files["ca.crt"]}
        if any(split_flag(a)[0] == "--tls-client-ca" for a in rendered):
            tls.update(cert=tls_files["client.crt"], key=tls_files["client.key"])

    def probe_ok(p):
        try:
            if "grpc" in p:
                # Probes on the health port are plaintext even when gRPC is TLS.
                on_health = "--health-addr" in {split_flag(a)[0] for a in rendered}
                port = health_port if on_health else grpc_port
                return health_status(port, p["grpc"].get("service", "")) == 1
            if "tcpSocket" in p:
                return tcp_connect(grpc_port)
        except (grpc.RpcError, OSError):
            return False
        return False

    def log_tail():
        return open(log_path).read()[-3000:]

    try:
        startup = container["startupProbe"]
        budget = min(startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3), 30)
        deadline = time.monotonic() + budget
        while not probe_ok(startup) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        kind = "gRPC" if "grpc" in startup else "TCP"
        T.check(f"[{label}] startup probe ({kind}) passes within {budget}s", probe_ok(startup), log_tail())
        for name in ("readinessProbe", "livenessProbe"):
            p = container[name]
            what = f"Health/Check {p['grpc'].get('service', '')!r} is SERVING" if "grpc" in p else "TCP connect"
            T.check(f"[{label}] {name}: {what}", probe_ok(p), log_tail())

        if tls:
            try:
                status = health_status(grpc_port, "fex.v1.FeatureExtractor", tls)
            except grpc.RpcError as e:
                status = e
            T.check(f"[{label}] Health/Check over TLS{' with a client certificate' if 'cert' in tls else ''} is SERVING",
                    status == 1, f"{status}\n{log_tail()}")
            if "cert" in tls:
                try:
                    health_status(grpc_port, "", {"ca": tls["ca"]})
                    refused = False
                except grpc.RpcError:
                    refused = True
                T.check(f"[{label}] mTLS: a call without a client certificate is refused", refused)

        # The example call NOTES.txt prints.
        m = re.search(r"""-d '\{"model": "([^"]+)"\}'""", notes)
        model = m.group(1) if m else None
        T.check(f"[{label}] NOTES.txt names a served model ({model})", model in models, notes)
        if model:
            try:
                reply = pb_fields(unary(grpc_port, "/fex.v1.FeatureExtractor/DescribeModel", pb_string(1, model), tls))
                got = reply.get(1, b"").decode()
            except grpc.RpcError as e:
                got = e
            T.check(f"[{label}] NOTES.txt's DescribeModel call answers for {model}", got == model, f"{got}\n{log_tail()}")

        if any(split_flag(a) == ("--metrics-addr", "off") for a in rendered):
            T.check(f"[{label}] no metrics listener with --metrics-addr=off", not _http_ok(metrics_port))
        else:
            body = _http_get(metrics_port)
            T.check(f"[{label}] GET /metrics on the metrics port serves fex_ metrics",
                    body and "fex_models_loaded" in body, body[:500] if body else log_tail())
            # What the queue-time autoscaling rule (helm/fex/README.md) reads, and the
            # pool size the rendered flags asked for.
            flags = dict(split_flag(a) for a in rendered)
            threads = flags.get("--extract-threads")
            lines = (body or "").splitlines()
            T.check(f"[{label}] /metrics has the queue-wait histogram the HPA's adapter rule reads",
                    "fex_queue_wait_seconds_sum 0.0" in lines and "fex_queue_wait_seconds_count 0" in lines,
                    (body or "")[:3000])
            T.check(f"[{label}] /metrics reports the pool size ({threads or 'server default'})",
                    any(line.startswith("fex_pool_threads ") and (threads is None or line == f"fex_pool_threads {threads}")
                        for line in lines), (body or "")[:3000])

        # SIGTERM, as the kubelet sends after the preStop hook: drain, then exit 0
        # well within the grace period.
        grace = spec.get("terminationGracePeriodSeconds", 30)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            code = "still running"
        T.check(f"[{label}] SIGTERM: drains and exits 0 within the grace period ({grace}s)", code == 0,
                f"exit {code}\n{log_tail()}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _http_get(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            return r.read().decode() if r.status == 200 else None
    except OSError:
        return None


def _http_ok(port):
    return _http_get(port) is not None


def check_notes(label, notes, docs):
    svc = find(docs, "Service")
    m = re.search(r"port-forward service/(\S+) (\d+):(\d+)", notes)
    T.check(f"[{label}] NOTES.txt port-forwards the Service's gRPC port",
            m and m.group(1) == svc["metadata"]["name"] and int(m.group(2)) == next(
                p["port"] for p in svc["spec"]["ports"] if p["name"] == "grpc"), notes)


def check_queue_time_only(helm):
    """An HPA may scale on queue time alone (no CPU target)."""
    r = helm.template(extra=["--set", "autoscaling.enabled=true", "--set", "autoscaling.targetCPUUtilizationPercentage=null",
                             "--set", "autoscaling.queueTime.enabled=true"])
    hpa = find(docs_of(r.stdout), "HorizontalPodAutoscaler") if r.returncode == 0 else None
    metrics = hpa["spec"]["metrics"] if hpa else r.stderr
    T.check("an HPA on queue time alone renders one Pods metric", hpa and [m["type"] for m in metrics] == ["Pods"]
            and metrics[0]["pods"]["metric"]["name"] == "fex_queue_wait_seconds_avg", metrics)


def check_checksum(helm, tmp):
    def annotation(values_text=None, extra=()):
        path = None
        if values_text is not None:
            path = os.path.join(tmp, f"checksum-{hashlib.sha1(values_text.encode()).hexdigest()[:8]}.yaml")
            with open(path, "w") as f:
                f.write(values_text)
        r = helm.template(path, extra)
        dep = find(docs_of(r.stdout), "Deployment")
        return dep["spec"]["template"]["metadata"].get("annotations", {}).get("checksum/config") if dep else None

    base = annotation()
    changed_model = open(os.path.join(CHART, "values.yaml")).read()
    changed_model = yaml.safe_load(changed_model)["models"]["default"].replace("max_batch_size: 4096", "max_batch_size: 2048")
    changed = annotation(yaml.safe_dump({"models": {"default": changed_model}}))
    T.check("checksum/config changes when a model config changes (the pods roll)", base and changed and base != changed,
            f"{base} vs {changed}")
    same = annotation(extra=["--set", "replicaCount=5", "--set", "server.log=debug"])
    T.check("checksum/config stays when only other values change", base == same, f"{base} vs {same}")
    off = annotation(extra=["--set", "rollOnModelChange=false"])
    T.check("rollOnModelChange=false drops the checksum annotation", off is None)


def check_values_file():
    values = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    chart_default = yaml.safe_load(values["models"]["default"])
    repo_default = yaml.safe_load(open(os.path.join(ROOT, "models", "default.yaml")))
    T.check("values.yaml's default model is models/default.yaml", chart_default == repo_default)
    return values


def schema_paths(schema, prefix=""):
    """Every value path the schema defines, through nested closed objects."""
    out = []
    for key, sub in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        if key == "global":
            continue
        out.append(path)
        if sub.get("additionalProperties") is False:
            out += schema_paths(sub, path + ".")
    return out


def check_readme(help_flags, help_env):
    readme = open(os.path.join(CHART, "README.md")).read()
    schema = json.load(open(os.path.join(CHART, "values.schema.json")))
    paths = schema_paths(schema)
    missing = [p for p in paths if f"`{p}`" not in readme]
    T.check(f"helm/fex/README.md documents all {len(paths)} values", not missing, f"missing: {missing}")
    flags = sorted(help_flags - {"--help", "--version", "-h", "-V"})
    missing = [f for f in flags + sorted(help_env) if f"`{f}`" not in readme]
    T.check(f"helm/fex/README.md maps all {len(flags)} flags and {len(help_env)} env vars", not missing, f"missing: {missing}")


def check_flag_coverage(rendered_flags, help_flags):
    needed = help_flags - {"--help", "--version", "-h", "-V", "--check-config"}
    missing = sorted(needed - rendered_flags)
    T.check(f"every fex-server flag ({len(needed)}) is set by some chart value", not missing, f"never rendered: {missing}")


def check_dockerfile(values, tmp):
    text = open(os.path.join(ROOT, "Dockerfile")).read()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    froms = [line for line in lines if line.upper().startswith("FROM ")]
    T.check("Dockerfile is multi-stage", len(froms) >= 2, froms)
    final = lines[lines.index(froms[-1]):]
    user = [line.split()[1] for line in final if line.upper().startswith("USER ")]
    uid = values["podSecurityContext"]["runAsUser"]
    T.check(f"Dockerfile runtime stage runs as non-root uid {uid} (the chart's runAsUser)",
            user and user[-1].split(":")[0] == str(uid), user)
    entry = [line for line in final if line.upper().startswith("ENTRYPOINT ")]
    T.check("Dockerfile ENTRYPOINT execs fex-server (exec form)",
            entry and json.loads(entry[-1].split(None, 1)[1])[0].endswith("/fex-server"), entry)
    T.check("Dockerfile has no HEALTHCHECK (Kubernetes probes)", not any(line.upper().startswith("HEALTHCHECK") for line in lines))
    T.check("Dockerfile builds fex-server in release mode with the lock file",
            re.search(r"cargo build --release --locked -p fex-server", text))

    # The build context .dockerignore lets through must hold a loadable workspace.
    ignore = [line.strip() for line in open(os.path.join(ROOT, ".dockerignore")) if line.strip() and not line.startswith("#")]
    kept = [line[1:].rstrip("/") for line in ignore if line.startswith("!")]
    T.check(".dockerignore excludes everything but named sources", ignore[0] == "*" and kept, ignore)
    ctx = os.path.join(tmp, "docker-context")
    os.makedirs(ctx)
    for entry in kept:
        src = os.path.join(ROOT, entry)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(ctx, entry))
        elif os.path.exists(src):
            os.makedirs(os.path.dirname(os.path.join(ctx, entry)), exist_ok=True)
            shutil.copy(src, os.path.join(ctx, entry))
    r = run(["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"], cwd=ctx)
    if not T.check("the Docker build context holds every workspace member (cargo metadata)", r.returncode == 0,
                   r.stderr[-2000:]):
        return
    targets = [t["src_path"] for p in json.loads(r.stdout)["packages"] for t in p["targets"]]
    missing = [t for t in targets if not os.path.exists(t)]
    T.check(f"the Docker build context holds all {len(targets)} declared build targets", not missing, missing)
    # Files the sources and build scripts read at compile time.
    wanted = []
    for dirpath, _, files in os.walk(ctx):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            text = open(path).read()
            for rel in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"\s*\)', text):
                wanted.append(os.path.normpath(os.path.join(dirpath, rel)))
            if name == "build.rs":
                # A proto is named relative to its build script or to the
                # workspace's proto/ include directory.
                for rel in re.findall(r'"([\w./-]+\.proto)"', text):
                    beside = os.path.join(dirpath, rel)
                    wanted.append(beside if os.path.exists(beside) else os.path.join(ctx, "proto", rel))
    missing = [os.path.relpath(w, ctx) for w in wanted if not os.path.exists(w)]
    T.check(f"the Docker build context holds the {len(wanted)} files the build includes (include_str!, protos)",
            wanted and not missing, missing)


# ---------------------------------------------------------------- upstreams


def upstream_values(values_file):
    override = yaml.safe_load(open(values_file)) if values_file else {}
    return {k: u for k, u in (override.get("upstreams") or {}).items() if u}


def check_upstreams(label, docs, values_file):
    """Each `upstreams` entry became its model's `upstream:` section, its CA is
    mounted from its Secret, and a restricting NetworkPolicy lets fex reach it."""
    upstreams = upstream_values(values_file)
    if not upstreams:
        return
    c = T.check
    cm = find(docs, "ConfigMap")
    spec = find(docs, "Deployment")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for key, u in upstreams.items():
        config = yaml.safe_load(cm["data"].get(f"{key}.yaml", "")) or {}
        up = config.get("upstream") or {}
        scheme = "https" if u.get("tls") else "http"
        ns = u.get("namespace") or NAMESPACE
        want = u.get("address") or f"{scheme}://{u['service']}.{ns}.svc:{u.get('port', 8001)}"
        c(f"[{label}] ConfigMap {key}.yaml: upstream.address is {want}", up.get("address") == want, up)
        fields = {"model": u["model"], "inputs": u["inputs"], "version": u.get("version"), "timeout_ms": u.get("timeoutMs"),
                  "max_connections": u.get("maxConnections"), "outputs": u.get("outputs")}
        got = {k: up.get(k) for k in fields}
        c(f"[{label}] ConfigMap {key}.yaml: upstream model, version, timeout_ms, max_connections, inputs and outputs "
          "are the values'", got == fields, f"{got}\n!= {fields}")
        if u.get("tls"):
            ca = (up.get("tls") or {}).get("ca", "")
            mount = next((m for m in container.get("volumeMounts", []) if m["mountPath"] == os.path.dirname(ca)), None)
            secret = volumes.get(mount["name"], {}).get("secret", {}) if mount else {}
            key_name = u["tls"].get("key", "ca.crt")
            c(f"[{label}] upstream {key}: tls.ca {ca} is key {key_name} of Secret {u['tls']['secretName']}, mounted",
              secret.get("secretName") == u["tls"]["secretName"]
              and secret.get("items") == [{"key": key_name, "path": os.path.basename(ca)}], f"{mount}\n{secret}")
            c(f"[{label}] upstream {key}: tls.domain is the values'", up["tls"].get("domain") == u["tls"].get("domain"), up)
    np = find(docs, "NetworkPolicy")
    if not np or "Egress" not in np["spec"]["policyTypes"]:
        return
    rules = np["spec"].get("egress", [])
    ports = lambda r: sorted((p["port"], p["protocol"]) for p in r.get("ports", []))  # noqa: E731
    c(f"[{label}] NetworkPolicy: egress to DNS (53/UDP, 53/TCP)",
      any(ports(r) == [(53, "TCP"), (53, "UDP")] for r in rules), rules)
    for key, u in upstreams.items():
        port = u.get("targetPort") or (int(u["address"].rstrip("/").rsplit(":", 1)[1]) if u.get("address") else u.get("port", 8001))
        to = u.get("egressTo") or ([] if u.get("address") else [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": u.get("namespace") or NAMESPACE}}}])
        c(f"[{label}] NetworkPolicy: egress to upstream {key} on port {port}/TCP",
          any(ports(r) == [(port, "TCP")] and r.get("to", []) == to for r in rules), rules)
    c(f"[{label}] NetworkPolicy: no other egress", len(rules) == 1 + len(upstreams), rules)


def check_unreachable_upstreams(label, docs, stdout):
    """--check-config tried each model's upstream (none runs here), said so,
    and still passed; with TLS it read the CA from its mounted Secret."""
    cm = find(docs, "ConfigMap")
    for text in (cm or {}).get("data", {}).values():
        config = yaml.safe_load(text) or {}
        up = config.get("upstream")
        if not up:
            continue
        said = [line for line in stdout.splitlines() if line.startswith(f"{config['name']}: upstream {up['address']} ")]
        T.check(f"[{label}] --check-config: {config['name']}'s upstream {up['address']} is not reachable, and said so",
                len(said) == 1 and "not reachable" in said[0], stdout)
        if up.get("tls"):
            T.check(f"[{label}] --check-config read {config['name']}'s upstream CA", said and "tls.ca" not in said[0], said)


def check_triton_example(helm, versions, tmp):
    """helm/examples/triton: Triton's Deployment and Service are valid and
    consistent, and the chart's values point the default model at them."""
    label = "example-triton"
    docs = docs_of(open(os.path.join(EXAMPLES, "triton", "triton.yaml")).read())
    validate_manifests(docs, versions, label + "-server", tmp)
    dep, svc = find(docs, "Deployment"), find(docs, "Service")
    c = T.check
    if not c(f"[{label}] triton.yaml holds a Deployment and a Service", dep and svc and len(docs) == 2):
        return
    pod = dep["spec"]["template"]
    (triton,) = pod["spec"]["containers"]
    args = dict(split_flag(a) for a in triton.get("args", []) if a.startswith("--"))
    ports = {p["name"]: p["containerPort"] for p in triton["ports"]}
    c(f"[{label}] the Triton container runs nvcr.io/nvidia/tritonserver", triton["image"].startswith("nvcr.io/nvidia/tritonserver:"))
    c(f"[{label}] Triton's gRPC port 8001 and HTTP port 8000 are its flags and named ports",
      args.get("--grpc-port") == "8001" and args.get("--http-port") == "8000"
      and ports.get("grpc") == 8001 and ports.get("http") == 8000, f"{args}\n{ports}")
    ready = triton.get("readinessProbe", {}).get("httpGet", {})
    c(f"[{label}] readiness probe: GET /v2/health/ready on the HTTP port",
      ready.get("path") == "/v2/health/ready" and ports.get(ready.get("port"), ready.get("port")) == 8000, ready)
    repo = args.get("--model-repository")
    c(f"[{label}] the model repository {repo} is a mounted volume",
      any(m["mountPath"] == repo for m in triton.get("volumeMounts", [])), triton.get("volumeMounts"))
    c(f"[{label}] the Service selects Triton's pods", labels_match(svc["spec"]["selector"], pod["metadata"]["labels"]))
    grpc_port = next((p for p in svc["spec"]["ports"] if p["name"] == "grpc"), {})
    c(f"[{label}] the Service's grpc port targets Triton's gRPC port",
      ports.get(grpc_port.get("targetPort"), grpc_port.get("targetPort")) == 8001, grpc_port)
    (u,) = upstream_values(TRITON_VALUES).values()
    c(f"[{label}] values.yaml points upstreams.default at that Service and port",
      u.get("service") == svc["metadata"]["name"] and u.get("port") == grpc_port.get("port"), u)
    r = helm.template(TRITON_VALUES)
    np = find(docs_of(r.stdout), "NetworkPolicy") if r.returncode == 0 else None
    allowed = [p["port"] for rule in (np or {}).get("spec", {}).get("egress", []) for p in rule.get("ports", [])]
    c(f"[{label}] the chart's NetworkPolicy lets fex reach Triton's pods on 8001", 8001 in allowed, allowed or r.stderr)


# What KServe appends to a custom transformer's first container's args
# (CustomTransformer.GetContainer), unless an arg already starts with the flag.
def kserve_transformer_args(name, namespace, args):
    out = []
    for flag, value in (("--model_name", name), ("--predictor_host", f"{name}-predictor.{namespace}"),
                        ("--http_port", "8080")):
        if not any(a.startswith(flag) for a in args):
            out += [flag, value]
    return out


def check_kserve_example(server, versions, tmp):
    """helm/examples/kserve: an InferenceService (a CRD kubernetes-validate does
    not know, so its structure is checked here) whose transformer runs
    fex-server with flags and a model config the real binary accepts."""
    label = "example-kserve"
    c = T.check
    docs = docs_of(open(os.path.join(EXAMPLES, "kserve", "inferenceservice.yaml")).read())
    isvc = find(docs, "InferenceService")
    core = [d for d in docs if d is not isvc]
    if not c(f"[{label}] an InferenceService of apiVersion serving.kserve.io/v1beta1",
             isvc and isvc["apiVersion"] == "serving.kserve.io/v1beta1", [d.get("kind") for d in docs]):
        return
    name = isvc["metadata"]["name"]
    predictor, transformer = isvc["spec"].get("predictor", {}), isvc["spec"].get("transformer", {})
    model = predictor.get("model", {})
    c(f"[{label}] spec.predictor is a Triton model over the v2 protocol on gRPC (protocolVersion grpc-v2, an h2c port)",
      model.get("modelFormat", {}).get("name") == "triton" and model.get("protocolVersion") == "grpc-v2"
      and model.get("storageUri") and any(p.get("name") == "h2c" for p in model.get("ports", [])), predictor)
    containers = transformer.get("containers", [])
    if not c(f"[{label}] spec.transformer has one container, kserve-container",
             [x.get("name") for x in containers] == ["kserve-container"], transformer):
        return
    (container,) = containers
    c(f"[{label}] the transformer serves gRPC on its one port, named h2c, the --listen-addr port",
      [(p["name"], p["containerPort"]) for p in container.get("ports", [])]
      == [("h2c", int(dict(split_flag(a) for a in container["args"])["--listen-addr"].rsplit(":", 1)[1]))],
      container.get("ports"))
    # The transformer's pod spec is a Kubernetes PodSpec: validate it as a Pod.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-transformer"},
           "spec": {k: v for k, v in transformer.items() if k in ("containers", "volumes")}}
    validate_manifests(core + [pod], versions, label, tmp)
    cm = find(core, "ConfigMap")
    namespace = "recsys"
    for text in cm["data"].values():
        up = (yaml.safe_load(text) or {}).get("upstream") or {}
        m = re.fullmatch(r"http://([^.]+)\.([^.]+)\.svc\.cluster\.local:80", up.get("address", ""))
        c(f"[{label}] the model's upstream is this InferenceService's predictor on port 80",
          m and m.group(1) == f"{name}-predictor", up.get("address"))
        namespace = m.group(2) if m else namespace
    # The binary with the container's args and the mounted model configs.
    dep = {"spec": {"template": {"spec": pod["spec"]}}}
    mounts = materialize(label, core, dep, os.path.join(tmp, label + "-pod"), {})
    args = host_args(label, container["args"], mounts, free_port(), free_port(), free_port())
    if args is None:
        return
    r = run([server, *args, "--check-config"], timeout=60)
    c(f"[{label}] fex-server <transformer args> --check-config passes (upstream unreachable)",
      r.returncode == 0 and ": ok" in r.stdout, f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    check_unreachable_upstreams(label, core, r.stdout)
    kserve = kserve_transformer_args(name, namespace, container["args"])
    r = run([server, *args, *kserve, "--check-config"], timeout=60)
    c(f"[{label}] fex-server accepts the args KServe appends to a transformer ({' '.join(kserve)})",
      r.returncode == 0 and ": ok" in r.stdout, f"exit {r.returncode}\n{r.stdout}{r.stderr}")


def check_value_set(helm, server, label, path, versions, tmp, tls_files, help_flags, help_env):
    """Everything about one value set; returns the flags its Deployment renders."""
    r = helm.template(path)
    if not T.check(f"[{label}] helm template renders", r.returncode == 0, r.stderr):
        return set()
    docs = docs_of(r.stdout)
    print(f"      {label}: {', '.join(sorted(d['kind'] for d in docs))}")
    validate_manifests(docs, versions, label, tmp)
    dep = check_resources(label, docs, path)
    if dep is None:
        return set()
    check_upstreams(label, docs, path)
    r, notes = helm.notes(path)
    T.check(f"[{label}] helm install --dry-run prints NOTES.txt", r.returncode == 0 and notes.strip(), r.stderr)
    check_notes(label, notes, docs)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    run_server(label, server, docs, dep, notes, tmp, tls_files, help_flags, help_env)
    return {split_flag(a)[0] for a in container["args"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--server", required=True)
    opts = ap.parse_args()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="fex-helm-test-")
    try:
        helm = Helm(os.path.abspath(opts.helm), os.path.join(tmp, "helm-home"))
        server = os.path.abspath(opts.server)
        print(f"helm: {helm('version', '--short').stdout.strip()}; fex-server: {server}")

        help_text = run([server, "--help"]).stdout
        help_flags = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", help_text, re.M))
        help_env = set(re.findall(r"\[env: (FEX_[A-Z0-9_]+)=", help_text))
        T.check("fex-server --help lists its flags and FEX_* env vars", len(help_flags) > 5 and help_env, help_text)

        import kubernetes_validate.utils as kv

        chart = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))
        minimum = re.search(r"(\d+\.\d+)", chart["kubeVersion"]).group(1) + ".0"
        latest = kv.latest_version()
        supported = set(kv.all_versions())
        T.check(f"kubernetes-validate knows Kubernetes {latest} and the chart's minimum {minimum}",
                latest in supported and minimum in supported, sorted(supported))
        versions = [latest] if minimum == latest else [latest, minimum]

        value_sets = [("default", None)] + [
            (os.path.basename(p)[:-5], p)
            for p in sorted(glob.glob(os.path.join(VALUES_DIR, "*.yaml")))
            if not os.path.basename(p).startswith("bad")
        ] + [("example-triton", TRITON_VALUES)]
        values = check_values_file()
        check_lint_and_bad_values(helm, value_sets)
        check_template_failures(helm)
        check_checksum(helm, tmp)
        check_queue_time_only(helm)
        tls_files = make_tls(os.path.join(tmp, "pki"))

        rendered_flags = set()
        for label, path in value_sets:
            try:
                rendered_flags |= check_value_set(helm, server, label, path, versions, tmp, tls_files, help_flags, help_env)
            except Exception:
                T.check(f"[{label}] checks ran to the end", False, traceback.format_exc())

        check_triton_example(helm, versions, tmp)
        check_kserve_example(server, versions, tmp)
        check_flag_coverage(rendered_flags, help_flags)
        check_readme(help_flags, help_env)
        check_dockerfile(values, tmp)
    finally:
        for proc, _ in KAFKA_BROKERS.values():
            proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"(took {time.monotonic() - started:.1f}s)")
    print(f"{T.passed} passed, {T.failed} failed")
    sys.exit(1 if T.failed else 0)


if __name__ == "__main__":
    main()
