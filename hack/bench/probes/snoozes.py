#!/usr/bin/env python3
"""#46's shared-client probe against `make dev` (after `. bin/dev/env`; the
argument is the vigil binary, for `vigil keys create`): namespace A has 128
checks, namespace B has 20; A snoozes all of its checks at once, 128
parallel requests, while B snoozes its checks one after another. Prints
B's snooze latency (p50, max) idle and during A's burst, and how A's
requests were answered (by status)."""
import collections, json, os, subprocess, sys, threading, time, urllib.error, urllib.request, statistics

url = os.environ["VIGIL_URL"]
vigil = sys.argv[1]
def sh(*a, inp=None):
    return subprocess.run(a, input=inp, capture_output=True, check=True).stdout.decode()

def project(ns):
    sh("kubectl", "create", "namespace", ns)
    out = sh(vigil, "keys", "create", "-n", ns)
    return [w for w in out.split() if w.startswith("hc")][0]

def api(key, method, path, body=None):
    """Returns (status, ms, parsed body)."""
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, data = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, data = e.code, e.read()
    return status, (time.perf_counter() - t) * 1000, json.loads(data or b"{}")

suffix = str(int(time.time()))[-5:]
A, B = "snooze-a-" + suffix, "snooze-b-" + suffix
ka, kb = project(A), project(B)
time.sleep(3)  # the manager reads the new project Secrets
def checks(ns, key, n):
    """n Checks applied with kubectl (the API's check limit is 20), by UUID."""
    sh("kubectl", "apply", "-f", "-", inp="".join(f"""---
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Check
metadata: {{name: c-{i}, namespace: {ns}}}
spec: {{timeout: 86400, grace: 3600}}
""" for i in range(n)).encode())
    while True:
        s, _, body = api(key, "GET", "/api/v3/checks/")
        uuids = [c["uuid"] for c in body.get("checks", []) if c.get("uuid")]
        if s == 200 and len(uuids) == n:
            return uuids
        time.sleep(1)
a_checks = checks(A, ka, 128)
b_checks = checks(B, kb, 20)

def b_snoozes():
    out = []
    for u in b_checks:
        s, ms, body = api(kb, "POST", f"/api/v3/checks/{u}/snooze", {"duration": 3600})
        assert s == 200, (s, body)
        out.append(ms)
    return out

idle = b_snoozes()
answers = collections.Counter()
start = threading.Event()
def a_snooze(u):
    start.wait()
    s, _, _ = api(ka, "POST", f"/api/v3/checks/{u}/snooze", {"duration": 7200})
    answers[s] += 1
threads = [threading.Thread(target=a_snooze, args=(u,)) for u in a_checks]
for t in threads: t.start()
start.set()
time.sleep(0.05)
loaded = b_snoozes()
for t in threads: t.join()
fmt = lambda xs: f"p50 {statistics.median(xs):.0f} ms, max {max(xs):.0f} ms"
print("B's snoozes, one at a time, idle:", fmt(idle))
print("B's snoozes during A's 128 parallel ones:", fmt(loaded))
print("A's answers:", dict(sorted(answers.items())))
