"""Hostile-client checks against a running exporter (stdlib only). Exit status 1 on failure."""
import socket
import sys
import threading
import time
import urllib.request

HOST, PORT = sys.argv[1], int(sys.argv[2])
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def scrape(path="/metrics", timeout=1.0):
    start = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://{HOST}:{PORT}{path}", timeout=timeout) as r:
            body = r.read()
            return r.status, r.headers.get("Content-Type"), body, time.monotonic() - start
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read(), time.monotonic() - start


def raw(request: bytes, timeout=5.0) -> bytes:
    with socket.create_connection((HOST, PORT), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except socket.timeout:
            pass
        return data


status, ctype, body, _ = scrape("/metrics")
check(status == 200 and ctype.startswith("text/plain; version=0.0.4"), f"/metrics 200 {ctype}")
status, ctype, body, _ = scrape("/")
check(status == 200 and b'href="/metrics"' in body and ctype.startswith("text/html"),
      "landing page links /metrics")
for path in ("/metricsx", "/debug/pprof", "/../etc/passwd"):
    status, ctype, _, _ = scrape(path)
    check(status == 404 and ctype is not None, f"{path} -> {status} with Content-Type")
reply = raw(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
check(reply.startswith(b"HTTP/1.1 405"), "POST /metrics -> 405")

# 1. A request line of 20,000 slashes.
reply = raw(b"GET " + b"/" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
check(reply.startswith(b"HTTP/1.1 4"), f"20,000 slashes -> {reply[:12]!r}")
reply = raw(b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
check(reply == b"" or reply.startswith(b"HTTP/1.1 4"), f"40,000-byte URL -> {reply[:12]!r}")

# 2. 200 idle connections held open, 3. a slowloris client dribbling header bytes.
idle = [socket.create_connection((HOST, PORT), timeout=5) for _ in range(200)]
stop = threading.Event()


def slowloris():
    try:
        s = socket.create_connection((HOST, PORT), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        while not stop.is_set():
            s.sendall(b"X-a: b\r\n")
            time.sleep(0.5)
    except OSError:
        pass  # the server closing us is fine


threads = [threading.Thread(target=slowloris) for _ in range(5)]
for t in threads:
    t.start()
time.sleep(0.5)
worst = 0.0
for i in range(5):
    status, _, body, elapsed = scrape(timeout=2.0)
    worst = max(worst, elapsed)
    check(status == 200 and b"nvmeof_exporter_build_info" in body, f"scrape {i} under load")
check(worst < 1.0, f"slowest scrape with 200 idle + slowloris: {worst * 1000:.0f} ms < 1000 ms")

# 4. Concurrent scrapes beyond --web.max-requests get 503 or 200, never an error or a hang.
results = []
def hammer():
    results.append(scrape(timeout=5.0)[0])
workers = [threading.Thread(target=hammer) for _ in range(16)]
for w in workers:
    w.start()
for w in workers:
    w.join()
check(all(r in (200, 503) for r in results) and 200 in results, f"16 parallel scrapes: {sorted(results)}")

stop.set()
for t in threads:
    t.join()
for s in idle:
    s.close()
status, _, _, elapsed = scrape()
check(status == 200, f"scrape after hostile clients left ({elapsed * 1000:.0f} ms)")
sys.exit(1 if failures else 0)
