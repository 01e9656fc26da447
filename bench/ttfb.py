"""Time to first byte of a streamed reply, over keep-alive connections, N times.

usage: python3 ttfb.py HOST:PORT PATH BODY N  → prints median and p99 in microseconds.
"""
import http.client, json, statistics, sys, time

host, port = sys.argv[1].split(":")
path, body, n = sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
conn = http.client.HTTPConnection(host, int(port))
samples = []
for i in range(n + 20):
    t0 = time.perf_counter()
    conn.request("POST", path, body, {"content-type": "application/json", "anthropic-version": "2023-06-01"})
    r = conn.getresponse()
    r.read1(1)  # the first byte of the body
    t1 = time.perf_counter()
    r.read()
    if i >= 20:  # warm-up excluded
        samples.append((t1 - t0) * 1e6)
samples.sort()
print(json.dumps({"median_us": round(statistics.median(samples)), "p99_us": round(samples[int(len(samples) * 0.99) - 1])}))
