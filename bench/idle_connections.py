"""Opens N kept-alive connections to the gateway, each after one request (as a client's
pool leaves them), reads the gateway's resident memory with all of them idle, closes them,
and reads it each second for WAIT seconds after. Prints one JSON object.
Before the idle figure, WARMUP calls are made over as many connections as the burst opens
at once (CONCURRENCY), then closed: the caches the calls fill and the upstream connections
that many calls at once open are then in the idle figure, not the burst's.
usage: python3 idle_connections.py HOST:PORT PID N BODY [WAIT [WARMUP]]"""
import asyncio, json, os, sys, time

host, port = sys.argv[1].split(":")
port = int(port)
pid, n, body = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].encode()
wait = int(sys.argv[5]) if len(sys.argv) > 5 else 60
warmup = int(sys.argv[6]) if len(sys.argv) > 6 else 0
CONCURRENCY = 64
# Connections come from several loopback addresses, so that back-to-back runs do not run
# out of ephemeral ports held in TIME_WAIT by the previous run's closed connections.
SOURCES = [f"127.0.0.{i}" for i in range(1, 9)] if host.startswith("127.") else [None]
REQUEST = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\n"
           f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body


def memory():
    """(VmRSS, RssAnon) of the gateway in KiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["RssAnon"]


async def call(i):
    """A connection that made one call and stays open, idle."""
    source = SOURCES[i % len(SOURCES)]
    r, w = await asyncio.open_connection(host, port, local_addr=(source, 0) if source else None)
    w.write(REQUEST)
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await r.readexactly(length)
    if status != 200:
        raise SystemExit(f"a call was answered {status}: {head!r}")
    return r, w


async def main():
    # Calls first, on connections closed after them: what the first calls allocate once
    # (pools, caches, the store's buffers) is in the idle figure, not the connections'.
    async def warm(i, calls):
        r, w = await call(i)
        for _ in range(calls - 1):
            w.write(REQUEST)
            head = await r.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await r.readexactly(length)
        w.close()
    per = max(warmup // CONCURRENCY, 1)
    await asyncio.gather(*(warm(i, per) for i in range(CONCURRENCY if warmup else 4)))
    await asyncio.sleep(3)
    idle = memory()
    idle_descriptors = len(os.listdir(f"/proc/{pid}/fd"))
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i):
        async with gate:
            return await call(i)

    started = time.monotonic()
    conns = await asyncio.gather(*(one(i) for i in range(n)))
    opened = time.monotonic() - started
    # Past the park delay (1 s) and the connections' next look at their clocks.
    await asyncio.sleep(3)
    held = memory()
    # Every connection still open at the gateway: one descriptor each.
    descriptors = len(os.listdir(f"/proc/{pid}/fd"))
    for _, w in conns:
        w.close()
    await asyncio.gather(*(w.wait_closed() for _, w in conns), return_exceptions=True)
    conns = None
    after, back_in = [], None
    for second in range(1, wait + 1):
        await asyncio.sleep(1)
        now = memory()
        after.append(now)
        if back_in is None and now[0] <= idle[0] * 1.10:
            back_in = second
    print(json.dumps({
        "connections": n,
        "warmup_calls": per * CONCURRENCY if warmup else 0,
        "open_seconds": round(opened, 1),
        "gateway_descriptors_added": descriptors - idle_descriptors,
        "idle_rss_kib": idle[0], "idle_anon_kib": idle[1],
        "held_rss_kib": held[0], "held_anon_kib": held[1],
        "per_connection_bytes": round((held[0] - idle[0]) * 1024 / n),
        "per_connection_anon_bytes": round((held[1] - idle[1]) * 1024 / n),
        "after_rss_kib": {s: after[s - 1][0] for s in sorted({1, 5, 10, 30, 60, wait}) if s <= wait},
        "after_anon_kib": {s: after[s - 1][1] for s in sorted({1, 5, 10, 30, 60, wait}) if s <= wait},
        "within_10_percent_after_seconds": back_in,
    }))


asyncio.run(main())
