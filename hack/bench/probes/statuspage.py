#!/usr/bin/env python3
"""#46's status-page probe against `make dev` (after `. bin/dev/env`): 20 checks x 200 state changes
on one status page, then 200 anonymous clients that request it and never
read. Prints the page's size, and the manager's RSS before and while they
hang on."""
import json, os, socket, subprocess, sys, time, urllib.request

url = os.environ["VIGIL_URL"]
key = os.environ["VIGIL_API_KEY"]
ns = os.environ["VIGIL_NAMESPACE"]

def api(method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"{}")

def ping(u):
    with urllib.request.urlopen(urllib.request.Request(u, method="POST", data=b"")) as r:
        r.read()

def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

pid = int(subprocess.check_output(["pgrep", "-f", "vigil dev --assets"]).split()[0])
checks = []
for i in range(20):
    c = api("POST", "/api/v3/checks/", {"name": f"probe-{i}", "tags": "probe", "timeout": 86400, "grace": 3600, "unique": ["name"]})
    checks.append(c)
flaps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
t0 = time.time()
for c in checks:
    for _ in range(flaps):
        ping(c["ping_url"] + "/fail")
        ping(c["ping_url"])
print(f"{20*2*flaps} pings in {time.time()-t0:.0f} s")
sp = """apiVersion: monitoring.vigil.dev/v1alpha1
kind: StatusPage
metadata: {name: probe, namespace: %s}
spec: {title: Probe, tags: [probe]}
""" % ns
subprocess.run(["kubectl", "apply", "-f", "-"], input=sp.encode(), check=True, capture_output=True)
page = ""
for _ in range(100):
    out = subprocess.run(["kubectl", "-n", ns, "get", "statuspage", "probe", "-o", "jsonpath={.status.url}"], capture_output=True).stdout.decode()
    if out:
        page = out
        break
    time.sleep(0.2)
path = "/status/" + page.rsplit("/status/", 1)[1]
with urllib.request.urlopen(url + path) as r:
    body = r.read()
    print(f"page: {len(body)} bytes, {body.count(b'<rect')} shapes, Cache-Control: {r.headers.get('Cache-Control')}")
time.sleep(2)
before = rss(pid)
host, port = url.split("//")[1].split(":")
socks = []
for i in range(200):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    socks.append(s)
time.sleep(10)
during = rss(pid)
print(f"manager RSS: {before} MiB before, {during} MiB with 200 clients that never read")
for s in socks:
    s.close()
