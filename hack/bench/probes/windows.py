#!/usr/bin/env python3
"""#46's windows probe against `make dev` (after `. bin/dev/env`; the
argument is the vigil binary, for `vigil keys create`): namespace A has 300 recurring
windows of a schedule that rarely fires covering its check; while A's check
is pinged by 4 clients, namespace B's check is pinged one at a time. Prints
B's ping latency (p50, max) idle and under A's load."""
import json, os, subprocess, sys, threading, time, urllib.request, statistics

url = os.environ["VIGIL_URL"]
vigil = sys.argv[1]
def sh(*a, inp=None):
    return subprocess.run(a, input=inp, capture_output=True, check=True).stdout.decode()

def project(ns):
    sh("kubectl", "create", "namespace", ns)
    out = sh(vigil, "keys", "create", "-n", ns)
    key = [w for w in out.split() if w.startswith("hc")][0]
    return key

def api(key, method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"{}")

def ping(u):
    t = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(u, method="POST", data=b"")) as r:
        r.read()
    return (time.perf_counter() - t) * 1000

suffix = str(int(time.time()))[-5:]
A, B = "probe-a-" + suffix, "probe-b-" + suffix
ka, kb = project(A), project(B)
time.sleep(3)  # the manager reads the new project Secrets
a = api(ka, "POST", "/api/v3/checks/", {"name": "a", "tags": "rare", "timeout": 86400, "grace": 3600})
b = api(kb, "POST", "/api/v3/checks/", {"name": "b", "timeout": 86400, "grace": 3600})
windows = "".join(f"""---
apiVersion: monitoring.vigil.dev/v1alpha1
kind: MaintenanceWindow
metadata: {{name: rare-{i}, namespace: {A}}}
spec: {{tags: [rare], schedule: "Mon *-02-29 00:00:00", tz: Europe/Riga, duration: 1h}}
""" for i in range(300))
sh("kubectl", "apply", "-f", "-", inp=windows.encode())
time.sleep(15)  # the windows reconciled

def b_latency(n=100):
    return [ping(b["ping_url"]) for _ in range(n)]

idle = b_latency()
stop = False
def load():
    while not stop:
        ping(a["ping_url"])
threads = [threading.Thread(target=load) for _ in range(4)]
for t in threads: t.start()
time.sleep(1)
loaded = b_latency()
stop = True
for t in threads: t.join()
a_alone = [ping(a["ping_url"]) for _ in range(50)]
fmt = lambda xs: f"p50 {statistics.median(xs):.1f} ms, max {max(xs):.1f} ms"
print("B's pings idle:", fmt(idle))
print("B's pings while A's check is pinged by 4 clients:", fmt(loaded))
print("A's own pings, one at a time:", fmt(a_alone))
