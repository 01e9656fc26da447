"""Holds N concurrent streams open through the gateway and reports its resident memory
while they are all open. usage: python3 streams.py HOST:PORT PID N BODY"""
import asyncio, json, sys

host, port = sys.argv[1].split(":")
pid, n, body = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].encode()

def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

async def one(started, hold):
    r, w = await asyncio.open_connection(host, int(port))
    # A real Host: a gateway without keys answers only loopback names (docs/gateway.md).
    w.write(f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n".encode()
            + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
    await w.drain()
    await r.readuntil(b"\r\n\r\n")
    await r.read(1)
    started.append(1)
    await hold.wait()
    data = await r.read()
    w.close()
    return b"[DONE]" in data

async def main():
    started, hold = [], asyncio.Event()
    tasks = [asyncio.create_task(one(started, hold)) for _ in range(n)]
    while len(started) < n:
        await asyncio.sleep(0.05)
    peak = rss_mb()
    hold.set()
    done = await asyncio.gather(*tasks)
    print(json.dumps({"streams": n, "open_at_once": len(started), "rss_mb": round(peak, 1), "completed": sum(done)}))

asyncio.run(main())
